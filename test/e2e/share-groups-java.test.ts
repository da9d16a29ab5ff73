// Share groups (KIP-932) with the Kafka 4.4 Java KafkaShareConsumer (test/compat/java4,
// ShareConsumers.java), several members on one partition: every record accepted exactly once,
// RELEASE redelivers, REJECT archives, the delivery count limit archives a poison record, a
// member killed with kill -9 has its records come back to another member at once (its
// connection closed, so its share session ended, as in Kafka), long before their locks expire,
// and RENEW
// (KafkaShareConsumer.acknowledge(record, RENEW), KIP-1222) keeps records a member's past their
// lock. Kafka 4.4's kafka-share-groups.sh (ShareGroupCommand, test/compat/tools4) lists,
// describes, resets and deletes (a new member of a deleted group's id starts afresh).
import { afterAll, beforeAll, expect, test } from "bun:test";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { Kafka, logLevel } from "kafkajs";
import { ErrorCode } from "../../src/protocol/errors.ts";
import { ApiKey } from "../../src/protocol/generated/index.ts";
import {
  type InProcessBroker,
  REPO_ROOT,
  startInProcessBroker,
} from "../support/broker-harness.ts";
import { ensureJava4Built, java4Command, runJava4 } from "../support/java4-client.ts";
import { acquiredRecords, KafkaClient, shareFetchPartition0 } from "../support/kafka-client.ts";
import { runToolInJvm } from "../support/tool-jvm.ts";

const TOOLS_DIR = join(REPO_ROOT, "test", "compat", "tools4");
const LOCK_MS = 2_000;
const DELIVERY_LIMIT = 3;

let broker: InProcessBroker;

const run = (args: string[]) => runJava4("quill.compat4.ShareConsumers", args);

/** kafka-share-groups.sh: Kafka's script runs this class with the tools' classpath. */
async function shareGroupsTool(args: string[]): Promise<string> {
  const classpath = readFileSync(join(TOOLS_DIR, "target", "classpath.txt"), "utf8").trim();
  const tool = "org.apache.kafka.tools.consumer.group.ShareGroupCommand";
  const logLevel = "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn";
  const {
    code,
    stdout: out,
    stderr: err,
  } = await runToolInJvm(
    classpath,
    tool,
    ["--bootstrap-server", broker.bootstrap, ...args],
    [logLevel],
  );
  if (code !== 0) console.log(out, err);
  expect(code).toBe(0);
  return out;
}

function mavenBuild(dir: string, marker: string, goals: string[]): void {
  if (existsSync(join(dir, "target", marker))) return;
  const mvn = Bun.spawnSync(
    ["mvn", "-q", ...goals, "dependency:build-classpath", "-Dmdep.outputFile=target/classpath.txt"],
    { cwd: dir, stderr: "pipe", stdout: "pipe" },
  );
  if (mvn.exitCode !== 0) throw new Error(`mvn failed: ${mvn.stdout}${mvn.stderr}`);
}

beforeAll(async () => {
  // Shared with kafka4-java.test.ts: built when its sources changed, under a lock.
  ensureJava4Built("ShareConsumers");
  mavenBuild(TOOLS_DIR, "classpath.txt", []);
  broker = await startInProcessBroker({
    settings: {
      "group.share.heartbeat.interval.ms": "300",
      "group.share.record.lock.duration.ms": String(LOCK_MS),
      "group.share.delivery.count.limit": String(DELIVERY_LIMIT),
    },
  });
}, 300_000);

afterAll(async () => {
  await broker?.stop();
});

test("three share consumers on one partition get every record exactly once", async () => {
  const lines = await run(["exactly", broker.bootstrap, "share-exactly", "g-exactly", "3", "300"]);
  expect(lines).toContain("distinct 300 duplicates 0");
  expect(lines).toContain("described Stable members 3");
  // More than one member did work: the partition is shared, not owned.
  const busy = lines.filter((l) => /^member \d got [1-9]/.test(l));
  expect(busy.length).toBeGreaterThan(1);
  // Every record accepted: the group's start offset is past them all, nothing is left.
  expect(await shareGroupsTool(["--list"])).toContain("g-exactly");
  const described = await shareGroupsTool(["--describe", "--group", "g-exactly"]);
  expect(described).toMatch(/g-exactly\s+share-exactly\s+0\s+300\s+0\n/);
  const reset = ["--reset-offsets", "--group", "g-exactly", "--topic", "share-exactly"];
  await shareGroupsTool([...reset, "--to-offset", "100", "--execute"]);
  const shares = broker.broker.services.sharePartitionManager;
  expect(shares.sharePartition("g-exactly", "share-exactly", 0)!.startOffset).toBe(100n);
  // The Kafka 4.4 client negotiated the newest versions (KIP-1222's v2), never v1.
  const versions = broker.broker.services.metrics.requestVersionCounts();
  for (const key of [ApiKey.ShareFetch, ApiKey.ShareAcknowledge]) {
    expect(versions.filter(([k]) => k === key).map(([, v]) => v)).toEqual([2]);
  }
}, 90_000);

