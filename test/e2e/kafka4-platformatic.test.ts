// @platformatic/kafka's KIP-848 consumer (groupProtocol "consumer"), in this process: member a
// joins and owns every partition, b joins and the partitions are split without overlap, both
// read every record once and commit, b leaves and a owns them all again, and a later member
// reads only what was produced after the commits. ConsumerGroupDescribe, which answers only for
// a consumer-protocol group, shows the two members and the uniform assignor.
import { afterAll, beforeAll, expect, test } from "bun:test";
import {
  Admin,
  Consumer,
  type Message,
  type MessagesStream,
  Producer,
  stringDeserializers,
  stringSerializers,
} from "@platformatic/kafka";
import { ErrorCode } from "../../src/protocol/errors.ts";
import { ApiKey } from "../../src/protocol/generated/index.ts";
import { type InProcessBroker, startInProcessBroker } from "../support/broker-harness.ts";
import { requestOnce } from "../support/kafka-client.ts";
import { waitUntil } from "../support/wait-until.ts";

const TOPIC = "kip848-platformatic";
const GROUP = "g-platformatic";
const PARTITIONS = 4;
const WAIT_MS = 60_000;

type StringMessage = Message<string, string, string, string>;

let broker: InProcessBroker;

beforeAll(async () => {
  // A short heartbeat interval: members hear of a rebalance within half a second.
  broker = await startInProcessBroker({
    settings: { "group.consumer.heartbeat.interval.ms": "300" },
  });
}, 60_000);

afterAll(async () => {
  await broker?.stop();
});

interface Member {
  readonly consumer: Consumer<string, string, string, string>;
  readonly stream: MessagesStream<string, string, string, string>;
  /** The last message per partition, whose commit() commits everything before it. */
  readonly last: Map<number, StringMessage>;
}

async function join(name: string, seen: Map<string, string>): Promise<Member> {
  const consumer = new Consumer({
    clientId: name,
    bootstrapBrokers: [broker.bootstrap],
    groupId: GROUP,
    groupProtocol: "consumer",
    deserializers: stringDeserializers,
  });
  const stream = await consumer.consume({
    topics: [TOPIC],
    mode: "committed",
    fallbackMode: "earliest",
    autocommit: false,
  });
  const member: Member = { consumer, stream, last: new Map() };
  stream.on("data", (message: StringMessage) => {
    const where = `${message.partition}@${message.offset}`;
    const before = seen.get(message.value);
    if (before !== undefined && before !== where) {
      throw new Error(`${message.value} read at ${before} and ${where}`);
    }
    seen.set(message.value, where);
    member.last.set(message.partition, message);
  });
  return member;
}

function owned(member: Member): number[] {
  const assignment = member.consumer.assignments?.find((a) => a.topic === TOPIC);
  return [...(assignment?.partitions ?? [])].sort();
}

async function produce(from: number, count: number): Promise<void> {
  const producer = new Producer({
    clientId: "producer",
    bootstrapBrokers: [broker.bootstrap],
    serializers: stringSerializers,
  });
  try {
    const messages = Array.from({ length: count }, (_, i) => ({
      topic: TOPIC,
      partition: (from + i) % PARTITIONS,
      key: "k",
      value: `v-${from + i}`,
    }));
    await producer.send({ messages });
  } finally {
    await producer.close();
  }
}

async function leave(member: Member): Promise<void> {
  for (const message of member.last.values()) await message.commit();
  await member.stream.close();
  await member.consumer.close();
}

test("KIP-848 consumers: join, split, leave, commit, resume", async () => {
  const admin = new Admin({ clientId: "admin", bootstrapBrokers: [broker.bootstrap] });
  await admin.createTopics({ topics: [TOPIC], partitions: PARTITIONS });
  await admin.close();
  const seen = new Map<string, string>();
  const a = await join("a", seen);
  await waitUntil(() => owned(a).length === PARTITIONS, WAIT_MS, "a owns every partition");
  const b = await join("b", seen);
  const split = () => {
    const both = new Set([...owned(a), ...owned(b)]);
    return owned(a).length === 2 && owned(b).length === 2 && both.size === PARTITIONS;
  };
  await waitUntil(split, WAIT_MS, "a and b split the partitions");
  const described = await requestOnce(broker.port, ApiKey.ConsumerGroupDescribe, 0, {
    groupIds: [GROUP],
    includeAuthorizedOperations: false,
  });
  const group = described.groups[0];
  expect(group?.errorCode).toBe(ErrorCode.NONE);
  expect(group?.members.length).toBe(2);
  expect(group?.assignorName).toBe("uniform");

  await produce(0, 40);
  await waitUntil(() => seen.size === 40, WAIT_MS, "every record read");
  await leave(b);
  await waitUntil(() => owned(a).length === PARTITIONS, WAIT_MS, "a owns all again");
  await leave(a);

  await produce(40, 12);
  const later = new Map<string, string>();
  const c = await join("c", later);
  await waitUntil(() => later.size === 12, WAIT_MS, "c reads the new records");
  await Bun.sleep(300); // anything redelivered arrives now, and the check sees it
  await leave(c);
  expect([...later.keys()].sort()).toEqual(
    Array.from({ length: 12 }, (_, i) => `v-${40 + i}`).sort(),
  );
}, 120_000);
