/**
 * Upgrades from the previous release (issue 22), with that release's own binary built from its
 * commit (scripts/previous-release.ts): this build opens a data dir the previous one wrote and
 * reads every record, header and committed offset back; the previous build still opens the dir
 * afterwards while the data format version is unchanged, and refuses, with a message naming the
 * file and both versions, a dir whose meta.properties records a newer one; and a three-broker
 * cluster of the previous release takes a rolling upgrade to this build under acks=all load
 * (acks throughout every broker's restart) with no error seen by the producer or the consumer
 * group and no acknowledged record lost.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { CompressionTypes, type Consumer, Kafka, type LogEntry, logLevel } from "kafkajs";
import { PREVIOUS_RELEASE, previousReleaseBinary } from "../../scripts/previous-release.ts";
import { DATA_FORMAT_VERSION } from "../../src/metadata/broker-id.ts";
import { VERSION } from "../../src/version.ts";
import {
  type Cluster,
  consistentMetadata,
  createTopic,
  runningBootstrap,
  startCluster,
} from "../broker/cluster-harness.ts";
import { kcatOk, stdoutText } from "../e2e/kcat-process.ts";
import { removeDir, tempDir } from "../support/broker-harness.ts";
import { ChildBroker } from "../support/child-broker.ts";
import { waitUntil } from "../support/wait-until.ts";
import { startZooKeeper, type ZooKeeperServer } from "../support/zookeeper-server.ts";
import {
  keepFailureEvidence,
  longestNoneListeningMs,
  startListenProbe,
  type TimedEvent,
} from "./listen-probe.ts";

/** The data format version the previous release writes and reads. */
const PREVIOUS_DATA_FORMAT_VERSION = 1;

let previous: { readonly executable: string };
let zkServer: ZooKeeperServer;

beforeAll(async () => {
  previous = { executable: previousReleaseBinary() };
  zkServer = await startZooKeeper();
}, 180_000);

afterAll(async () => {
  await zkServer?.stop();
});

/** A client; with `timeline`, its error logs go there with their times (for a failure). */
function kafkaFor(brokers: string[], timeline?: TimedEvent[]): Kafka {
  const logCreator = () => (entry: LogEntry) => {
    const { message, broker, error } = entry.log as Record<string, unknown>;
    const what = `kafkajs ${entry.namespace}: ${message} ${broker ?? ""} ${error ?? ""}`;
    timeline?.push({ atMs: Date.now(), what });
  };
  return new Kafka({
    clientId: "upgrade-test",
    brokers,
    logLevel: timeline === undefined ? logLevel.NOTHING : logLevel.ERROR,
    logCreator,
    // About two minutes of retries, as the Java producer's default delivery.timeout.ms: CI once
    // had a send give up after its ~17 s budget with ECONNREFUSED during the three restarts.
    retry: { retries: 120, initialRetryTime: 100, maxRetryTime: 1_000 },
  });
}

interface Seen {
  readonly partition: number;
  readonly offset: string;
  readonly key: string;
  readonly value: string;
  readonly header: string;
}

/**
 * Every record of `topic` from the beginning, read with kcat (no group, so no join to wait
 * for); read again until `expected` are there, since a restarted replica may still be behind.
 */
async function readAll(bootstrap: string, topic: string, expected: number): Promise<Seen[]> {
  let seen: Seen[] = [];
  const format = "%p\t%o\t%k\t%s\t%h\n";
  await waitUntil(
    async () => {
      const args = ["-C", "-t", topic, "-o", "beginning", "-e", "-q", "-f", format];
      const lines = stdoutText(await kcatOk(bootstrap, args)).split("\n");
      seen = lines
        .filter((line) => line !== "")
        .map((line) => {
          const [partition, offset, key, value, headers] = line.split("\t");
          const header = headers!.startsWith("h=") ? headers!.slice(2) : "";
          return {
            partition: Number(partition),
            offset: offset!,
            key: key!,
            value: value!,
            header,
          };
        });
      return seen.length >= expected;
    },
    60_000,
    `${expected} records of ${topic}`,
    250,
  );
  return seen.sort((a, b) => a.partition - b.partition || Number(a.offset) - Number(b.offset));
}

