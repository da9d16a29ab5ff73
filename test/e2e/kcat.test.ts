// kcat (librdkafka 2.0) as a separate process against a broker on real TCP: metadata listing,
// producing from files with keys and every compression codec, consuming with -e byte for byte,
// several partitions, start offsets, and offset-for-timestamp queries (-Q).
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import {
  type InProcessBroker,
  removeDir,
  startInProcessBroker,
  tempDir,
} from "../support/broker-harness.ts";
import { kcatOk, stdoutText } from "./kcat-process.ts";

const PARTITIONS = 4;
let broker: InProcessBroker;
let files: string;

beforeAll(async () => {
  broker = await startInProcessBroker({ settings: { "num.partitions": String(PARTITIONS) } });
  files = tempDir("quill-kcat-files-");
}, 60_000);
afterAll(async () => {
  await broker.stop();
  removeDir(files);
});

const produce = (args: string[], stdin?: string) =>
  kcatOk(broker.bootstrap, ["-P", "-X", "acks=all", ...args], { stdin });
// A short fetch wait lets `-e` see the end of each partition sooner; the answers are the same.
const consume = (args: string[]) =>
  kcatOk(broker.bootstrap, ["-C", "-e", "-q", "-X", "fetch.wait.max.ms=100", ...args]);

/** Lines of `key\tvalue`, with repeated keys and values long enough for codecs to matter. */
function keyedLines(count: number, tag: string): string {
  const lines = Array.from(
    { length: count },
    (_, i) => `key-${i % 37}\t${tag} record ${i} ${"lorem ipsum dolor ".repeat(1 + (i % 5))}ü✓`,
  );
  return lines.join("\n") + "\n";
}

/** Splits kcat `-f '%R%s'` output: a big-endian int32 length, then that many payload bytes. */
function lengthPrefixed(bytes: Uint8Array): Uint8Array[] {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const out: Uint8Array[] = [];
  for (let at = 0; at < bytes.length; ) {
    const length = view.getInt32(at);
    out.push(bytes.subarray(at + 4, at + 4 + length));
    at += 4 + length;
  }
  return out;
}

/** The compression codec (attributes & 7) of every batch in a partition's first segment. */
function storedCodecs(topic: string, partition: number): number[] {
  const segment = join(broker.dataDir, `${topic}-${partition}`, "00000000000000000000.log");
  const log = readFileSync(segment);
  const codecs: number[] = [];
  for (let at = 0; at + 61 <= log.length; ) {
    const batchLength = log.readInt32BE(at + 8);
    if (batchLength === 0) break;
    codecs.push(log.readInt16BE(at + 21) & 7);
    at += 12 + batchLength;
  }
  return codecs;
}

describe("kcat metadata listing", () => {
  test("-L and -L -J show this broker as controller and each topic's partitions", async () => {
    await produce(["-t", "listed", "-p", "1"], "one\n");
    const plain = stdoutText(await kcatOk(broker.bootstrap, ["-L"]));
    expect(plain).toContain("1 brokers:");
    expect(plain).toContain(`broker 0 at ${broker.bootstrap} (controller)`);
    expect(plain).toContain(`topic "listed" with ${PARTITIONS} partitions:`);
    const json = JSON.parse(stdoutText(await kcatOk(broker.bootstrap, ["-L", "-J"])));
    expect(json.controllerid).toBe(0);
    expect(json.brokers).toEqual([{ id: 0, name: broker.bootstrap }]);
    const listed = json.topics.find((t: { topic: string }) => t.topic === "listed");
    const partitions: { partition: number; leader: number }[] = listed.partitions;
    expect(partitions.map((p) => [p.partition, p.leader])).toEqual([
      [0, 0],
      [1, 0],
      [2, 0],
      [3, 0],
    ]);
  }, 30_000);
});

