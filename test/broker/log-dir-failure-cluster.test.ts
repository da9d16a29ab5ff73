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
import { ApiKey, type MetadataResponse } from "../../src/protocol/generated/index.ts";
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
import { kafkaClasspath, LOG_DIRS, runKafkaTool, TOPICS } from "./kafka-tool.ts";

const mountPoint = tempDir("quill-jbod-tmpfs-");
const mounted =
  Bun.spawnSync(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", mountPoint]).exitCode === 0;
if (!mounted) {
  console.warn("\n!!! log dir failure test SKIPPED: cannot mount a tmpfs (needs root) !!!\n");
}

let zkServer: ZooKeeperServer;
/** The partition whose broker-1 replica is in the failing dir (set by the first test). */
let failing = -1;
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

async function produce(topic: string, partition: number, brokerId = 1) {
  const records = buildRecordBatch([{ value: new TextEncoder().encode("x".repeat(1000)) }]);
  const response = await requestOnce(brokers.get(brokerId)!.port, ApiKey.Produce, 9, {
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

function offlineOf(m: MetadataResponse, topic: string, partition: number): string {
  const t = m.topics.find((x) => x.name === topic);
  const p = t?.partitions.find((x) => x.partitionIndex === partition);
  return p === undefined ? "unknown" : p.offlineReplicas.join(",");
}

/**
 * Every broker's Metadata names broker 1's replica of `failing` offline (UpdateMetadata's
 * offlineReplicas), `healthy` has none, and kafka-topics.sh shows it out of the ISR.
 */
async function expectOfflineReplica(failing: number, healthy: number, leader: number) {
  await until(
    async () => {
      const answers = await Promise.all([...brokers.values()].map((b) => metadata(b)));
      return answers.every((m) => offlineOf(m, "jbod", failing) === "1") ? true : undefined;
    },
    30_000,
    "every broker lists broker 1's replica as offline",
  );
  expect(offlineOf(await metadata(brokers.get(1)!), "jbod", healthy)).toBe("");
  const described = await describeTopic("jbod");
  expect(described).toContain(`Partition: ${failing}\tLeader: ${leader}\t`);
  expect(described).toMatch(new RegExp(`Partition: ${failing}.*Isr: [23],[23]\\t`));
  const under = await describeTopic("jbod", "--under-replicated-partitions");
  expect(under).toContain(`Partition: ${failing}\t`);
  expect(under).not.toContain(`Partition: ${healthy}\t`);
}

/** kafka-topics.sh --describe of one topic, as the tool prints it. */
async function describeTopic(topic: string, ...flags: string[]): Promise<string> {
  const run = await runKafkaTool(TOPICS, [
    "--bootstrap-server",
    brokers.get(2)!.bootstrap,
    "--describe",
    "--topic",
    topic,
    ...flags,
  ]);
  expect(run.code).toBe(0);
  return run.stdout;
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
    failing = Number(inFailing[0]!.split("-").at(-1));
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
    await expectOfflineReplica(failing, healthy, moved.leaderId);
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

/** Waits until every broker's Metadata shows `check` true of the partition. */
async function untilEveryBroker(
  partition: number,
  check: (p: MetadataResponse["topics"][number]["partitions"][number]) => boolean,
  what: string,
) {
  await until(
    async () => {
      const answers = await Promise.all([...brokers.values()].map((b) => metadata(b)));
      const ok = answers.every((m) => {
        const p = m.topics.find((t) => t.name === "jbod")?.partitions[partition];
        return p !== undefined && check(p);
      });
      return ok ? true : undefined;
    },
    60_000,
    what,
  );
}

test.skipIf(!mounted)(
  "a broker restarted with its dir still dead serves the rest; repaired, its replicas rejoin",
  async () => {
    expect(failing).toBeGreaterThanOrEqual(0);
    const healthy = 1 - failing;
    // The disk stays dead across a restart: read-only, and still full.
    await brokers.get(1)!.kill9();
    const ro = Bun.spawnSync(["mount", "-o", "remount,ro", mountPoint]);
    expect(ro.exitCode).toBe(0);
    brokers.set(1, await brokers.get(1)!.restart());
    const one = brokers.get(1)!;
    await until(
      async () => (one.stderrText.includes(`log dir ${failingDir} failed`) ? true : undefined),
      30_000,
      "broker 1 to find its dead dir at start",
    );
    // It registered and serves the partition in its healthy dir, back in that ISR.
    await untilEveryBroker(healthy, (p) => p.isrNodes.length === 3, "broker 1 back in the ISR");
    const healthyLeader = (await partitionState("jbod", healthy))!.leaderId;
    expect(await produce("jbod", healthy, healthyLeader)).toBe(ErrorCode.NONE);
    // Its replica in the dead dir answered KAFKA_STORAGE_ERROR to LeaderAndIsr: offline
    // everywhere, led elsewhere, out of the ISR.
    await untilEveryBroker(
      failing,
      (p) => p.offlineReplicas.join(",") === "1" && p.leaderId !== 1 && !p.isrNodes.includes(1),
      "broker 1's replica in the dead dir offline",
    );
    const controllerLog = [...brokers.values()].map((b) => b.stderrText).join("\n");
    expect(controllerLog).toContain("replicas on broker 1 offline: their log dir failed");
    const leader = (await partitionState("jbod", failing))!.leaderId;
    for (let i = 0; i < 20; i++) expect(await produce("jbod", failing, leader)).toBe(0);

    // The disk is repaired (space made, writable again) and the broker restarted: its replica
    // loads, catches up and rejoins the ISR; nothing is offline any more.
    await brokers.get(1)!.kill9();
    expect(Bun.spawnSync(["mount", "-o", "remount,rw", mountPoint]).exitCode).toBe(0);
    fs.rmSync(`${mountPoint}/filler`);
    brokers.set(1, await brokers.get(1)!.restart());
    await untilEveryBroker(
      failing,
      (p) => p.isrNodes.length === 3 && p.offlineReplicas.length === 0,
      "broker 1's repaired replica back in the ISR",
    );
    expect(brokers.get(1)!.stderrText).not.toContain(`log dir ${failingDir} failed`);
    const dirs = await describeLogDirs();
    const repaired = dirs.find((d) => d.logDir === failingDir)!;
    expect(repaired.error).toBeNull();
    expect(repaired.partitions.map((p) => p.partition)).toEqual([`jbod-${failing}`]);
  },
  240_000,
);
