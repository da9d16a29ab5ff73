// The chaos harness's client (scripts/chaos.ts starts it inside the clients' network namespace):
// `bun scripts/chaos-harness/client.ts <bootstrap host:port,...> <topic> <partitions> <out dir>`.
//
// A producer per partition sends one record at a time with acks=all to its leader, never
// resending a value (a retry gets a new value, so a value stored twice is a broker's fault), and
// appends every acknowledgement to acked.jsonl. A consumer fetches each partition up to its high
// watermark and appends what it read to read.jsonl, commits its position for group
// "chaos-checker" and appends each committed offset read back to commits.jsonl. It runs until
// SIGTERM.
import { appendFileSync } from "node:fs";
import { join } from "node:path";
import { ErrorCode } from "../../src/protocol/errors.ts";
import { ApiKey } from "../../src/protocol/generated/index.ts";
import {
  batchSizeBytes,
  buildRecordBatch,
  decodeRecords,
  readBatchHeader,
} from "../../src/protocol/record-batch.ts";
import { KafkaClient } from "../../test/support/kafka-client.ts";

const REQUEST_TIMEOUT_MS = 5_000;
const [bootstrapText, topic, partitionsText, outDir] = process.argv.slice(2);
const bootstrap = bootstrapText!.split(",").map((hp) => {
  const [host, port] = hp.split(":");
  return { host: host!, port: Number(port) };
});
const partitions = Number(partitionsText);
let running = true;
process.on("SIGTERM", () => {
  running = false;
});

const clients = new Map<string, KafkaClient>();

/** One request to host:port with a deadline; the connection is dropped on any failure. */
async function request<K extends Parameters<KafkaClient["request"]>[0]>(
  host: string,
  port: number,
  apiKey: K,
  version: number,
  body: Parameters<KafkaClient["request"]>[2],
) {
  const key = `${host}:${port}`;
  let client = clients.get(key);
  try {
    if (client === undefined) {
      client = await withTimeout(KafkaClient.connect(port, host));
      clients.set(key, client);
    }
    return await withTimeout(client.request(apiKey, version, body as never));
  } catch (error) {
    client?.close();
    clients.delete(key);
    throw error;
  }
}

function withTimeout<T>(promise: Promise<T>): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error("timeout")), REQUEST_TIMEOUT_MS);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

type Endpoint = { host: string; port: number };

/**
 * Which bootstrap broker Metadata is asked first. A broker that fails a request moves it on, so
 * a broker that is cut off (and may answer with what it knew before) is not asked again and
 * again, as a Kafka client asks its least loaded node rather than always the same one.
 */
let metadataFrom = 0;

/** partition -> leader endpoint, from the first broker that answers Metadata. */
async function leaders(): Promise<Map<number, Endpoint>> {
  for (let i = 0; i < bootstrap.length; i++) {
    const b = bootstrap[(metadataFrom + i) % bootstrap.length]!;
    try {
      const m = await request(b.host, b.port, ApiKey.Metadata, 12, {
        topics: [{ name: topic }],
        allowAutoTopicCreation: false,
      });
      const nodes = new Map(m.brokers.map((n) => [n.nodeId, { host: n.host, port: n.port }]));
      const out = new Map<number, Endpoint>();
      for (const p of m.topics[0]?.partitions ?? []) {
        const node = nodes.get(p.leaderId);
        if (node !== undefined) out.set(p.partitionIndex, node);
      }
      return out;
    } catch {}
  }
  return new Map();
}

let sequence = 0;

/**
 * One partition's producer: one record at a time with acks=all to the leader it last learnt,
 * asking Metadata again only after a failure, as a Kafka producer does. Each partition has its
 * own loop, so a partition whose leader hangs does not hold up the others.
 */
