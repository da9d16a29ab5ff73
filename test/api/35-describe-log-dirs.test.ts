/**
 * DescribeLogDirs on a broker with two log dirs (log.dirs=a,b): new partitions are spread over
 * the dirs with the fewest partitions, and Kafka 3.9's kafka-log-dirs.sh --describe
 * (org.apache.kafka.tools.LogDirsCommand, from Maven Central) lists each dir with its
 * partitions, sizes and lags.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { join } from "node:path";
import { Kafka, logLevel } from "kafkajs";
import { ensureKafkaDist } from "../../scripts/bench-vs-kafka/kafka-dist.ts";
import { ErrorCode } from "../../src/protocol/errors.ts";
import { ApiKey } from "../../src/protocol/generated/index.ts";
import {
  type InProcessBroker,
  removeDir,
  startInProcessBroker,
  tempDir,
} from "../support/broker-harness.ts";
import { KafkaClient } from "../support/kafka-client.ts";
import { runToolInJvm } from "../support/tool-jvm.ts";

let broker: InProcessBroker;
let root: string;
let dirs: string[];

beforeAll(async () => {
  root = tempDir("quill-log-dirs-");
  dirs = [join(root, "a"), join(root, "b")];
  broker = await startInProcessBroker({ dataDir: root, settings: { "log.dirs": dirs.join(",") } });
  const kafka = new Kafka({ brokers: [broker.bootstrap], logLevel: logLevel.NOTHING });
  const admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({ topics: [{ topic: "spread", numPartitions: 4 }] });
  await admin.disconnect();
  const producer = kafka.producer();
  await producer.connect();
  await producer.send({ topic: "spread", messages: [{ value: "x".repeat(100), partition: 2 }] });
  await producer.disconnect();
}, 60_000);

afterAll(async () => {
  await broker?.stop();
  removeDir(root);
});

interface Described {
  brokers: {
    broker: number;
    logDirs: {
      logDir: string;
      error: string | null;
      partitions: { partition: string; size: number; offsetLag: number; isFuture: boolean }[];
    }[];
  }[];
}

test("kafka-log-dirs.sh --describe lists both dirs, two partitions each, with sizes", async () => {
  const dist = await ensureKafkaDist();
  if ("missing" in dist) throw new Error(`Kafka's tools are not available: ${dist.missing}`);
  const tool = "org.apache.kafka.tools.LogDirsCommand";
  const args = ["--bootstrap-server", broker.bootstrap, "--describe"];
  const { code, stdout: out, stderr: err } = await runToolInJvm(dist.classpath, tool, args);
  expect(code, err).toBe(0);
  const json = JSON.parse(out.split("\n").find((l) => l.startsWith("{"))!) as Described;
  const logDirs = json.brokers[0]!.logDirs;
  expect(logDirs.map((d) => d.logDir).sort()).toEqual([...dirs].sort());
  for (const d of logDirs) {
    expect(d.error).toBeNull();
    expect(d.partitions.filter((p) => p.partition.startsWith("spread-")).length).toBe(2);
  }
  const all = logDirs.flatMap((d) => d.partitions);
  expect(all.find((p) => p.partition === "spread-2")!.size).toBeGreaterThan(100);
  expect(all.find((p) => p.partition === "spread-0")).toMatchObject({ size: 0, offsetLag: 0 });
}, 120_000);

test("v4 on the wire: only the partitions asked for, and each volume's bytes", async () => {
  const client = await KafkaClient.connect(broker.port);
  try {
    const res = await client.request(ApiKey.DescribeLogDirs, 4, {
      topics: [{ topic: "spread", partitions: [2, 9] }],
    });
    expect(res.errorCode).toBe(ErrorCode.NONE);
    const listed = res.results.flatMap((d) =>
      d.topics.flatMap((t) => t.partitions.map((p) => `${t.name}-${p.partitionIndex}`)),
    );
    expect(listed).toEqual(["spread-2"]);
    for (const d of res.results) {
      expect(d.totalBytes).toBeGreaterThan(0n);
      expect(d.usableBytes).toBeGreaterThan(0n);
    }
  } finally {
    client.close();
  }
});