test("this build opens the previous release's data dir: records, headers, offsets", async () => {
  const dataDir = tempDir();
  try {
    let broker = await ChildBroker.start({ command: previous, dataDir });
    expect(broker.stderrText).toContain(`quill ${PREVIOUS_RELEASE.version}`);
    let kafka = kafkaFor([broker.bootstrap]);
    const admin = kafka.admin();
    await admin.connect();
    await admin.createTopics({ topics: [{ topic: "kept", numPartitions: 3 }] });
    await admin.disconnect();
    const producer = kafka.producer();
    await producer.connect();
    for (const compression of [CompressionTypes.None, CompressionTypes.GZIP]) {
      const messages = Array.from({ length: 150 }, (_, i) => ({
        key: `k${compression}-${i}`,
        value: `v${compression}-${i}`,
        headers: { h: `h${i}` },
      }));
      await producer.send({ topic: "kept", compression, messages, acks: -1 });
    }
    await producer.disconnect();
    const before = await readAll(broker.bootstrap, "kept", 300);
    const offsets = [0, 1, 2].map((partition) => ({ partition, offset: "7" }));
    const admin2 = kafka.admin();
    await admin2.connect();
    await admin2.setOffsets({ groupId: "kept-group", topic: "kept", partitions: offsets });
    await admin2.disconnect();
    expect(await broker.terminate()).toBe(0);

    broker = await broker.restart("binary");
    expect(broker.stderrText).toContain(`quill ${VERSION}`);
    kafka = kafkaFor([broker.bootstrap]);
    expect(await readAll(broker.bootstrap, "kept", 300)).toEqual(before);
    const admin3 = kafka.admin();
    await admin3.connect();
    const fetched = await admin3.fetchOffsets({ groupId: "kept-group", topics: ["kept"] });
    await admin3.disconnect();
    const committed = fetched[0]!.partitions.map((p) => ({
      partition: p.partition,
      offset: p.offset,
    }));
    expect(committed.sort((a, b) => a.partition - b.partition)).toEqual(
      [0, 1, 2].map((partition) => ({ partition, offset: "7" })),
    );
    expect(await broker.terminate()).toBe(0);

    // Back to the previous release: it reads what this build left as long as the format is its.
    if (DATA_FORMAT_VERSION === PREVIOUS_DATA_FORMAT_VERSION) {
      broker = await broker.restart(previous);
      expect(await readAll(broker.bootstrap, "kept", 300)).toEqual(before);
      expect(await broker.terminate()).toBe(0);
    } else {
      await expect(broker.restart(previous)).rejects.toThrow("written by a newer Quill");
    }
  } finally {
    removeDir(dataDir);
  }
}, 180_000);

/** Every file under `dir` with its size and modification time. */
function filesOf(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: "utf8" })
    .sort()
    .map((name) => {
      const stat = statSync(join(dir, name));
      return `${name} ${stat.isDirectory() ? "dir" : stat.size} ${stat.mtimeMs}`;
    });
}

