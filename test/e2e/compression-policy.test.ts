// compression.type end to end (issue 7): every codec produced by kcat is consumed by kafkajs and
// every codec produced by kafkajs is consumed by kcat, on topics whose compression.type is
// `producer` and each codec; the segment files show the codec each batch was stored with.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { CompressionCodecs, CompressionTypes, Kafka, logLevel } from "kafkajs";
import { compress, decompress } from "../../src/protocol/compression.ts";
import { type InProcessBroker, startInProcessBroker } from "../support/broker-harness.ts";
import { kcatOk, stdoutText } from "./kcat-process.ts";

const CODEC_IDS = { none: 0, gzip: 1, snappy: 2, lz4: 3, zstd: 4 } as const;
type Codec = keyof typeof CODEC_IDS;
const CODECS = Object.keys(CODEC_IDS) as Codec[];
const POLICIES = ["producer", "uncompressed", "gzip", "snappy", "lz4", "zstd"] as const;
const POLICY_CODEC: Record<string, number> = {
  uncompressed: 0,
  gzip: 1,
  snappy: 2,
  lz4: 3,
  zstd: 4,
};
const KAFKAJS_TYPES: Record<Codec, number> = {
  none: CompressionTypes.None,
  gzip: CompressionTypes.GZIP,
  snappy: CompressionTypes.Snappy,
  lz4: CompressionTypes.LZ4,
  zstd: CompressionTypes.ZSTD,
};

// kafkajs ships gzip only; the other codecs are plugged in from Quill's own codec module (the
// same framing Java and librdkafka use: xerial snappy, LZ4 frames, zstd frames).
for (const [codec, type] of [
  ["snappy", 2],
  ["lz4", 3],
  ["zstd", 4],
] as const) {
  const codecType = KAFKAJS_TYPES[codec];
  (CompressionCodecs as Record<number, unknown>)[codecType] = () => ({
    compress: async (encoder: { buffer: Buffer }) => Buffer.from(compress(type, encoder.buffer)),
    decompress: async (buffer: Buffer) => Buffer.from(decompress(type, buffer, 64 << 20)),
  });
}

let broker: InProcessBroker;
let kafka: Kafka;
beforeAll(async () => {
  broker = await startInProcessBroker();
  kafka = new Kafka({ brokers: [broker.bootstrap], logLevel: logLevel.NOTHING });
  const admin = kafka.admin();
  await admin.connect();
  const topics = POLICIES.flatMap((policy) =>
    ["kcat", "kafkajs"].map((from) => ({
      topic: `${from}-${policy}`,
      numPartitions: 1,
      configEntries: [{ name: "compression.type", value: policy }],
    })),
  );
  expect(await admin.createTopics({ topics })).toBe(true);
  await admin.disconnect();
}, 60_000);
afterAll(async () => {
  await broker.stop();
});

/** Compressible values, so librdkafka does not fall back to sending a codec's batch plain. */
const valuesFor = (codec: Codec) =>
  Array.from({ length: 20 }, (_, i) => `${codec}-${i}-${"abcdefgh".repeat(40)}`);

function storedCodecs(dataDir: string, topic: string): number[] {
  const log = readFileSync(join(dataDir, `${topic}-0`, "00000000000000000000.log"));
  const codecs: number[] = [];
  for (let at = 0; at + 61 <= log.length; at += 12 + log.readInt32BE(at + 8)) {
    codecs.push(log.readInt16BE(at + 21) & 7);
  }
  return codecs;
}

