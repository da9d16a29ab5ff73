/**
 * A failing log dir (KIP-112) on three brokers with a real ZooKeeper: broker 1 has two log
 * dirs, one of them a tiny tmpfs that is filled up under the running broker (a real ENOSPC).
 * Only the partition in that dir goes offline there: produce answers KAFKA_STORAGE_ERROR, the
 * controller (told through /log_dir_event_notification) moves its leadership and takes broker 1
 * out of its ISR, while broker 1 keeps serving the partition in its healthy dir. Kafka 3.9's
 * `kafka-log-dirs.sh --describe` reports the dir's KafkaStorageException. Needs root (mount).
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import * as fs from "node:fs";
import { ErrorCode } from "../../src/protocol/errors.ts";
import { ApiKey } from "../../src/protocol/generated/index.ts";
import { buildRecordBatch } from "../../src/protocol/record-batch.ts";
import { removeDir, tempDir } from "../support/broker-harness.ts";
import { ChildBroker } from "../support/child-broker.ts";
import { requestOnce } from "../support/kafka-client.ts";
import { startZooKeeper, type ZooKeeperServer } from "../support/zookeeper-server.ts";
import {
  consistentMetadata,
  createTopicWithAssignment,
  metadata,
  SESSION_TIMEOUT_MS,
  until,
} from "./cluster-harness.ts";
import { kafkaClasspath, LOG_DIRS, runKafkaTool } from "./kafka-tool.ts";

const mountPoint = tempDir("quill-jbod-tmpfs-");
const mounted =
  Bun.spawnSync(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", mountPoint]).exitCode === 0;
if (!mounted) {
  console.warn("\n!!! log dir failure test SKIPPED: cannot mount a tmpfs (needs root) !!!\n");
}

let zkServer: ZooKeeperServer;
const brokers = new Map<number, ChildBroker>();
const dataDir = tempDir("quill-jbod-");
const healthyDir = `${dataDir}/healthy`;
const failingDir = `${mountPoint}/failing`;

beforeAll(async () => {
  if (!mounted) return;
  zkServer = await startZooKeeper();
  const settings = (id: number) => ({
    "zookeeper.connect": `${zkServer.connectString}/jbod`,
    "zookeeper.session.timeout.ms": String(SESSION_TIMEOUT_MS),
    "broker.id": String(id),
    "auto.leader.rebalance.enable": "false",
  });
  const [one, ...rest] = await Promise.all([
    ChildBroker.start({
      dataDir,
      settings: { ...settings(1), "log.dirs": `${healthyDir},${failingDir}` },
    }),
    ChildBroker.start({ settings: settings(2) }),
    ChildBroker.start({ settings: settings(3) }),
    kafkaClasspath(),
  ]);
  brokers.set(1, one as ChildBroker);
  brokers.set(2, rest[0] as ChildBroker);
  brokers.set(3, rest[1] as ChildBroker);
  await consistentMetadata({ brokers } as never, 3);
}, 240_000);

afterAll(async () => {
  await Promise.all([...brokers.values()].map((b) => b.remove()));
  await zkServer?.stop();
  if (mounted) Bun.spawnSync(["umount", "-l", mountPoint]);
  removeDir(mountPoint);
  removeDir(dataDir);
}, 60_000);

async function produce(topic: string, partition: number) {
  const records = buildRecordBatch([{ value: new TextEncoder().encode("x".repeat(1000)) }]);
  const response = await requestOnce(brokers.get(1)!.port, ApiKey.Produce, 9, {
    transactionalId: null,
    acks: 1,
    timeoutMs: 5_000,
    topicData: [{ name: topic, partitionData: [{ index: partition, records }] }],
  });
  return response.responses[0]!.partitionResponses[0]!.errorCode;
}

async function partitionState(topic: string, partition: number) {
  const t = (await metadata(brokers.get(2)!)).topics.find((x) => x.name === topic);
  return t?.partitions.find((p) => p.partitionIndex === partition);
}

/** kafka-log-dirs.sh --describe for broker 1: its dirs as the tool prints them (JSON). */
async function describeLogDirs() {
  const run = await runKafkaTool(LOG_DIRS, [
    "--bootstrap-server",
    brokers.get(1)!.bootstrap,
    "--describe",
    "--broker-list",
    "1",
  ]);
  expect(run.code).toBe(0);
  const line = run.stdout.split("\n").find((l) => l.startsWith("{"))!;
  const json = JSON.parse(line) as {
    brokers: {
      broker: number;
      logDirs: { logDir: string; error: string | null; partitions: { partition: string }[] }[];
    }[];
  };
  return json.brokers[0]!.logDirs;
}

test.skipIf(!mounted)(
  "a full log dir takes only its partitions offline; the rest serve on",
  async () => {
    await createTopicWithAssignment(brokers.get(1)!, "jbod", [
      [1, 2, 3],
      [1, 2, 3],
    ]);
    await until(
      async () => ((await partitionState("jbod", 1))?.isrNodes.length === 3 ? true : undefined),
      30_000,
      "both partitions fully replicated",
    );
    // New logs go to the dir with the fewest: one partition in each.
    const before = await describeLogDirs();
    const inFailing = before
      .find((d) => d.logDir === failingDir)!
      .partitions.map((p) => p.partition);
    const inHealthy = before
      .find((d) => d.logDir === healthyDir)!
      .partitions.map((p) => p.partition);
    expect(inFailing.length).toBe(1);
    expect(inHealthy.length).toBe(1);
    const failing = Number(inFailing[0]!.split("-").at(-1));
    const healthy = 1 - failing;
    expect(await produce("jbod", failing)).toBe(ErrorCode.NONE);

    // The tmpfs fills up: the next append to the partition there hits ENOSPC.
    fs.writeFileSync(`${mountPoint}/filler`, new Uint8Array(0));
    Bun.spawnSync(["dd", "if=/dev/zero", `of=${mountPoint}/filler`, "bs=64k", "count=1000"]);
    // The segment's last page may still have room for a record or two.
    let code: number = ErrorCode.NONE;
    for (let i = 0; i < 10 && code === ErrorCode.NONE; i++) code = await produce("jbod", failing);
    expect(code).toBe(ErrorCode.KAFKA_STORAGE_ERROR);
    // The dir is offline now, not merely full: the partition stays refused.
    expect(await produce("jbod", failing)).toBe(ErrorCode.KAFKA_STORAGE_ERROR);

    const moved = await until(
      async () => {
        const p = await partitionState("jbod", failing);
        return p !== undefined && p.leaderId !== 1 && !p.isrNodes.includes(1) ? p : undefined;
      },
      30_000,
      "leadership of the failed partition moves off broker 1",
    );
    expect([2, 3]).toContain(moved.leaderId);
    // Broker 1 still leads and serves the partition in its healthy dir, with its whole ISR.
    const kept = await partitionState("jbod", healthy);
    expect(kept?.leaderId).toBe(1);
    expect(kept?.isrNodes.length).toBe(3);
    expect(await produce("jbod", healthy)).toBe(ErrorCode.NONE);
    expect(brokers.get(1)!.running).toBe(true);

    const after = await describeLogDirs();
    const failed = after.find((d) => d.logDir === failingDir)!;
    expect(failed.error).toContain("KafkaStorageException");
    expect(failed.partitions).toEqual([]);
    expect(after.find((d) => d.logDir === healthyDir)!.error).toBeNull();
    expect(brokers.get(1)!.stderrText).toContain(`log dir ${failingDir} failed`);
  },
  180_000,
);
