import { expect, test } from "bun:test";
import { SnapshotFold } from "../../src/util/snapshot-fold.ts";

function fold(source: Map<string, number>, stopped = () => false) {
  const events: string[] = [];
  const f = new SnapshotFold(source, (key, value) => `${key}=${value}`, {
    sliceMs: 0,
    stopped,
    onEncoded: () => events.push("encoded"),
    onFailed: (error) => events.push(`failed: ${String(error)}`),
  });
  return { f, events };
}

test("a key changed or removed during the walk is encoded again, or dropped, when it finishes", async () => {
  const source = new Map([
    ["a", 1],
    ["b", 2],
    ["c", 3],
  ]);
  const { f, events } = fold(source);
  // The walk gives the loop a turn after every key (sliceMs 0): the store writes meanwhile.
  source.set("a", 10);
  f.markDirty("a");
  source.delete("b");
  f.markDirty("b");
  source.set("d", 4);
  f.markDirty("d");
  await f.encoding;
  expect(events).toEqual(["encoded"]);
  let written: string[] = [];
  await f.finish(async (parts) => {
    written = [...parts];
  });
  expect(written.sort()).toEqual(["a=10", "c=3", "d=4"]);
});

test("the state may not change while the fold finishes", async () => {
  const { f } = fold(new Map([["a", 1]]));
  await f.encoding;
  await expect(
    f.finish(async () => {
      f.markDirty("a");
    }),
  ).rejects.toThrow("a changed while a fold finishes");
  // Finished (failed), it takes changes again.
  f.markDirty("a");
});

test("a store that closes during the walk stops the fold: never encoded", async () => {
  let closed = false;
  const { f, events } = fold(
    new Map([
      ["a", 1],
      ["b", 2],
    ]),
    () => closed,
  );
  closed = true;
  await f.encoding;
  expect(f.encoded).toBe(false);
  expect(events).toEqual([]);
});
