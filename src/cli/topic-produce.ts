/**
 * `quill topic produce TOPIC`: one record per line from stdin or `--file`, as kcat -P does.
 * `-K SEP` splits each line into key and value at the first SEP; `-H k=v` adds headers to every
 * record; `-p N` picks the partition (else Kafka's default partitioner); `-z`, `-a` and
 * `--rate` set the codec, acks and a records-per-second ceiling.
 */
import { ClusterError } from "../client/client-errors.ts";
import { describeTopics } from "../client/partition-offsets.ts";
import { COMPRESSION_NAMES, Producer } from "../client/producer.ts";
import type { CompressionType } from "../protocol/compression.ts";
import type { RecordHeader } from "../protocol/record-batch.ts";
import { UsageError } from "./args.ts";
import type { CommandArgs } from "./command-args.ts";
import { producerRetryOptions, withClient } from "./connection-options.ts";
import { outputFormat, printJson } from "./output.ts";
import { unescapeFlag } from "./record-format.ts";
import { keyValue } from "./topic-admin.ts";

/** A line longer than this is refused rather than buffered without end. */
const LINE_BYTES_MAX = 64 * 1024 * 1024;
/** How long a record may wait for its batch to fill. */
const LINGER_MS = 100;

export function parseAcks(raw: string | undefined): number {
  if (raw === undefined || raw === "all" || raw === "-1") return -1;
  if (raw === "0" || raw === "1") return Number(raw);
  throw new UsageError(`--acks expects 0, 1 or all, got "${raw}"`);
}

export function parseCompression(raw: string | undefined): CompressionType {
  const codec = COMPRESSION_NAMES[raw ?? "none"];
  if (codec === undefined) {
    throw new UsageError(`--compression expects none, gzip, snappy, lz4 or zstd, got "${raw}"`);
  }
  return codec;
}

/** Lines of a byte stream, without their "\n" (and a trailing "\r"). */
export async function* lines(stream: ReadableStream<Uint8Array>): AsyncGenerator<string> {
  const decoder = new TextDecoder();
  let pending = "";
  for await (const chunk of stream) {
    pending += decoder.decode(chunk, { stream: true });
    if (pending.length > LINE_BYTES_MAX)
      throw new UsageError(`a line is over ${LINE_BYTES_MAX} bytes`);
    let nl = pending.indexOf("\n");
    let start = 0;
    while (nl >= 0) {
      yield pending.slice(start, nl).replace(/\r$/, "");
      start = nl + 1;
      nl = pending.indexOf("\n", start);
    }
    pending = pending.slice(start);
  }
  pending += decoder.decode();
  if (pending !== "") yield pending;
}

interface ProduceSettings {
  readonly separator: string | null;
  readonly headers: RecordHeader[];
  readonly partition: number | null;
  readonly ratePerSec: number;
}

function produceSettings(args: CommandArgs): ProduceSettings {
  const raw = args.get("--key-separator");
  const encoder = new TextEncoder();
  return {
    separator: raw === undefined ? null : unescapeFlag(raw, "-K"),
    headers: args.all("--header").map((h) => {
      const [key, value] = keyValue("-H", h);
      return { key, value: encoder.encode(value) };
    }),
    partition: args.has("--partition") ? args.int("--partition", 0, 0, 1_000_000) : null,
    ratePerSec: args.int("--rate", 0, 0, 100_000_000),
  };
}

export async function topicProduce(args: CommandArgs): Promise<number> {
  const [topic] = args.expect(["TOPIC"]);
  const settings = produceSettings(args);
  const acks = parseAcks(args.get("--acks"));
  const compression = parseCompression(args.get("--compression"));
  const file = args.get("--file");
  if (file !== undefined && !(await Bun.file(file).exists())) {
    throw new UsageError(`--file ${file}: no such file`);
  }
  return withClient(args, async (client) => {
    const [info] = await describeTopics(client, [topic]);
    if (settings.partition !== null && settings.partition >= info!.partitions.length) {
      throw new ClusterError(3, `for ${topic} partition ${settings.partition}`);
    }
    const producer = new Producer(client, info!, {
      acks,
      compression,
      batchBytes: 256 * 1024,
      maxInFlight: 5,
      timeoutMs: 30_000,
      ...producerRetryOptions(args, acks),
    });
    await producer.init();
    const stream = file === undefined ? Bun.stdin.stream() : Bun.file(file).stream();
    // Lines typed at a terminal go out within LINGER_MS, as kcat's do, not at end of input.
    const linger = setInterval(() => void producer.sendPending().catch(() => {}), LINGER_MS);
    let count: number;
    try {
      count = await produceLines(producer, lines(stream), settings);
    } finally {
      clearInterval(linger);
    }
    await producer.flush();
    if (outputFormat(args) === "json") printJson({ topic, records: count });
    else process.stderr.write(`produced ${count} records to ${topic}\n`);
    return 0;
  });
}

async function produceLines(
  producer: Producer,
  input: AsyncGenerator<string>,
  settings: ProduceSettings,
): Promise<number> {
  const encoder = new TextEncoder();
  const started = performance.now();
  let count = 0;
  for await (const line of input) {
    const at = settings.separator === null ? -1 : line.indexOf(settings.separator);
    const key = at < 0 ? null : encoder.encode(line.slice(0, at));
    const value = encoder.encode(at < 0 ? line : line.slice(at + settings.separator!.length));
    await producer.send({ key, value, headers: settings.headers }, settings.partition);
    count++;
    if (settings.ratePerSec > 0) {
      const dueMs = started + (count * 1000) / settings.ratePerSec;
      const waitMs = dueMs - performance.now();
      if (waitMs > 1) {
        await producer.sendPending();
        await Bun.sleep(waitMs);
      }
    }
  }
  return count;
}
