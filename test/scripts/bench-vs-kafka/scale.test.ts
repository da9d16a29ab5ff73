import { expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import {
  consumeFigures,
  type RdkafkaScaleConsumed,
} from "../../../scripts/bench-vs-kafka/scale.ts";

// One run of the 10,000-partition group consume on Quill (docs/scaling.md): the client's own
// start-up on the assigned partitions lasted until after the first record.
const consumed: RdkafkaScaleConsumed = {
  records: 500_000,
  seconds: 16.625 + 1.45,
  assigned_seconds: 0.027,
  first_record_seconds: 1.477,
  after_first_seconds: 16.625,
  client_cpu_seconds: 10.12,
};

test("the group consume's throughput counts from the assignment, not the first record", () => {
  const figures = consumeFigures(consumed);
  expect(figures.consumePerSecond).toBeCloseTo(500_000 / 18.075, 3);
  expect(figures.consumeAfterFirstRecordPerSecond).toBeCloseTo(500_000 / 16.625, 3);
  expect(figures.groupAssignedMs).toBeCloseTo(27, 6);
  expect(figures.groupFirstRecordMs).toBeCloseTo(1_477, 6);
  expect(figures.consumeClientCpuS).toBe(10.12);
});

test("rdkafka-scale consume prints every field the figures are read from", () => {
  const source = readFileSync(
    join(import.meta.dir, "../../../scripts/bench-vs-kafka/rdkafka-scale.c"),
    "utf8",
  );
  const consume = source.slice(source.indexOf("static int consume("));
  for (const key of Object.keys(consumed)) expect(consume).toContain(`\\"${key}\\":`);
  // The clock starts at the assignment the rebalance callback records.
  expect(consume).toContain("ended - assigned_at");
});
