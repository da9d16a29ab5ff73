// Online upgrade and downgrade of a running group with real clients: two Kafka 3.9 Java
// consumers (classic protocol) are rolled one by one to Kafka 4.4 consumers with
// group.protocol=consumer and back, under a producer. The group is never empty; it becomes a
// consumer group when the first KIP-848 member joins and a classic group again when the last
// one leaves; every record is read, and none twice unless a commit failed.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { join } from "node:path";
import { Kafka, logLevel, type Producer } from "kafkajs";
import { ensureMavenPackage } from "../../scripts/maven-project.ts";
import {
  type InProcessBroker,
  REPO_ROOT,
  startInProcessBroker,
} from "../support/broker-harness.ts";
import {
  ensureJava4Built,
  Java4Process,
  java4Command,
  javaCommand,
} from "../support/java4-client.ts";
import { waitUntil } from "../support/wait-until.ts";

const JAVA39_DIR = join(REPO_ROOT, "test", "compat", "java");
const TOPIC = "rolling";
const GROUP = "g-rolling";
const MAIN = "quill.compat.RollingMember";

let broker: InProcessBroker;
let producer: Producer;
const all: Java4Process[] = [];

beforeAll(async () => {
  ensureMavenPackage(JAVA39_DIR);
  ensureJava4Built("FailoverConsumer");
  broker = await startInProcessBroker({
    settings: {
      "group.consumer.heartbeat.interval.ms": "300",
      "group.initial.rebalance.delay.ms": "0",
    },
  });
  const kafka = new Kafka({ brokers: [broker.bootstrap], logLevel: logLevel.NOTHING });
  const admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({ topics: [{ topic: TOPIC, numPartitions: 4 }] });
  await admin.disconnect();
  producer = kafka.producer();
  await producer.connect();
}, 300_000);

afterAll(async () => {
  for (const p of all) p.kill();
  await producer?.disconnect();
  await broker?.stop();
});

/** Starts a member: the 3.9 client (classic) or the 4.4 client with group.protocol=consumer. */
async function start(protocol: "classic" | "consumer", name: string): Promise<Java4Process> {
  const args = [broker.bootstrap, TOPIC, GROUP, protocol, name];
  const command =
    protocol === "classic" ? javaCommand(JAVA39_DIR, MAIN, args) : java4Command(MAIN, args);
  const member = new Java4Process(name, args, command);
  all.push(member);
  await waitUntil(
    () => member.lines.some((l) => /^ASSIGNED \[.+\]$/.test(l)),
    60_000,
    `${name} assigned partitions`,
  );
  return member;
}

async function stop(member: Java4Process): Promise<void> {
  member.send("stop");
  expect(await member.exited).toBe(0);
  expect(member.lines.at(-1)).toBe("OK");
}

/** The group as the coordinator holds it: its type and how many members of each protocol. */
function group() {
  const coordinator = broker.broker.services.groupCoordinator;
  const consumer = coordinator.consumerGroup(GROUP);
  if (consumer === null) {
    const view = coordinator.groupViews().find((g) => g.groupId === GROUP);
    return { type: "classic", classic: view?.members.length ?? 0, consumer: 0 };
  }
  const members = [...consumer.members.values()];
  const classic = members.filter((m) => m.classic !== null).length;
  return { type: "consumer", classic, consumer: members.length - classic };
}

test("a running group rolls from classic to KIP-848 members and back", async () => {
  let produced = 0;
  let producing = true;
  const sending = (async () => {
    while (producing) {
      const messages = Array.from({ length: 20 }, (_, i) => ({ value: `v${produced + i}` }));
      await producer.send({ topic: TOPIC, messages });
      produced += messages.length;
      await Bun.sleep(50);
    }
  })();
  const steps: string[] = [];
  const record = () => steps.push(JSON.stringify(group()));

  const c0 = await start("classic", "c0");
  const c1 = await start("classic", "c1");
  record();
  // Upgrade: c0 becomes a KIP-848 member; the group is a consumer group with c1 classic in it.
  await stop(c0);
  const k0 = await start("consumer", "k0");
  expect(group()).toEqual({ type: "consumer", classic: 1, consumer: 1 });
  record();
  await stop(c1);
  const k1 = await start("consumer", "k1");
  expect(group()).toEqual({ type: "consumer", classic: 0, consumer: 2 });
  record();
  // Downgrade: k0 rolls back (a classic member in the consumer group), then k1: when it
  // leaves, the group is a classic group of the classic members.
  await stop(k0);
  const d0 = await start("classic", "d0");
  expect(group()).toEqual({ type: "consumer", classic: 1, consumer: 1 });
  record();
  await stop(k1);
  const d1 = await start("classic", "d1");
  expect(group()).toEqual({ type: "classic", classic: 2, consumer: 0 });
  record();

  producing = false;
  await sending;
  const members = [c0, c1, k0, k1, d0, d1];
  const reads = () => members.flatMap((m) => m.lines.filter((l) => l.startsWith("R ")));
  await waitUntil(() => new Set(reads()).size >= produced, 60_000, "every record read");
  await Promise.all([stop(d0), stop(d1)]);
  const values = reads();
  const distinct = new Set(values);
  for (let i = 0; i < produced; i++) expect(distinct.has(`R v${i}`)).toBe(true);
  const uncommitted = members.flatMap((m) =>
    m.lines.filter((l) => l.startsWith("COMMITFAIL") || l.startsWith("LOST")),
  );
  console.log(
    `group-migration: ${produced} records, ${values.length - distinct.size} read twice, ` +
      `${uncommitted.length} failed commits or lost partitions; steps ${steps.join(" ")}`,
    uncommitted.join("\n"),
  );
  // At-least-once with a commit after every poll and on revocation: a record is read again
  // only when a commit failed or partitions were lost.
  if (uncommitted.length === 0) expect(values.length).toBe(distinct.size);
}, 240_000);