async function produceLoop(partition: number): Promise<void> {
  let leader: Endpoint | undefined;
  while (running) {
    if (leader === undefined) leader = (await leaders()).get(partition);
    const value = `p${partition}-${sequence++}`;
    const sentAtMs = Date.now();
    try {
      if (leader === undefined) throw new Error("no leader");
      const records = buildRecordBatch([{ key: null, value: new TextEncoder().encode(value) }]);
      const r = await request(leader.host, leader.port, ApiKey.Produce, 9, {
        acks: -1,
        timeoutMs: REQUEST_TIMEOUT_MS,
        topicData: [{ name: topic, partitionData: [{ index: partition, records }] }],
      });
      const p = r.responses[0]!.partitionResponses[0]!;
      if (p.errorCode !== ErrorCode.NONE) throw new Error(`error ${p.errorCode}`);
      const line = { partition, offset: String(p.baseOffset), value, sentAtMs, atMs: Date.now() };
      appendFileSync(join(outDir!, "acked.jsonl"), `${JSON.stringify(line)}\n`);
    } catch (error) {
      const to = leader === undefined ? null : leader.host;
      const line = { partition, value, sentAtMs, atMs: Date.now(), to, error: String(error) };
      appendFileSync(join(outDir!, "failed.jsonl"), `${JSON.stringify(line)}\n`);
      leader = undefined;
      metadataFrom++;
      await Bun.sleep(50);
    }
  }
}

async function consumeOnce(
  partition: number,
  leader: { host: string; port: number },
  fetchOffset: bigint,
): Promise<bigint> {
  const r = await request(leader.host, leader.port, ApiKey.Fetch, 12, {
    replicaId: -1,
    maxWaitMs: 200,
    minBytes: 1,
    maxBytes: 1 << 20,
    topics: [{ topic, partitions: [{ partition, fetchOffset, partitionMaxBytes: 1 << 20 }] }],
  });
  const p = r.responses[0]!.partitions[0]!;
  if (p.errorCode !== ErrorCode.NONE) throw new Error(`fetch error ${p.errorCode}`);
  const bytes = (p.records as Uint8Array | null) ?? new Uint8Array(0);
  let position = 0;
  let next = fetchOffset;
  const lines: string[] = [];
  while (bytes.length - position >= 12) {
    const size = batchSizeBytes(bytes, position);
    if (position + size > bytes.length) break;
    const batch = bytes.subarray(position, position + size);
    const base = readBatchHeader(batch).baseOffset;
    for (const rec of decodeRecords(batch)) {
      const offset = base + BigInt(rec.offsetDelta);
      if (offset < fetchOffset) continue;
      const value = new TextDecoder().decode(rec.value!);
      lines.push(JSON.stringify({ partition, offset: String(offset), value }));
    }
    next = base + BigInt(readBatchHeader(batch).lastOffsetDelta) + 1n;
    position += size;
  }
  if (lines.length > 0) appendFileSync(join(outDir!, "read.jsonl"), `${lines.join("\n")}\n`);
  return next;
}

/** Commits `offset` for the partition and records what OffsetFetch then answers. */
async function commit(partition: number, offset: bigint): Promise<void> {
  const b = bootstrap[partition % bootstrap.length]!;
  const coordinator = await request(b.host, b.port, ApiKey.FindCoordinator, 3, {
    key: "chaos-checker",
    keyType: 0,
  });
  const { host, port } = coordinator;
  if (coordinator.errorCode !== ErrorCode.NONE) return;
  await request(host, port, ApiKey.OffsetCommit, 7, {
    groupId: "chaos-checker",
    generationIdOrMemberEpoch: -1,
    memberId: "",
    groupInstanceId: null,
    topics: [{ name: topic, partitions: [{ partitionIndex: partition, committedOffset: offset }] }],
  });
  const fetched = await request(host, port, ApiKey.OffsetFetch, 7, {
    groupId: "chaos-checker",
    topics: [{ name: topic, partitionIndexes: [partition] }],
    requireStable: false,
  });
  const committed = fetched.topics[0]?.partitions[0]?.committedOffset;
  if (committed === undefined) return;
  const line = { partition, committed: String(committed), atMs: Date.now() };
  appendFileSync(join(outDir!, "commits.jsonl"), `${JSON.stringify(line)}\n`);
}

async function consumeLoop(): Promise<void> {
  const positions = Array.from({ length: partitions }, () => 0n);
  for (let round = 0; running; round++) {
    const partition = round % partitions;
    try {
      const leader = (await leaders()).get(partition);
      if (leader === undefined) throw new Error("no leader");
      positions[partition] = await consumeOnce(partition, leader, positions[partition]!);
      if (round % 10 === 0) await commit(partition, positions[partition]!);
    } catch {
      await Bun.sleep(100);
    }
  }
}

const producers = Array.from({ length: partitions }, (_, p) => produceLoop(p));
await Promise.all([...producers, consumeLoop()]);
for (const client of clients.values()) client.close();
process.exit(0);
