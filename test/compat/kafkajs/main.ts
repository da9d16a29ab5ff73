/**
 * The compatibility scenario with kafkajs, written as an ordinary kafkajs user would: default
 * producer, consumer.run with eachMessage, admin for topics, groups and offsets. kafkajs has no
 * zstd codec built in (it needs a third-party plugin), so that step is not applicable.
 * scripts/compat.ts bundles this file for Node and runs it there, the runtime kafkajs users have.
 */
import { createRequire } from "node:module";
import {
  type Admin,
  AssignerProtocol,
  CompressionTypes,
  type Consumer,
  Kafka,
  type KafkaMessage,
  logLevel,
  type Producer,
} from "kafkajs";
import {
  CONSUME_TIMEOUT_MS,
  type ConsumedRecord,
  check,
  checkAssignments,
  checkSeen,
  describeError,
  env,
  isSentinel,
  PARTITION_COUNT,
  RECORDS_PER_CODEC,
  RESTART_TIMEOUT_MS,
  recordsFor,
  SENTINEL_COUNT,
  StepRunner,
  sleep,
  TXN_END_OFFSET,
  TXN_INPUT_END,
  TXN_RECORDS,
  TXN_WAIT_MS,
  txnGroup,
  txnTopic,
  txnValues,
  verifyConsumed,
  waitFor,
} from "../support/scenario.ts";

const SEND_CHUNK_RECORDS = 1000;
const VERSION: string = createRequire(import.meta.url)("kafkajs/package.json").version;

const kafka = new Kafka({
  clientId: "quill-compat-kafkajs",
  brokers: [env.bootstrap],
  logLevel: logLevel.WARN,
  // kafkajs logs to stdout by default; stdout carries the step lines, so logs go to stderr.
  logCreator: () => (entry) => console.error(JSON.stringify(entry.log)),
});

interface Member {
  readonly consumer: Consumer;
  readonly records: ConsumedRecord[];
  /** Next offset to commit per partition, from the last record this member processed. */
  readonly nextOffsets: Map<number, string>;
  joined: boolean;
  /** Set when kafkajs reports the consumer crashed, so a wait fails at once with the reason. */
  crash?: string;
}

function toConsumed(member: number, partition: number, message: KafkaMessage): ConsumedRecord {
  const headers = Object.entries(message.headers ?? {}).map(
    ([name, value]) => [name, String(value)] as const,
  );
  return {
    member,
    partition,
    key: message.key?.toString() ?? null,
    value: message.value?.toString() ?? null,
    headers,
  };
}

async function startMember(index: number): Promise<Member> {
  const consumer = kafka.consumer({ groupId: env.group });
  const member: Member = { consumer, records: [], nextOffsets: new Map(), joined: false };
  consumer.on(consumer.events.GROUP_JOIN, () => {
    member.joined = true;
  });
  consumer.on(consumer.events.CRASH, (event) => {
    member.crash ??= describeError(event.payload.error);
  });
  await consumer.connect();
  await consumer.subscribe({ topic: env.topic, fromBeginning: true });
  await consumer.run({
    autoCommit: false,
    eachMessage: async ({ partition, message }) => {
      member.records.push(toConsumed(index, partition, message));
      member.nextOffsets.set(partition, (BigInt(message.offset) + 1n).toString());
    },
  });
  return member;
}

async function produce(producer: Producer, codec: "gzip"): Promise<string> {
  const records = recordsFor(codec);
  for (let first = 0; first < records.length; first += SEND_CHUNK_RECORDS) {
    await producer.send({
      topic: env.topic,
      compression: CompressionTypes.GZIP,
      messages: records.slice(first, first + SEND_CHUNK_RECORDS).map((record) => ({
        key: record.key,
        value: record.value,
        headers: Object.fromEntries(record.headers),
      })),
    });
  }
  return `${records.length} records`;
}

/** Throws the first consumer crash, so waits on a crashed group end with its reason. */
function throwIfCrashed(members: readonly Member[]): void {
  const crashed = members.find((member) => member.crash);
  if (crashed) throw new Error(`consumer crashed: ${crashed.crash}`);
}

async function highWatermarks(admin: Admin): Promise<Map<number, string>> {
  const offsets = await admin.fetchTopicOffsets(env.topic);
  return new Map(offsets.map((offset) => [offset.partition, offset.high]));
}

/** A read_committed member of the transactions' group, keeping what it read, never committing. */
interface TxnReader {
  readonly consumer: Consumer;
  readonly values: string[];
  readonly offsets: string[];
}

async function startTxnReader(): Promise<TxnReader> {
  const consumer = kafka.consumer({ groupId: txnGroup(), readUncommitted: false });
  const reader: TxnReader = { consumer, values: [], offsets: [] };
  await consumer.connect();
  await consumer.subscribe({ topic: txnTopic(), fromBeginning: true });
  await consumer.run({
    autoCommit: false,
    eachMessage: async ({ message }) => {
      reader.values.push(message.value?.toString() ?? "");
      reader.offsets.push(message.offset);
    },
  });
  return reader;
}

