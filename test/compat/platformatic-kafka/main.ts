/**
 * The compatibility scenario with @platformatic/kafka (a pure TypeScript client that speaks the
 * newer flexible protocol versions), as an ordinary user writes it: string serialisers, a
 * Producer per codec, consumer.consume() streams with manual message.commit(), Admin for topics,
 * groups and offsets. scripts/compat.ts bundles it for Node and runs it there; the library's zstd
 * codec uses Node's zlib, which has zstd from Node 22.15, so on older Node that step is n/a.
 */
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import * as zlib from "node:zlib";
import {
  Admin,
  AuthenticationError,
  Consumer,
  FetchIsolationLevels,
  type Message,
  type MessagesStream,
  Producer,
  stringDeserializers,
  stringSerializers,
} from "@platformatic/kafka";
import {
  CONSUME_TIMEOUT_MS,
  type Codec,
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

type StringMessage = Message<string, string, string, string>;

const SEND_CHUNK_RECORDS = 1000;
// The package exports no version and no package.json, so read it beside the resolved entry point.
const ENTRY = createRequire(import.meta.url).resolve("@platformatic/kafka");
const VERSION: string = JSON.parse(
  readFileSync(join(dirname(ENTRY), "..", "package.json"), "utf8"),
).version;
const clientOptions = connectionOptions(env.security?.password);
const PARTITIONS = Array.from({ length: PARTITION_COUNT }, (_, partition) => partition);

/** The client id, bootstrap and, over SASL_SSL, the SCRAM login and trusted CA (scenario.ts). */
function connectionOptions(password: string | undefined) {
  const security = env.security;
  const base = { clientId: "quill-compat-platformatic", bootstrapBrokers: [env.bootstrap] };
  if (!security || password === undefined) return base;
  return {
    ...base,
    sasl: { mechanism: "SCRAM-SHA-512" as const, username: security.username, password },
    tls: { ca: readFileSync(security.caLocation) },
  };
}

/** A client with a wrong password must fail with the library's AuthenticationError. */
async function wrongPassword(): Promise<string> {
  const admin = new Admin({ ...connectionOptions(`not-${env.security?.password}`), retries: 0 });
  try {
    await admin.listTopics();
  } catch (error) {
    const found = findCause(error, (e) => e instanceof AuthenticationError);
    check(found !== undefined, `failed with ${describeError(error)}, not an AuthenticationError`);
    return describeError(found);
  } finally {
    await admin.close();
  }
  throw new Error("an Admin with a wrong password listed the topics");
}

/** The error itself or the first of its causes (and aggregated errors) that matches. */
function findCause(error: unknown, matches: (e: unknown) => boolean): unknown {
  if (matches(error)) return error;
  if (!(error instanceof Error)) return undefined;
  const nested = [error.cause, ...((error as { errors?: unknown[] }).errors ?? [])];
  for (const inner of nested) {
    const found = inner === undefined ? undefined : findCause(inner, matches);
    if (found !== undefined) return found;
  }
  return undefined;
}

interface Member {
  readonly consumer: Consumer<string, string, string, string>;
  readonly records: ConsumedRecord[];
  /** The last message per partition, whose commit() commits everything before it. */
  readonly lastMessages: Map<number, StringMessage>;
  stream?: MessagesStream<string, string, string, string>;
  joined: boolean;
  error?: string;
}

function startMember(index: number): Member {
  const consumer = new Consumer({
    ...clientOptions,
    groupId: env.group,
    deserializers: stringDeserializers,
  });
  const member: Member = { consumer, records: [], lastMessages: new Map(), joined: false };
  consumer.on("consumer:group:join", () => {
    member.joined = true;
  });
  consumer
    .consume({
      topics: [env.topic],
      mode: "committed",
      fallbackMode: "earliest",
      autocommit: false,
    })
    .then((stream) => {
      member.stream = stream;
      stream.on("data", (message: StringMessage) => {
        member.records.push({
          member: index,
          partition: message.partition,
          key: message.key ?? null,
          value: message.value ?? null,
          headers: [...message.headers],
        });
        member.lastMessages.set(message.partition, message);
      });
      stream.on("error", (error: unknown) => {
        member.error ??= describeError(error);
      });
    })
    .catch((error: unknown) => {
      member.error ??= describeError(error);
    });
  return member;
}

async function stopMembers(members: readonly Member[]): Promise<void> {
  for (const member of members) {
    try {
      await member.stream?.close();
      await member.consumer.close(true);
    } catch (error) {
      console.error(`close: ${describeError(error)}`);
    }
  }
}

async function waitForMembers(
  members: readonly Member[],
  what: string,
  timeoutMs: number,
  done: () => boolean,
) {
  await waitFor(what, timeoutMs, () => {
    const failed = members.find((member) => member.error);
    if (failed) throw new Error(`consumer failed: ${failed.error}`);
    return done();
  });
}

async function produce(codec: Codec): Promise<string> {
  const producer = new Producer({
    ...clientOptions,
    serializers: stringSerializers,
    compression: codec,
  });
  try {
    const records = recordsFor(codec);
    for (let first = 0; first < records.length; first += SEND_CHUNK_RECORDS) {
      await producer.send({
        messages: records.slice(first, first + SEND_CHUNK_RECORDS).map((record) => ({
          topic: env.topic,
          key: record.key,
          value: record.value,
          headers: new Map(record.headers),
        })),
      });
    }
    return `${records.length} records`;
  } finally {
    await producer.close();
  }
}

async function listOffsets(
  admin: Admin,
  timestamp: bigint,
  name = env.topic,
  indexes = PARTITIONS,
): Promise<bigint[]> {
  const [topic] = await admin.listOffsets({
    topics: [
      { name, partitions: indexes.map((partitionIndex) => ({ partitionIndex, timestamp })) },
    ],
  });
  const partitions = [...(topic?.partitions ?? [])].sort(
    (a, b) => a.partitionIndex - b.partitionIndex,
  );
  check(partitions.length === indexes.length, `${partitions.length} partitions listed`);
  return partitions.map((partition) => partition.offset);
}

/** A read_committed member of the transactions' group, keeping what it read, never committing. */
interface TxnReader {
  readonly consumer: Consumer<string, string, string, string>;
  readonly stream: MessagesStream<string, string, string, string>;
  readonly messages: StringMessage[];
}

async function startTxnReader(): Promise<TxnReader> {
  const isolationLevel = FetchIsolationLevels.READ_COMMITTED;
  const consumer = new Consumer({
    ...clientOptions,
    groupId: txnGroup(),
    deserializers: stringDeserializers,
    isolationLevel,
  });
  const stream = await consumer.consume({
    topics: [txnTopic()],
    mode: "committed",
    fallbackMode: "earliest",
    autocommit: false,
    isolationLevel,
  });
  const reader: TxnReader = { consumer, stream, messages: [] };
  stream.on("data", (message: StringMessage) => reader.messages.push(message));
  return reader;
}

function transactionalProducer(id: string): Producer<string, string, string, string> {
  return new Producer({
    ...clientOptions,
    serializers: stringSerializers,
    idempotent: true,
    transactionalId: `${env.topic}-${id}`,
  });
}

/** Waits until the reader has `count` messages, and a moment more so a late extra shows. */
async function readUntil(reader: TxnReader, count: number): Promise<string[]> {
  await waitFor(`${count} records`, TXN_WAIT_MS, () => reader.messages.length >= count);
  await sleep(200);
  return reader.messages.map((message) => message.value);
}

/** The scenario's steps; each method is one step and throws to fail it. */
class Scenario {
  private producedCount = 0;
  private members: Member[] = [];
  private txnReader: TxnReader | undefined;
  /** The codecs produced, so the consume step expects exactly their records. */
  private readonly codecs: Codec[] = [];

  constructor(private readonly admin: Admin) {}

  private records(): ConsumedRecord[] {
    return this.members.flatMap((member) => member.records);
  }

  async createTopic(): Promise<void> {
    const { admin } = this;
    await admin.createTopics({ topics: [env.topic], partitions: PARTITION_COUNT });
    const metadata = await admin.metadata({ topics: [env.topic] });
    const partitions = metadata.topics.get(env.topic)?.partitionsCount;
    check(partitions === PARTITION_COUNT, `topic has ${partitions} partitions`);
  }

  async produce(codec: Codec): Promise<string> {
    const detail = await produce(codec);
    this.producedCount += RECORDS_PER_CODEC;
    this.codecs.push(codec);
    return detail;
  }

  /** Starts two members and waits until both have joined the group. */
  private async startMembers(): Promise<void> {
    this.members = [startMember(0), startMember(1)];
    const joined = () => this.members.every((member) => member.joined);
    await waitForMembers(this.members, "both members to join", RESTART_TIMEOUT_MS, joined);
  }

  async consumeGroup(): Promise<string> {
    await this.startMembers();
    const expected = this.codecs.length * RECORDS_PER_CODEC;
    const done = () => this.records().length >= expected;
    await waitForMembers(this.members, `${expected} records`, CONSUME_TIMEOUT_MS, done);
    await sleep(500); // Anything delivered twice arrives now, and the check sees it.
    const problems = verifyConsumed(this.records(), this.codecs);
    check(problems.length === 0, problems.join("; "));
    return this.members.map((member, i) => `member ${i}: ${member.records.length}`).join(", ");
  }

  async commit(): Promise<void> {
    for (const member of this.members) {
      for (const message of member.lastMessages.values()) await message.commit();
    }
    const [group] = await this.admin.listConsumerGroupOffsets({ groups: [env.group] });
    const partitions = group?.topics.find((topic) => topic.name === env.topic)?.partitions ?? [];
    const committed = new Map(partitions.map((p) => [p.partitionIndex, p.committedOffset]));
    const latest = await listOffsets(this.admin, -1n);
    for (const partition of PARTITIONS) {
      const offset = committed.get(partition);
      const end = latest[partition];
      check(offset === end, `partition ${partition}: committed ${offset}, end ${end}`);
    }
  }

  async restart(): Promise<void> {
    await this.stopMembers();
    await this.startMembers();
    const producer = new Producer({ ...clientOptions, serializers: stringSerializers });
    try {
      await producer.send({
        messages: PARTITIONS.slice(0, SENTINEL_COUNT).map((partition) => ({
          topic: env.topic,
          key: `sentinel-${partition}`,
          value: "sentinel",
          partition,
        })),
      });
    } finally {
      await producer.close();
    }
    this.producedCount += SENTINEL_COUNT;
    const sentinels = () => this.records().filter(isSentinel).length;
    const done = () => sentinels() >= SENTINEL_COUNT;
    await waitForMembers(this.members, "the sentinels", RESTART_TIMEOUT_MS, done);
    const again = this.records().filter((record) => !isSentinel(record)).length;
    check(again === 0, `${again} records delivered again after the restart`);
  }

  async describeGroup(): Promise<string> {
    const group = (await this.admin.describeGroups({ groups: [env.group] })).get(env.group);
    check(group?.state === "STABLE", `group state ${group?.state}`);
    check(group.members.size === 2, `${group.members.size} members`);
    check(group.protocolType === "consumer", `protocol type ${group.protocolType}`);
    const listed = await this.admin.listGroups();
    check(listed.has(env.group), "listGroups does not show the group");
    const assigned = checkAssignments(
      [...group.members.values()].map(
        (member) => member.assignments?.get(env.topic)?.partitions ?? [],
      ),
    );
    return `${group.state}, ${group.protocol}, partitions ${assigned}`;
  }

  async listOffsets(): Promise<string> {
    const earliest = await listOffsets(this.admin, -2n);
    const latest = await listOffsets(this.admin, -1n);
    check(
      earliest.every((offset) => offset === 0n),
      `earliest ${earliest}`,
    );
    const total = latest.reduce((sum, offset) => sum + Number(offset), 0);
    const produced = this.producedCount;
    check(total === produced, `latest offsets add up to ${total}, produced ${produced}`);
    return `earliest 0, latest ${latest.join("/")}`;
  }

  async transactions(): Promise<string> {
    await this.admin.createTopics({ topics: [txnTopic()], partitions: 1 });
    const producer = transactionalProducer("txn");
    try {
      for (const prefix of ["aborted", "committed"] as const) {
        const transaction = await producer.beginTransaction();
        const values = txnValues(prefix);
        await transaction.send({
          messages: values.map((value) => ({ topic: txnTopic(), value, partition: 0 })),
        });
        await (prefix === "aborted" ? transaction.abort() : transaction.commit());
      }
    } finally {
      await producer.close();
    }
    this.txnReader = await startTxnReader();
    const seen = await readUntil(this.txnReader, TXN_RECORDS);
    checkSeen("after commit and abort", seen, txnValues("committed"));
    const [end] = await listOffsets(this.admin, -1n, txnTopic(), [0]);
    check(end === BigInt(TXN_END_OFFSET), `end offset ${end}, not ${TXN_END_OFFSET}`);
    return `${TXN_RECORDS} committed seen, ${TXN_RECORDS} aborted not, end offset ${end}`;
  }

  /** Transforms what the reader read; addConsumer and addOffset send its offset too. */
  async consumeTransformProduce(): Promise<string> {
    const reader = this.txnReader;
    check(reader !== undefined, "no reader from the transactions step");
    const inputs = [...reader.messages];
    const producer = transactionalProducer("ctp");
    try {
      const transaction = await producer.beginTransaction();
      await transaction.send({
        messages: inputs.map((input) => ({
          topic: txnTopic(),
          value: `out ${input.value}`,
          partition: 0,
        })),
      });
      await transaction.addConsumer(reader.consumer);
      await transaction.addOffset(inputs[inputs.length - 1] as StringMessage);
      await transaction.commit();
    } finally {
      await producer.close();
    }
    const seen = await readUntil(reader, 2 * TXN_RECORDS);
    checkSeen("the reader", seen, [...txnValues("committed"), ...txnValues("out committed")]);
    const [group] = await this.admin.listConsumerGroupOffsets({ groups: [txnGroup()] });
    const partitions = group?.topics.find((topic) => topic.name === txnTopic())?.partitions;
    const offset = partitions?.find((p) => p.partitionIndex === 0)?.committedOffset;
    check(offset === BigInt(TXN_INPUT_END), `group offset ${offset}, not ${TXN_INPUT_END}`);
    return `${TXN_RECORDS} transformed, group offset ${offset}`;
  }

  async stopTxnReader(): Promise<void> {
    try {
      await this.txnReader?.stream.close();
      await this.txnReader?.consumer.close(true);
    } catch (error) {
      console.error(`close: ${describeError(error)}`);
    }
    this.txnReader = undefined;
  }

  async deleteTopic(): Promise<void> {
    await this.admin.deleteTopics({ topics: [env.topic] });
    const gone = async () => !(await this.admin.listTopics()).includes(env.topic);
    await waitFor("the topic to go", 10_000, gone);
  }

  async stopMembers(): Promise<void> {
    await stopMembers(this.members);
    this.members = [];
  }
}

async function main(): Promise<void> {
  const steps = new StepRunner("platformatic-kafka", `${VERSION} (Node ${process.version})`);
  if (env.security) await steps.run("wrong-password", wrongPassword);
  const admin = new Admin(clientOptions);
  const scenario = new Scenario(admin);
  await steps.run("create-topic", () => scenario.createTopic());
  await steps.run("produce-gzip", () => scenario.produce("gzip"));
  if ("zstdCompressSync" in zlib) {
    await steps.run("produce-zstd", () => scenario.produce("zstd"));
  } else {
    const why = `its zstd codec needs Node 22.15 or later, this is ${process.version}`;
    steps.markNotApplicable("produce-zstd", why);
  }
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
  await admin.close();
}

await main();
process.exit(0);
