import { expect, test } from "bun:test";
import { TopicPartitionTable } from "../../src/common/topic-partition-table.ts";

test("values are found by topic and partition, and a deleted one is gone", () => {
  const table = new TopicPartitionTable<string>();
  table.set("orders", 0, "a");
  table.set("orders", 7, "b");
  table.set("orders-7", 0, "c");
  expect(table.get("orders", 0)).toBe("a");
  expect(table.get("orders", 7)).toBe("b");
  expect(table.get("orders-7", 0)).toBe("c");
  expect(table.get("orders", 1)).toBeUndefined();
  expect(table.get("orders", -1)).toBeUndefined();
  expect(table.get("orders", 2 ** 31 - 1)).toBeUndefined();
  expect(table.get("other", 0)).toBeUndefined();
  table.set("orders", 7, "b2");
  expect(table.get("orders", 7)).toBe("b2");
  table.delete("orders", 7);
  table.delete("orders", 7);
  expect(table.get("orders", 7)).toBeUndefined();
  expect(table.get("orders", 0)).toBe("a");
});

test("a topic whose last partition is deleted leaves no entry, and comes back empty", () => {
  const table = new TopicPartitionTable<number>();
  table.set("t", 3, 1);
  table.delete("t", 3);
  table.set("t", 0, 2);
  expect(table.get("t", 3)).toBeUndefined();
  expect(table.get("t", 0)).toBe(2);
  expect(() => table.set("t", -1, 0)).toThrow(RangeError);
  expect(() => table.set("t", 1.5, 0)).toThrow(RangeError);
});