function transactionalProducer(id: string): Producer {
  return kafka.producer({ transactionalId: `${env.topic}-${id}`, maxInFlightRequests: 1 });
}

/** The scenario's steps; each method is one step and throws to fail it. */
class Scenario {
  private producedCount = 0;
  private members: Member[] = [];
  private txnReader: TxnReader | undefined;

  constructor(
    private readonly admin: Admin,
    private readonly producer: Producer,
  ) {}

  private records(): ConsumedRecord[] {
    return this.members.flatMap((member) => member.records);
  }

  async createTopic(): Promise<void> {
    const created = await this.admin.createTopics({
      topics: [{ topic: env.topic, numPartitions: PARTITION_COUNT }],
      waitForLeaders: true,
    });
    check(created, "createTopics returned false");
    const metadata = await this.admin.fetchTopicMetadata({ topics: [env.topic] });
    const partitions = metadata.topics[0]?.partitions.length;
    check(partitions === PARTITION_COUNT, `topic has ${partitions} partitions`);
  }

  async produceGzip(): Promise<string> {
    const detail = await produce(this.producer, "gzip");
    this.producedCount += RECORDS_PER_CODEC;
    return detail;
  }

  async consumeGroup(): Promise<string> {
    this.members = await Promise.all([startMember(0), startMember(1)]);
    await waitFor("10,000 records", CONSUME_TIMEOUT_MS, () => {
      throwIfCrashed(this.members);
      return this.records().length >= RECORDS_PER_CODEC;
    });
    await sleep(500); // Anything delivered twice arrives now, and the check sees it.
    const problems = verifyConsumed(this.records(), ["gzip"]);
    check(problems.length === 0, problems.join("; "));
    return this.members.map((member, i) => `member ${i}: ${member.records.length}`).join(", ");
  }

  async commit(): Promise<void> {
    for (const { consumer, nextOffsets } of this.members) {
      const offsets = [...nextOffsets].map(([partition, offset]) => ({
        topic: env.topic,
        partition,
        offset,
      }));
      await consumer.commitOffsets(offsets);
    }
    const [committed] = await this.admin.fetchOffsets({ groupId: env.group, topics: [env.topic] });
    const high = await highWatermarks(this.admin);
    for (const { partition, offset } of committed?.partitions ?? []) {
      const end = high.get(partition);
      check(offset === end, `partition ${partition}: committed ${offset}, end ${end}`);
    }
    check(committed?.partitions.length === PARTITION_COUNT, "not every partition has a commit");
  }

  async restart(): Promise<void> {
    await this.stopMembers();
    this.members = await Promise.all([startMember(0), startMember(1)]);
    await waitFor("both members to join", RESTART_TIMEOUT_MS, () => {
      throwIfCrashed(this.members);
      return this.members.every((member) => member.joined);
    });
    await this.producer.send({
      topic: env.topic,
      messages: Array.from({ length: SENTINEL_COUNT }, (_, partition) => ({
        key: `sentinel-${partition}`,
        value: "sentinel",
        partition,
      })),
    });
    this.producedCount += SENTINEL_COUNT;
    const sentinels = () => this.records().filter(isSentinel).length;
    await waitFor("the sentinels", RESTART_TIMEOUT_MS, () => sentinels() >= SENTINEL_COUNT);
    const again = this.records().filter((record) => !isSentinel(record)).length;
    check(again === 0, `${again} records delivered again after the restart`);
  }

  async describeGroup(): Promise<string> {
    const { groups } = await this.admin.describeGroups([env.group]);
    const group = groups[0];
    check(group?.state === "Stable", `group state ${group?.state}`);
    check(group.members.length === 2, `${group.members.length} members`);
    check(group.protocolType === "consumer", `protocol type ${group.protocolType}`);
    const listed = await this.admin.listGroups();
    const found = listed.groups.some((g) => g.groupId === env.group);
    check(found, "listGroups does not show the group");
    const assigned = checkAssignments(
      group.members.map(
        (member) =>
          AssignerProtocol.MemberAssignment.decode(member.memberAssignment)?.assignment[
            env.topic
          ] ?? [],
      ),
    );
    return `${group.state}, ${group.protocol}, partitions ${assigned}`;
  }

  async listOffsets(): Promise<string> {
    const offsets = await this.admin.fetchTopicOffsets(env.topic);
    check(offsets.length === PARTITION_COUNT, `${offsets.length} partitions`);
    check(
      offsets.every((o) => o.low === "0"),
      `earliest ${offsets.map((o) => o.low)}`,
    );
    const latest = offsets.reduce((sum, o) => sum + Number(o.high), 0);
    const produced = this.producedCount;
    check(latest === produced, `latest offsets add up to ${latest}, produced ${produced}`);
    return `earliest 0, latest ${offsets.map((o) => o.high).join("/")}`;
  }