test("the previous release refuses a data dir of a newer format, and leaves it", async () => {
  const dataDir = tempDir();
  const settings = { "zookeeper.connect": `${zkServer.connectString}/refusal`, "broker.id": "1" };
  try {
    const broker = await ChildBroker.start({ command: "binary", dataDir, settings });
    const kafka = kafkaFor([broker.bootstrap]);
    const producer = kafka.producer();
    await producer.connect();
    await producer.send({ topic: "kept", acks: -1, messages: [{ value: "a" }, { value: "b" }] });
    await producer.disconnect();
    expect(await broker.terminate()).toBe(0);
    // What a release with the next data format writes: the same file with the next version.
    const file = join(dataDir, "meta.properties");
    const key = "quill.data.format.version";
    const written = readFileSync(file, "utf8");
    expect(written).toContain(`\n${key}=${DATA_FORMAT_VERSION}\n`);
    const newer = DATA_FORMAT_VERSION + 1;
    writeFileSync(file, written.replace(`${key}=${DATA_FORMAT_VERSION}`, `${key}=${newer}`));
    const before = filesOf(dataDir);
    const argv = ["serve", "--listen", "127.0.0.1:0", "--data-dir", dataDir];
    for (const [k, v] of Object.entries(settings)) argv.push("--set", `${k}=${v}`);
    const refused = Bun.spawnSync([previous.executable, ...argv], {
      cwd: dataDir,
      stdout: "pipe",
      stderr: "pipe",
      timeout: 60_000,
    });
    const stderr = refused.stderr.toString();
    expect(stderr).toContain(`quill ${PREVIOUS_RELEASE.version}`);
    expect(stderr).toContain(
      `${file} records data format version ${newer}, written by a newer Quill; this binary ` +
        `reads up to version ${PREVIOUS_DATA_FORMAT_VERSION}: run the newer release on this ` +
        "data dir",
    );
    expect(stderr).not.toContain("listening on");
    expect(refused.exitCode).toBe(1);
    expect(filesOf(dataDir)).toEqual(before);
  } finally {
    removeDir(dataDir);
  }
}, 120_000);

/** Waits until every partition of `topic` has all three replicas in its ISR on every broker. */
async function fullIsr(cluster: Cluster, topic: string): Promise<void> {
  await waitUntil(
    async () => {
      const m = await consistentMetadata(cluster, 3, 30_000);
      const t = m.topics.find((x) => x.name === topic);
      return t?.partitions.every((p) => p.isrNodes.length === 3) === true;
    },
    60_000,
    `full ISR of ${topic}`,
    200,
  );
}

/**
 * acks=all batches of 20 records, one partition per send, until stop() resolves; each failed
 * send also goes to `timeline`.
 */
function startLoad(kafka: Kafka, topic: string, timeline: TimedEvent[]) {
  const acked: string[] = [];
  const errors: unknown[] = [];
  const producer = kafka.producer({ allowAutoTopicCreation: false, idempotent: true });
  let running = true;
  const sending = (async () => {
    await producer.connect();
    for (let batch = 0; running; batch++) {
      const values = Array.from({ length: 20 }, (_, i) => `r${batch}-${i}`);
      // One partition per send: kafkajs 2.2.4 does not resend the partitions of a failed
      // request whose new leader already answered for others in the same send, and resolves
      // the send as a success (sendMessages.js keeps one response per broker).
      const partition = batch % 3;
      try {
        await producer.send({
          topic,
          acks: -1,
          messages: values.map((value) => ({ value, partition })),
        });
        acked.push(...values);
      } catch (error) {
        errors.push(error);
        timeline.push({
          atMs: Date.now(),
          what: `send to partition ${partition} failed: ${error}`,
        });
      }
      await Bun.sleep(20);
    }
    await producer.disconnect();
  })();
  const stop = async () => {
    running = false;
    await sending;
  };
  return { acked, errors, stop };
}

/** A consumer group member collecting every value it reads; crashes go to `errors`. */
async function startGroupReader(
  kafka: Kafka,
  topic: string,
  errors: unknown[],
  timeline: TimedEvent[],
) {
  const consumed = new Set<string>();
  // kafkajs gives a consumer 5 retries (~2.5 s here) whatever the client's budget; Kafka's Java
  // consumer looks for its coordinator until it finds one. The previous release hashes groups
  // over the live brokers each broker knows, so a restarted broker took its groups back at once
  // and a consumer told so before its Metadata listed that broker crashed with "Broker 1 not
  // found in the cached metadata" within those 5 retries; this build keeps a group with the
  // leader of its __consumer_offsets partition, but old and new brokers disagree mid-upgrade.
  const retry = { retries: 120, initialRetryTime: 100, maxRetryTime: 1_000 };
  const consumer = kafka.consumer({ groupId: `${topic}-group`, sessionTimeout: 10_000, retry });
  consumer.on(consumer.events.CRASH, (event) => {
    errors.push(event.payload.error);
    const { error, restart } = event.payload;
    timeline.push({ atMs: Date.now(), what: `consumer crashed (restart ${restart}): ${error}` });
  });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  await consumer.run({
    eachMessage: async ({ message }) => {
      consumed.add(message.value!.toString());
    },
  });
  return { consumer, consumed };
}