describe("kcat produce from a file and consume with -e, byte for byte", () => {
  const codecIds = [
    ["none", 0],
    ["gzip", 1],
    ["snappy", 2],
    ["lz4", 3],
    ["zstd", 4],
  ] as const;
  for (const [codec, id] of codecIds) {
    test(`-z ${codec}: keyed text lines and binary values come back identical`, async () => {
      const text = keyedLines(3000, codec);
      const textFile = join(files, `${codec}.txt`);
      writeFileSync(textFile, text);
      await produce(["-t", `text-${codec}`, "-p", "0", "-z", codec, "-K", "\t", "-l", textFile]);
      const back = await consume([
        "-t",
        `text-${codec}`,
        "-p",
        "0",
        "-o",
        "beginning",
        "-f",
        "%k\t%s\n",
      ]);
      expect(Buffer.from(back.stdout).equals(Buffer.from(text))).toBe(true);
      // The codec on disk proves the client compressed. librdkafka 2.0 enables lz4 only when the
      // broker lists FindCoordinator (its marker for Kafka >= 0.8.2), so lz4 needs that API.
      // librdkafka sends a batch uncompressed when compression would not shrink it (small tail
      // batches, depending on timing), so "none" may appear beside the codec, nothing else may.
      const codecs = storedCodecs(`text-${codec}`, 0);
      expect(codecs).toContain(id);
      expect(codecs.every((c) => c === id || c === 0)).toBe(true);

      // Whole files as single messages: every byte value, NULs and newlines included.
      const values = binaryValues(codec);
      const paths = values.map((_value, i) => join(files, `${codec}-${i}.bin`));
      for (const [i, value] of values.entries()) writeFileSync(paths[i]!, value);
      await produce(["-t", `binary-${codec}`, "-p", "0", "-z", codec, ...paths]);
      const binary = await consume([
        "-t",
        `binary-${codec}`,
        "-p",
        "0",
        "-o",
        "beginning",
        "-f",
        "%R%s",
      ]);
      const got = lengthPrefixed(binary.stdout);
      expect(got.length).toBe(values.length);
      got.forEach((value, i) => {
        expect(Buffer.from(value).equals(Buffer.from(values[i]!))).toBe(true);
      });
    }, 30_000);
  }

  test("a multi-byte -D delimiter splits and joins binary records the same way", async () => {
    const records = Array.from({ length: 200 }, (_, i) => `rec${i}\n\x00\x01${"\r".repeat(i % 3)}`);
    const input = records.join("<|>") + "<|>";
    const file = join(files, "delimited.bin");
    writeFileSync(file, input);
    await produce(["-t", "delimited", "-p", "2", "-z", "lz4", "-D", "<|>", "-l", file]);
    const back = await consume(["-t", "delimited", "-p", "2", "-D", "<|>"]);
    expect(Buffer.from(back.stdout).equals(Buffer.from(input))).toBe(true);
  }, 30_000);
});

function binaryValues(seed: string): Uint8Array[] {
  const every = Uint8Array.from({ length: 256 * 8 }, (_, i) => i & 0xff);
  const random = new Uint8Array(100_000);
  crypto.getRandomValues(random);
  const compressible = new TextEncoder().encode(`${seed}\n\0`.repeat(20_000));
  return [every, random, compressible, new Uint8Array([0]), new Uint8Array([10, 10, 10])];
}

