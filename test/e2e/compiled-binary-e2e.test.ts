// The compiled dist/quill itself (built here when missing or older than its sources) as the
// broker: kcat produces with each codec and consumes byte for byte, kafkajs produces keyed
// records, and a SIGTERM stop and restart of the binary keeps everything.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Kafka, logLevel } from "kafkajs";
import { ChildBroker, ensureBuiltBinary } from "../support/child-broker.ts";
import { kcatOk, stdoutText } from "./kcat-process.ts";

const CODECS = ["none", "gzip", "snappy", "lz4", "zstd"] as const;
let broker: ChildBroker;
const incarnations: ChildBroker[] = [];

beforeAll(async () => {
  ensureBuiltBinary();
  broker = await ChildBroker.start({ command: "binary", settings: { "num.partitions": "2" } });
  incarnations.push(broker);
}, 60_000);
afterAll(async () => {
  for (const b of incarnations.reverse()) await b.remove();
});

const payload = (codec: string) =>
  Array.from({ length: 500 }, (_, i) => `k${i % 9}\t${codec} ${i} ${"abc".repeat(i % 40)}\n`).join(
    "",
  );

async function consume(topic: string, format: string): Promise<string> {
  const result = await kcatOk(broker.bootstrap, [
    "-C",
    "-e",
    "-q",
    "-t",
    topic,
    "-p",
    "0",
    "-X",
    "fetch.wait.max.ms=100",
    "-f",
    format,
  ]);
  return stdoutText(result);
}

describe("dist/quill serve as the broker", () => {
  test("prints its listening line and answers kcat -L", async () => {
    expect(broker.stderrText).toMatch(/Z INFO \[Broker\] broker 0 listening on 127\.0\.0\.1:\d+/);
    const listing = stdoutText(await kcatOk(broker.bootstrap, ["-L"]));
    expect(listing).toContain(`broker 0 at ${broker.bootstrap} (controller)`);
  }, 30_000);

  test("kcat with every codec: what goes in comes out, byte for byte", async () => {
    for (const codec of CODECS) {
      const input = payload(codec);
      const args = ["-P", "-t", `bin-${codec}`, "-p", "0", "-z", codec, "-K", "\t"];
      await kcatOk(broker.bootstrap, args, { stdin: input });
      expect(await consume(`bin-${codec}`, "%k\t%s\n")).toBe(input);
    }
  }, 60_000);

  test("kafkajs produces keyed records; kcat reads them in order per key", async () => {
    const kafka = new Kafka({
      clientId: "binary-e2e",
      brokers: [broker.bootstrap],
      logLevel: logLevel.NOTHING,
    });
    const producer = kafka.producer();
    await producer.connect();
    const messages = Array.from({ length: 1000 }, (_, i) => ({ key: "same-key", value: `v${i}` }));
    const [result] = await producer.send({ topic: "from-kafkajs", acks: -1, messages });
    await producer.disconnect();
    const out = await kcatOk(broker.bootstrap, [
      "-C",
      "-e",
      "-q",
      "-t",
      "from-kafkajs",
      "-p",
      String(result!.partition),
      "-X",
      "fetch.wait.max.ms=100",
      "-f",
      "%k=%s\n",
    ]);
    expect(stdoutText(out)).toBe(messages.map((m) => `${m.key}=${m.value}\n`).join(""));
  }, 30_000);

  test("SIGTERM exits 0; the restarted binary serves the same records", async () => {
    const before = await consume("bin-zstd", "%o %k %s\n");
    expect(await broker.terminate()).toBe(0);
    expect(broker.stderrText).toContain("stopped cleanly");
    broker = await broker.restart();
    incarnations.push(broker);
    expect(await consume("bin-zstd", "%o %k %s\n")).toBe(before);
    expect(await broker.terminate()).toBe(0);
  }, 60_000);
});