/**
 * Replaces brokers 1, 2 and 3 one by one with this build, each time waiting for a full ISR;
 * resolves with the records acked while each broker was stopped, restarted and caught up.
 */
async function upgradeOneByOne(
  cluster: Cluster,
  timeline: TimedEvent[],
  processes: { id: number; broker: ChildBroker }[],
  acked: readonly string[],
): Promise<number[]> {
  const ackedPerStep: number[] = [];
  for (const id of [1, 2, 3]) {
    const ackedBefore = acked.length;
    const old = cluster.brokers.get(id)!;
    timeline.push({ atMs: Date.now(), what: `stopping broker ${id} (pid ${old.pid})` });
    expect(await old.terminate()).toBe(0);
    timeline.push({ atMs: Date.now(), what: `broker ${id} exited; starting this build` });
    const upgraded = await old.restart("binary");
    processes.push({ id, broker: upgraded });
    timeline.push({ atMs: Date.now(), what: `upgraded broker ${id} (pid ${upgraded.pid}) up` });
    expect(upgraded.stderrText).toContain(`quill ${VERSION}`);
    cluster.brokers.set(id, upgraded);
    await fullIsr(cluster, "rolling");
    ackedPerStep.push(acked.length - ackedBefore);
  }
  return ackedPerStep;
}

test("a rolling upgrade of three previous-release brokers under acks=all load", async () => {
  const cluster = await startCluster(
    `${zkServer.connectString}/upgrade`,
    { "min.insync.replicas": "2" },
    {},
    previous,
  );
  let consumer: Consumer | undefined;
  const processes = [...cluster.brokers].map(([id, broker]) => ({ id, broker }));
  const probe = startListenProbe(new Map([...cluster.brokers].map(([i, b]) => [i, b.bootstrap])));
  const timeline = probe.events;
  try {
    // Every broker registered and known to broker 1 first: under load the topic was once asked
    // of a broker that knew two, and replication factor 3 was refused (INVALID_REPLICATION_FACTOR).
    await consistentMetadata(cluster, 3, 60_000);
    await createTopic(cluster.brokers.get(1)!, "rolling", 3);
    await fullIsr(cluster, "rolling");
    const kafka = kafkaFor(
      [...cluster.brokers.values()].map((b) => b.bootstrap),
      timeline,
    );
    const load = startLoad(kafka, "rolling", timeline);
    const reader = await startGroupReader(kafka, "rolling", load.errors, timeline);
    consumer = reader.consumer;
    const { acked, errors } = load;
    const ackedPerStep = await upgradeOneByOne(cluster, timeline, processes, acked);
    // The load went on through each broker's upgrade, not only before and after it.
    expect(ackedPerStep.filter((n) => n === 0)).toEqual([]);
    const ackedAtEnd = acked.length;
    await waitUntil(() => acked.length >= ackedAtEnd + 200, 30_000, "load after the upgrade");
    await load.stop();
    const consumed = reader.consumed;
    await waitUntil(() => acked.every((v) => consumed.has(v)), 60_000, "every acked record read");
    expect(errors).toEqual([]);
    const everything = await readAll(runningBootstrap(cluster), "rolling", acked.length);
    const stored = new Set(everything.map((r) => r.value));
    expect(acked.filter((v) => !stored.has(v))).toEqual([]);
    expect(everything.length).toBe(stored.size);
  } catch (error) {
    await probe.stop();
    const kept = keepFailureEvidence(timeline, processes);
    const gapMs = longestNoneListeningMs(timeline);
    throw new Error(
      `${String(error)}\nlongest time no broker accepted connections: ${gapMs} ms; ` +
        `timeline, send errors and every broker's log kept in ${kept}`,
    );
  } finally {
    await probe.stop();
    await consumer?.disconnect().catch(() => {});
    await cluster.close();
  }
}, 240_000);