describe("kcat with several partitions", () => {
  test("keyed records spread over partitions; a key stays in one partition, in order", async () => {
    const lines = Array.from({ length: 2000 }, (_, i) => `k${i % 50}\t${i}`);
    await produce(["-t", "spread", "-K", "\t", "-z", "snappy"], lines.join("\n") + "\n");
    const args = ["-t", "spread", "-o", "beginning", "-f", "%p %o %k %s\n"];
    const out = stdoutText(await consume(args));
    const rows = out
      .trimEnd()
      .split("\n")
      .map((line) => line.split(" "));
    expect(rows.length).toBe(2000);
    const partitionOfKey = new Map<string, string>();
    const lastOfKey = new Map<string, number>();
    const nextOffset = new Map<string, number>();
    for (const [partition, offset, key, value] of rows as [string, string, string, string][]) {
      expect(partitionOfKey.get(key) ?? partition).toBe(partition);
      partitionOfKey.set(key, partition);
      expect(Number(value)).toBeGreaterThan(lastOfKey.get(key) ?? -1);
      lastOfKey.set(key, Number(value));
      // Each partition's offsets run 0, 1, 2, ... with no gap.
      expect(Number(offset)).toBe(nextOffset.get(partition) ?? 0);
      nextOffset.set(partition, Number(offset) + 1);
    }
    expect(new Set(partitionOfKey.values()).size).toBeGreaterThan(1);
  }, 30_000);

  test("-p N writes to and reads from exactly that partition", async () => {
    for (let p = 0; p < PARTITIONS; p++) {
      await produce(["-t", "pinned", "-p", String(p)], `p${p}-a\np${p}-b\n`);
    }
    for (let p = 0; p < PARTITIONS; p++) {
      const out = stdoutText(await consume(["-t", "pinned", "-p", String(p), "-f", "%p:%o:%s\n"]));
      expect(out).toBe(`${p}:0:p${p}-a\n${p}:1:p${p}-b\n`);
    }
  }, 30_000);
});

describe("kcat acknowledgement levels", () => {
  test("acks=0 (no response), acks=1 and acks=all are all stored", async () => {
    for (const acks of ["0", "1", "all"]) {
      const input = Array.from({ length: 300 }, (_, i) => `acks-${acks}-${i}\n`).join("");
      await kcatOk(
        broker.bootstrap,
        ["-P", "-t", `acks-${acks}`, "-p", "0", "-X", `acks=${acks}`],
        { stdin: input },
      );
      // -c rather than -e: an acks=0 producer may exit before the broker has appended.
      const back = await kcatOk(broker.bootstrap, [
        "-C",
        "-q",
        "-c",
        "300",
        "-t",
        `acks-${acks}`,
        "-p",
        "0",
        "-f",
        "%s\n",
      ]);
      expect(stdoutText(back)).toBe(input);
    }
  }, 30_000);
});

describe("kcat start offsets and timestamp queries", () => {
  const topic = "offsets";
  const read = async (offset: string) =>
    stdoutText(await consume(["-t", topic, "-p", "0", "-o", offset, "-f", "%o=%s "])).trim();

  test("-o beginning, end, an absolute offset and one relative to the end", async () => {
    const input = Array.from({ length: 10 }, (_, i) => `m${i}\n`).join("");
    await produce(["-t", topic, "-p", "0"], input);
    expect(await read("beginning")).toBe("0=m0 1=m1 2=m2 3=m3 4=m4 5=m5 6=m6 7=m7 8=m8 9=m9");
    expect(await read("end")).toBe("");
    expect(await read("7")).toBe("7=m7 8=m8 9=m9");
    expect(await read("-2")).toBe("8=m8 9=m9");
  }, 30_000);

  test("-Q finds the first offset at or after a timestamp; -o s@ starts there", async () => {
    await produce(["-t", "times", "-p", "0"], "early-0\nearly-1\nearly-2\n");
    await Bun.sleep(30);
    const splitMs = Date.now();
    await Bun.sleep(30);
    await produce(["-t", "times", "-p", "0"], "late-3\nlate-4\n");
    const query = async (ts: number | string) =>
      stdoutText(await kcatOk(broker.bootstrap, ["-Q", "-t", `times:0:${ts}`])).trim();
    expect(await query(0)).toBe("times [0] offset 0");
    expect(await query(splitMs)).toBe("times [0] offset 3");
    expect(await query(Date.now() + 60_000)).toBe("times [0] offset -1");
    expect(await query(-1)).toBe("times [0] offset 5");
    expect(await query(-2)).toBe("times [0] offset 0");
    const fromTime = await consume([
      "-t",
      "times",
      "-p",
      "0",
      "-o",
      `s@${splitMs}`,
      "-f",
      "%o=%s ",
    ]);
    expect(stdoutText(fromTime).trim()).toBe("3=late-3 4=late-4");
  }, 30_000);
});
