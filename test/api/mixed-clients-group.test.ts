// Two client implementations in one group: a kafkajs consumer (with kafkajs's round-robin
// assigner under librdkafka's protocol name "roundrobin", since a group needs one protocol every
// member supports) and two kcat -G consumers (librdkafka). Each of 6 partitions is assigned to
// exactly one member, and 600 records are consumed exactly once in total.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import type { Subprocess } from "bun";
import {
  AssignerProtocol,
  Kafka,
  logLevel,
  type PartitionAssigner,
  PartitionAssigners,
} from "kafkajs";
import { type InProcessBroker, startInProcessBroker } from "../support/broker-harness.ts";

const TOPIC = "mixed";
const GROUP = "mixed-group";
const PARTITIONS = 6;
const RECORDS = 600;

let broker: InProcessBroker;

beforeAll(async () => {
  broker = await startInProcessBroker({ settings: { "group.initial.rebalance.delay.ms": "300" } });
}, 60_000);
afterAll(async () => {
  await broker.stop();
});

/** kafkajs's round robin, announced as librdkafka's "roundrobin". */
const librdkafkaRoundRobin: PartitionAssigner = (config) => ({
  ...PartitionAssigners.roundRobin(config),
  name: "roundrobin",
});

function startKcat(name: string): { proc: Subprocess<"ignore", "pipe", "pipe">; lines: string[] } {
  const proc = Bun.spawn(
    [
      "kcat",
      "-b",
      broker.bootstrap,
      "-G",
      GROUP,
      TOPIC,
      "-X",
      "partition.assignment.strategy=roundrobin",
      "-X",
      "auto.offset.reset=earliest",
      "-X",
      "heartbeat.interval.ms=300",
      "-X",
      "fetch.wait.max.ms=100",
      "-q",
      "-u",
      "-f",
      `${name} %p %o\n`,
    ],
    { stdin: "ignore", stdout: "pipe", stderr: "pipe" },
  );
  const lines: string[] = [];
  void (async () => {
    let buffered = "";
    for await (const chunk of proc.stdout) {
      buffered += new TextDecoder().decode(chunk);
      const parts = buffered.split("\n");
      buffered = parts.pop()!;
      lines.push(...parts);
    }
  })();
  return { proc, lines };
}

async function waitFor(
  what: string,
  condition: () => boolean | Promise<boolean>,
  timeoutMs = 45_000,
) {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(100);
  }
}

describe("kafkajs and librdkafka in one group", () => {
  test("partitions split between both implementations, every record consumed once", async () => {
    const brokers = [broker.bootstrap];
    const kafka = new Kafka({ clientId: "mixed", brokers, logLevel: logLevel.NOTHING });
    const admin = kafka.admin();
    await admin.connect();
    await admin.createTopics({ topics: [{ topic: TOPIC, numPartitions: PARTITIONS }] });

    const seen: string[] = [];
    const consumer = kafka.consumer({
      groupId: GROUP,
      partitionAssigners: [librdkafkaRoundRobin],
      heartbeatInterval: 300,
    });
    await consumer.connect();
    await consumer.subscribe({ topic: TOPIC, fromBeginning: true });
    await consumer.run({
      eachMessage: async ({ partition, message }) => {
        seen.push(`kafkajs ${partition} ${message.offset}`);
      },
    });
    const kcats = [startKcat("kcat-1"), startKcat("kcat-2")];
    try {
      let owners: number[][] = [];
      await waitFor("a stable group of three that covers every partition once", async () => {
        const [group] = (await admin.describeGroups([GROUP])).groups;
        if (group!.state !== "Stable" || group!.members.length !== 3) return false;
        owners = group!.members.map(
          (m) =>
            AssignerProtocol.MemberAssignment.decode(m.memberAssignment)?.assignment[TOPIC] ?? [],
        );
        const all = [...Array(PARTITIONS).keys()].join();
        const everyPartitionOnce = owners.flat().sort().join() === all;
        return everyPartitionOnce && owners.every((o) => o.length > 0);
      });
      const [group] = (await admin.describeGroups([GROUP])).groups;
      expect(group!.protocol).toBe("roundrobin");
      expect(new Set(group!.members.map((m) => m.clientId)).size).toBe(2);

      const producer = kafka.producer();
      await producer.connect();
      const messages = Array.from({ length: RECORDS }, (_, i) => ({
        partition: i % PARTITIONS,
        value: `${i}`,
      }));
      await producer.send({ topic: TOPIC, messages });
      await producer.disconnect();
      const all = () => [...seen, ...kcats.flatMap((k) => k.lines)];
      await waitFor("600 records", () => all().length >= RECORDS);
      await Bun.sleep(500);
      const records = all().map((line) => line.split(" ").slice(1).join(":"));
      expect(records.length).toBe(RECORDS);
      expect(new Set(records).size).toBe(RECORDS);
      // Both implementations did part of the work.
      expect(seen.length).toBeGreaterThan(0);
      expect(kcats.some((k) => k.lines.length > 0)).toBe(true);
    } finally {
      for (const k of kcats) k.proc.kill("SIGKILL");
      await consumer.disconnect();
      await admin.disconnect();
    }
  }, 90_000);
});