test("kafka-share-groups.sh --delete: a new member of the id starts afresh, not at the old state", async () => {
  const topic = "share-delete";
  const group = "g-delete";
  const lines = await run(["exactly", broker.bootstrap, topic, group, "1", "20"]);
  expect(lines).toContain("distinct 20 duplicates 0");
  const reset = ["--reset-offsets", "--group", group, "--topic", topic];
  await shareGroupsTool([...reset, "--to-offset", "5", "--execute"]);
  const shares = broker.broker.services.sharePartitionManager;
  expect(shares.sharePartition(group, topic, 0)!.startOffset).toBe(5n);

  const deleted = await shareGroupsTool(["--delete", "--group", group]);
  expect(deleted).toContain(`Deletion of requested share groups ('${group}') was successful.`);
  expect(shares.sharePartition(group, topic, 0)).toBeUndefined();
  expect(await shareGroupsTool(["--list"])).not.toContain(group);

  const client = await KafkaClient.connect(broker.port);
  try {
    const meta = await client.request(ApiKey.Metadata, 12, {
      topics: [{ name: topic }],
      allowAutoTopicCreation: false,
      includeTopicAuthorizedOperations: false,
    });
    const topicId = meta.topics[0]!.topicId;
    const deleteGroups = async (groupId: string) =>
      (await client.request(ApiKey.DeleteGroups, 2, { groupsNames: [groupId] })).results[0]!
        .errorCode;
    const joined = await client.request(ApiKey.ShareGroupHeartbeat, 1, {
      groupId: group,
      memberId: "afresh",
      memberEpoch: 0,
      subscribedTopicNames: [topic],
    });
    expect(joined.errorCode).toBe(ErrorCode.NONE);
    const fetch = async (epoch: number) => {
      const maxWaitMs = epoch === 0 ? 0 : 5_000;
      const res = await shareFetchPartition0(client, {
        groupId: group,
        memberId: "afresh",
        topicId,
        epoch,
        maxWaitMs,
      });
      expect(res.errorCode).toBe(ErrorCode.NONE);
      return acquiredRecords(res);
    };
    // share.auto.offset.reset=latest: the log end, not the deleted state's 5-19.
    expect(await fetch(0)).toEqual([]);
    const kafka = new Kafka({ brokers: [broker.bootstrap], logLevel: logLevel.NOTHING });
    const producer = kafka.producer();
    await producer.connect();
    await producer.send({ topic, messages: [{ value: "20" }, { value: "21" }] });
    await producer.disconnect();
    expect(await fetch(1)).toEqual([{ firstOffset: 20n, lastOffset: 21n, deliveryCount: 1 }]);

    // With a member the group is not deleted; an id no group has is not found.
    expect(await deleteGroups(group)).toBe(ErrorCode.NON_EMPTY_GROUP);
    expect(shares.sharePartition(group, topic, 0)).toBeDefined();
    expect(await deleteGroups("g-delete-never")).toBe(ErrorCode.GROUP_ID_NOT_FOUND);
  } finally {
    client.close();
  }
}, 90_000);

test("RELEASE redelivers, REJECT archives, the delivery limit archives a poison record", async () => {
  const lines = await run(["acks", broker.bootstrap, "share-acks", "g-acks", `${DELIVERY_LIMIT}`]);
  expect(lines).toContain(`deliveries {poison=${DELIVERY_LIMIT}, r0=2, r1=1, r2=1, r3=1, r4=1}`);
}, 90_000);

test("RENEW keeps records past their lock; no other member gets them", async () => {
  const holdMs = 3 * LOCK_MS;
  const started = Date.now();
  const lines = await run(["renew", broker.bootstrap, "share-renew", "g-renew", `${holdMs}`]);
  expect(lines).toContain("counts {w0=1, w1=1, w2=1, w3=1, w4=1}");
  expect(lines).toContain("other {}");
  expect(Date.now() - started).toBeGreaterThanOrEqual(holdMs);
}, 90_000);

test("a member killed with kill -9: its records go to another member at once, not after the lock", async () => {
  // A lock far longer than the test waits: only the end of the holder's session frees them.
  const killLockMs = 60_000;
  const admin = await KafkaClient.connect(broker.port);
  const altered = await admin.request(ApiKey.IncrementalAlterConfigs, 1, {
    resources: [
      {
        resourceType: 32,
        resourceName: "g-kill",
        configs: [
          { name: "share.record.lock.duration.ms", configOperation: 0, value: `${killLockMs}` },
        ],
      },
    ],
  });
  admin.close();
  expect(altered.responses[0]!.errorCode).toBe(ErrorCode.NONE);
  const holder = Bun.spawn(
    java4Command("quill.compat4.ShareConsumers", [
      "hold",
      broker.bootstrap,
      "share-kill",
      "g-kill",
    ]),
    {
      stdout: "pipe",
      stderr: "pipe",
    },
  );
  const reader = holder.stdout.getReader();
  let out = "";
  while (!out.includes("held 5")) {
    const { value, done } = await reader.read();
    if (done) break;
    out += new TextDecoder().decode(value);
  }
  if (!out.includes("held 5")) console.log(out, await new Response(holder.stderr).text());
  expect(out).toContain("held 5");
  holder.kill("SIGKILL");
  await holder.exited;
  const killedAt = Date.now();
  const lines = await run(["takeover", broker.bootstrap, "share-kill", "g-kill", "5"]);
  const took = lines.filter((l) => l.startsWith("took "));
  expect(took.sort()).toEqual([0, 1, 2, 3, 4].map((i) => `took h${i} count 2`));
  // Released when the holder's connection closed, not when its locks would have expired.
  expect(Date.now() - killedAt).toBeLessThan(killLockMs / 2);
}, 90_000);