async function kafkajsValues(topic: string, count: number): Promise<string[]> {
  const consumer = kafka.consumer({ groupId: `read-${topic}` });
  await consumer.connect();
  await consumer.subscribe({ topic, fromBeginning: true });
  const got: string[] = [];
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${got.length} of ${count} read`)), 20_000);
    void consumer.run({
      eachMessage: async ({ message }) => {
        got.push(message.value!.toString());
        if (got.length === count) {
          clearTimeout(timer);
          resolve();
        }
      },
    });
  });
  await consumer.disconnect();
  return got;
}

describe.each(POLICIES)("compression.type=%s", (policy) => {
  test("kcat produces every codec; kafkajs reads them all; disk shows the policy", async () => {
    const topic = `kcat-${policy}`;
    const sent: string[] = [];
    for (const codec of CODECS) {
      const values = valuesFor(codec);
      await kcatOk(broker.bootstrap, ["-P", "-t", topic, "-p", "0", "-z", codec], {
        stdin: values.join("\n") + "\n",
      });
      sent.push(...values);
    }
    expect(await kafkajsValues(topic, sent.length)).toEqual(sent);
    const codecs = storedCodecs(broker.dataDir, topic);
    if (policy === "producer") {
      expect(new Set(codecs)).toEqual(new Set(Object.values(CODEC_IDS)));
    } else {
      expect(codecs.every((c) => c === POLICY_CODEC[policy])).toBe(true);
    }
  }, 60_000);

  test("kafkajs produces every codec; kcat reads them all; disk shows the policy", async () => {
    const topic = `kafkajs-${policy}`;
    const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1 });
    await producer.connect();
    const sent: string[] = [];
    for (const codec of CODECS) {
      const values = valuesFor(codec);
      await producer.send({
        topic,
        compression: KAFKAJS_TYPES[codec],
        messages: values.map((value) => ({ value })),
      });
      sent.push(...values);
    }
    await producer.disconnect();
    const out = await kcatOk(broker.bootstrap, [
      "-C",
      "-t",
      topic,
      "-p",
      "0",
      "-o",
      "beginning",
      "-e",
      "-q",
      "-f",
      "%s\n",
    ]);
    expect(
      stdoutText(out)
        .split("\n")
        .filter((l) => l !== ""),
    ).toEqual(sent);
    const expected =
      policy === "producer" ? [0, 1, 2, 3, 4] : CODECS.map(() => POLICY_CODEC[policy]);
    expect(storedCodecs(broker.dataDir, topic)).toEqual(expected);
  }, 60_000);
});

test("the broker-level compression.type applies to topics without their own", async () => {
  const own = await startInProcessBroker({ settings: { "compression.type": "lz4" } });
  try {
    await kcatOk(own.bootstrap, ["-P", "-t", "defaulted", "-p", "0", "-z", "gzip"], {
      stdin: valuesFor("gzip").join("\n") + "\n",
    });
    // kcat may split stdin into several batches (CI once stored two): every one must be lz4.
    const codecs = storedCodecs(own.dataDir, "defaulted");
    expect(codecs.length).toBeGreaterThan(0);
    expect(codecs.every((c) => c === CODEC_IDS.lz4)).toBe(true);
  } finally {
    await own.stop();
  }
}, 30_000);

/** Compressible but not trivially so, so a codec's levels give different sizes. */
const levelValues = Array.from(
  { length: 300 },
  (_, i) =>
    `order-${i} user-${(i * 7919) % 1013} amount-${(i * 104729) % 99991} ${"note ".repeat(i % 13)}`,
);

/** Bytes of the one segment file of `topic`, after a kafkajs producer sent `levelValues` plain. */
async function storedBytesAtLevel(codec: "gzip" | "zstd", level: number): Promise<number> {
  const topic = `level-${codec}-${level}`;
  const admin = kafka.admin();
  await admin.connect();
  const configEntries = [
    { name: "compression.type", value: codec },
    { name: `compression.${codec}.level`, value: String(level) },
  ];
  expect(await admin.createTopics({ topics: [{ topic, numPartitions: 1, configEntries }] })).toBe(
    true,
  );
  await admin.disconnect();
  const producer = kafka.producer();
  await producer.connect();
  await producer.send({
    topic,
    compression: CompressionTypes.None,
    messages: levelValues.map((value) => ({ value })),
  });
  await producer.disconnect();
  expect(await kafkajsValues(topic, levelValues.length)).toEqual(levelValues);
  expect(storedCodecs(broker.dataDir, topic)).toEqual([CODEC_IDS[codec]]);
  return readFileSync(join(broker.dataDir, `${topic}-0`, "00000000000000000000.log")).length;
}

// KIP-390: the topic's level is what the broker recompresses at. Faster levels compress this
// input less, so each level's stored batch has its own size; the records read back intact.
test("compression.gzip.level sets the level the broker recompresses at", async () => {
  const fast = await storedBytesAtLevel("gzip", 1);
  const best = await storedBytesAtLevel("gzip", 9);
  expect(fast).toBeGreaterThan(best);
}, 60_000);

test("compression.zstd.level sets the level, negative (fast) levels included", async () => {
  const fastest = await storedBytesAtLevel("zstd", -5);
  const fast = await storedBytesAtLevel("zstd", 1);
  const best = await storedBytesAtLevel("zstd", 19);
  expect(fastest).toBeGreaterThan(fast);
  expect(fast).toBeGreaterThan(best);
}, 60_000);
