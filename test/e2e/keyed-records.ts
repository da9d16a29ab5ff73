/**
 * The keyed workload shared by the kafkajs tests: values 0..count-1 under `keyCount` keys, sent
 * in batches, and the checks on what comes back: every value exactly once, each key in one
 * partition with its values in sending order, each partition's offsets dense from 0.
 */
import { expect } from "bun:test";
import type { Producer } from "kafkajs";

export interface KeyedRecord {
  readonly key: string;
  readonly partition: number;
  readonly offset: number;
  readonly value: number;
}

/** Sends values from..from+count-1 in batches, one batch at a time so per-key order holds. */
export async function produceKeyed(
  producer: Producer,
  topic: string,
  from: number,
  count: number,
  keyCount: number,
  batchSize: number,
): Promise<void> {
  for (let start = from; start < from + count; start += batchSize) {
    const size = Math.min(batchSize, from + count - start);
    const messages = Array.from({ length: size }, (_, i) => ({
      key: `key-${(start + i) % keyCount}`,
      value: String(start + i),
    }));
    await producer.send({ topic, acks: -1, messages });
  }
}

/** kcat `-f '%k %p %o %s\n'` output as records. */
export function parseKcatRows(text: string): KeyedRecord[] {
  return text
    .split("\n")
    .filter((line) => line !== "")
    .map((line) => {
      const [key, partition, offset, value] = line.split(" ") as [string, string, string, string];
      return { key, partition: Number(partition), offset: Number(offset), value: Number(value) };
    });
}

/**
 * Checks records of values from..from+count-1, listed in the order each partition returned them
 * (partitions may interleave): all present once, keys pinned and in order, offsets dense from
 * `firstOffsets[p]` (0 unless given). Returns the number of records per partition.
 */
export function checkKeyedRecords(
  records: readonly KeyedRecord[],
  from: number,
  count: number,
  keyCount: number,
  firstOffsets: readonly number[] = [],
): number[] {
  const seen = new Uint8Array(count);
  const partitionOfKey = new Map<string, number>();
  const lastValueOfKey = new Map<string, number>();
  const nextOffset: number[] = [];
  let misplaced = 0;
  let disorders = 0;
  let gaps = 0;
  for (const r of records) {
    seen[r.value - from] = (seen[r.value - from] ?? 0) + 1;
    if ((partitionOfKey.get(r.key) ?? r.partition) !== r.partition) misplaced++;
    partitionOfKey.set(r.key, r.partition);
    if (r.value <= (lastValueOfKey.get(r.key) ?? -1)) disorders++;
    lastValueOfKey.set(r.key, r.value);
    if (r.offset !== (nextOffset[r.partition] ?? firstOffsets[r.partition] ?? 0)) gaps++;
    nextOffset[r.partition] = r.offset + 1;
  }
  expect(records.length).toBe(count);
  expect(seen.every((n) => n === 1)).toBe(true);
  expect({ misplaced, disorders, gaps }).toEqual({ misplaced: 0, disorders: 0, gaps: 0 });
  expect(partitionOfKey.size).toBe(Math.min(keyCount, count));
  return nextOffset.map((next, p) => next - (firstOffsets[p] ?? 0));
}
