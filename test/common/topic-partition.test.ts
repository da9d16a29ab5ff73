import { expect, test } from "bun:test";
import { topicPartitionKey, topicPartitionOf } from "../../src/common/topic-partition.ts";

test("equal partitions give equal keys, and a key gives its partition back", () => {
  expect(topicPartitionKey("orders", 3)).toBe(topicPartitionKey("orders", 3));
  expect(topicPartitionKey("orders", 3)).not.toBe(topicPartitionKey("orders", 30));
  expect(topicPartitionKey("orders-1", 0)).not.toBe(topicPartitionKey("orders", 10));
  const partitions = [
    { topic: "a.b_c-d", partition: 0 },
    { topic: "t", partition: 2_147_483_647 },
    { topic: "x\u0000y", partition: 12 },
  ];
  for (const { topic, partition } of partitions) {
    expect(topicPartitionOf(topicPartitionKey(topic, partition))).toEqual({ topic, partition });
  }
});

test("a map keyed by TopicPartitionKey finds a partition by a key made elsewhere", () => {
  const leaders = new Map([
    [topicPartitionKey("t", 0), 1],
    [topicPartitionKey("t", 1), 2],
  ]);
  expect(leaders.get(topicPartitionKey("t", 1))).toBe(2);
  expect([...leaders.keys()].map(topicPartitionOf)).toEqual([
    { topic: "t", partition: 0 },
    { topic: "t", partition: 1 },
  ]);
});
