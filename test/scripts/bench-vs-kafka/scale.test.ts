import { afterAll, beforeAll, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { runCommand } from "../../../scripts/bench-common.ts";
import { createTopicsAndWait } from "../../../scripts/bench-vs-kafka/broker-probe.ts";
import { ratios } from "../../../scripts/bench-vs-kafka/report.ts";
import { buildFranzScale } from "../../../scripts/bench-vs-kafka/requirements.ts";
import {
  consumeFigures,
  franzConsumeFigures,
  partitionsThroughputKeys,
  type RdkafkaScaleConsumed,
  SCALE_WORKLOADS,
} from "../../../scripts/bench-vs-kafka/scale.ts";
import { buildRecordBatch } from "../../../src/protocol/record-batch.ts";
import { type InProcessBroker, startInProcessBroker } from "../../support/broker-harness.ts";
import { KafkaClient } from "../../support/kafka-client.ts";

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

const SCALE_DIR = join(import.meta.dir, "../../../scripts/bench-vs-kafka");

test("rdkafka-scale consume and franz-scale print every field the figures are read from", () => {
  const source = readFileSync(join(SCALE_DIR, "rdkafka-scale.c"), "utf8");
  const consume = source.slice(source.indexOf("static int consume("));
  const franz = readFileSync(join(SCALE_DIR, "franz-scale", "main.go"), "utf8");
  for (const key of Object.keys(consumed)) {
    expect(consume).toContain(`\\"${key}\\":`);
    expect(franz).toContain(`json:"${key}"`);
  }
  // Both clocks start at the assignment the rebalance callbacks record.
  expect(consume).toContain("ended - assigned_at");
  expect(franz).toContain("last.Sub(assigned)");
});

const franzPass = (seconds: number, cpuS: number): RdkafkaScaleConsumed => ({
  records: 500_000,
  seconds,
  assigned_seconds: 0.03,
  first_record_seconds: 0.03 + seconds / 2,
  after_first_seconds: seconds / 2,
  client_cpu_seconds: cpuS,
});

test("franz-go's group consume gives the median pass, its spread and its start", () => {
  const figures = franzConsumeFigures([franzPass(1, 0.3), franzPass(0.5, 0.4), franzPass(2, 0.5)]);
  expect(figures.franzConsumePerSecond).toBeCloseTo(500_000, 6);
  expect(figures.franzConsumeSpreadPercent).toBeCloseTo(((1_000_000 - 250_000) / 500_000) * 100);
  expect(figures.franzConsumePasses).toBe(3);
  expect(figures.franzFirstRecordAfterAssignedMs).toBeCloseTo(500, 6);
  expect(figures.franzConsumeClientCpuS).toBeCloseTo(0.4, 6);
  expect(() => franzConsumeFigures([])).toThrow("no pass");
});

test("scale= takes franz-go's consume at 10,000 partitions and not librdkafka's", () => {
  expect(partitionsThroughputKeys(10_000)).toEqual(["producePerSecond", "franzConsumePerSecond"]);
  expect(partitionsThroughputKeys(1_000)).toContain("consumePerSecond");
  expect(partitionsThroughputKeys(1_000)).toContain("franzConsumePerSecond");
  const workload = SCALE_WORKLOADS.find((w) => w.id === "partitions-10k")!;
  expect(workload.throughputKeys).toEqual(partitionsThroughputKeys(10_000));
  const run = (kind: "quill" | "kafka", produce: number, rdkafka: number, franz: number) => ({
    kind,
    workloadId: workload.id,
    figures: {
      producePerSecond: produce,
      consumePerSecond: rdkafka,
      franzConsumePerSecond: franz,
    },
    error: null,
    brokerCpuSeconds: 1,
  });
  const { scale } = ratios(
    [],
    [],
    [run("kafka", 100, 1_000, 400), run("quill", 400, 1, 100)],
    [workload],
  );
  // sqrt(4 * 0.25): the librdkafka consume ratio (0.001) stays out.
  expect(scale).toBeCloseTo(1, 9);
});

let broker: InProcessBroker;
beforeAll(async () => {
  broker = await startInProcessBroker();
});
afterAll(async () => {
  await broker.stop();
});

const haveGo = Bun.which("go") !== null;

test.skipIf(!haveGo)(
  "franz-scale reads every record of the matching topics in a group, timed from the assignment",
  async () => {
    const built = buildFranzScale();
    if ("error" in built) throw new Error(built.error);
    const topics = [0, 1, 2].map((i) => ({ name: `fs-t${i}`, partitions: 4 }));
    const other = { name: "fs-other", partitions: 1 };
    await createTopicsAndWait(broker.port, [...topics, other], performance.now() + 30_000);
    const value = new Uint8Array(100).fill(97);
    const records = buildRecordBatch(Array.from({ length: 10 }, () => ({ value })));
    const client = await KafkaClient.connect(broker.port);
    try {
      for (const topic of [...topics, other]) {
        const partitionData = Array.from({ length: topic.partitions }, (_, index) => ({
          index,
          records,
        }));
        const body = { transactionalId: null, acks: 1, timeoutMs: 10_000, topicData: [] };
        await client.request(0, 7, { ...body, topicData: [{ name: topic.name, partitionData }] });
      }
    } finally {
      client.close();
    }
    const out = await runCommand(
      [built.path, broker.bootstrap, "fs-t", "120", "franz-scale-test"],
      60_000,
    );
    const result = JSON.parse(out) as RdkafkaScaleConsumed & { bytes: number; failed: number };
    expect(result.records).toBe(120);
    expect(result.bytes).toBe(12_000);
    expect(result.failed).toBe(0);
    expect(result.assigned_seconds).toBeGreaterThanOrEqual(0);
    expect(result.first_record_seconds).toBeGreaterThanOrEqual(result.assigned_seconds);
    expect(result.seconds).toBeGreaterThan(0);
    expect(result.client_cpu_seconds).toBeGreaterThan(0);
  },
  90_000,
);