  async transactions(): Promise<string> {
    await this.admin.createTopics({
      topics: [{ topic: txnTopic(), numPartitions: 1 }],
      waitForLeaders: true,
    });
    const producer = transactionalProducer("txn");
    await producer.connect();
    try {
      for (const [prefix, commit] of [
        ["aborted", false],
        ["committed", true],
      ] as const) {
        const transaction = await producer.transaction();
        const messages = txnValues(prefix).map((value) => ({ value, partition: 0 }));
        await transaction.send({ topic: txnTopic(), messages });
        await (commit ? transaction.commit() : transaction.abort());
      }
    } finally {
      await producer.disconnect();
    }
    const reader = (this.txnReader = await startTxnReader());
    await waitFor("the committed records", TXN_WAIT_MS, () => reader.values.length >= TXN_RECORDS);
    await sleep(200); // An aborted record delivered late arrives now, and the check sees it.
    checkSeen("after commit and abort", reader.values, txnValues("committed"));
    const [end] = await this.admin.fetchTopicOffsets(txnTopic());
    check(end?.high === String(TXN_END_OFFSET), `end offset ${end?.high}, not ${TXN_END_OFFSET}`);
    return `${TXN_RECORDS} committed seen, ${TXN_RECORDS} aborted not, end offset ${end.high}`;
  }

  /** Transforms what the reader read, its offset sent to the transaction (sendOffsets). */
  async consumeTransformProduce(): Promise<string> {
    const reader = this.txnReader;
    check(reader !== undefined, "no reader from the transactions step");
    const next = (BigInt(reader.offsets[TXN_RECORDS - 1] ?? "-1") + 1n).toString();
    const producer = transactionalProducer("ctp");
    await producer.connect();
    try {
      const transaction = await producer.transaction();
      const messages = reader.values.map((value) => ({ value: `out ${value}`, partition: 0 }));
      await transaction.send({ topic: txnTopic(), messages });
      await transaction.sendOffsets({
        consumerGroupId: txnGroup(),
        topics: [{ topic: txnTopic(), partitions: [{ partition: 0, offset: next }] }],
      });
      await transaction.commit();
    } finally {
      await producer.disconnect();
    }
    const all = 2 * TXN_RECORDS;
    await waitFor("the transformed records", TXN_WAIT_MS, () => reader.values.length >= all);
    await sleep(200);
    checkSeen("the reader", reader.values, [
      ...txnValues("committed"),
      ...txnValues("out committed"),
    ]);
    const [committed] = await this.admin.fetchOffsets({
      groupId: txnGroup(),
      topics: [txnTopic()],
    });
    const offset = committed?.partitions[0]?.offset;
    check(offset === String(TXN_INPUT_END), `group offset ${offset}, not ${TXN_INPUT_END}`);
    return `${TXN_RECORDS} transformed, group offset ${offset}`;
  }

  async stopTxnReader(): Promise<void> {
    await this.txnReader?.consumer.disconnect().catch((error) => console.error(`${error}`));
    this.txnReader = undefined;
  }

  async deleteTopic(): Promise<void> {
    await this.admin.deleteTopics({ topics: [env.topic] });
    const gone = async () => !(await this.admin.listTopics()).includes(env.topic);
    await waitFor("the topic to go", 10_000, gone);
  }

  /** Disconnects the members; a failure here is logged, since the steps say what broke. */
  async stopMembers(): Promise<void> {
    await Promise.all(
      this.members.map((member) =>
        member.consumer.disconnect().catch((error) => console.error(`disconnect: ${error}`)),
      ),
    );
    this.members = [];
  }
}

async function main(): Promise<void> {
  const steps = new StepRunner("kafkajs", `${VERSION} (Node ${process.version})`);
  const admin = kafka.admin();
  const producer = kafka.producer();
  await admin.connect();
  await producer.connect();
  const scenario = new Scenario(admin, producer);
  await steps.run("create-topic", () => scenario.createTopic());
  await steps.run("produce-gzip", () => scenario.produceGzip());
  steps.markNotApplicable("produce-zstd", "kafkajs has no zstd codec built in");
  await steps.run("consume-group", () => scenario.consumeGroup());
  await steps.run("commit", () => scenario.commit());
  await steps.run("restart-no-redelivery", () => scenario.restart());
  await steps.run("describe-group", () => scenario.describeGroup());
  await scenario.stopMembers();
  await steps.run("list-offsets", () => scenario.listOffsets());
  await steps.run("transactions", () => scenario.transactions());
  await steps.run("consume-transform-produce", () => scenario.consumeTransformProduce());
  await scenario.stopTxnReader();
  await steps.run("delete-topic", () => scenario.deleteTopic());
  await producer.disconnect();
  await admin.disconnect();
}

await main();
process.exit(0);
