/**
 * Captures the request bytes real clients send, for the golden protocol tests:
 *
 *   bun scripts/capture-requests.ts
 *
 * It starts a small capture broker on 127.0.0.1 that answers every request with the generated
 * encoders (ApiVersions from API_SPECS; Metadata naming itself as leader of every topic asked
 * for; everything else a response with default values, i.e. no error), then drives kcat
 * (librdkafka) and kafkajs through metadata, produce, consume and admin calls. The first frame of
 * each API version each client sends is written to
 * `test/fixtures/<api>/v<N>_request.<client>.hex` as hex of the bytes after the size prefix.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import type { Socket, TCPSocketListener } from "bun";
import { Kafka, logLevel } from "kafkajs";
import {
  API_SPECS,
  ApiKey,
  decodeRequest,
  decodeRequestHeader,
  encodeConsumerProtocolAssignment,
  encodeResponse,
  encodeResponseHeader,
} from "../src/protocol/generated/index.ts";
import { Reader } from "../src/protocol/reader.ts";
import { Writer } from "../src/protocol/writer.ts";

const FIXTURES_DIR = resolve(import.meta.dir, "../test/fixtures");
export const GOLDEN_TOPIC = "golden";
const NODE_ID = 1;
const FRAME_MAX_BYTES = 16 * 1024 * 1024;

const kebab = (name: string): string => name.replace(/([a-z0-9])([A-Z])/g, "$1-$2").toLowerCase();

interface Captured {
  client: string;
  apiKey: number;
  apiVersion: number;
  frame: Uint8Array;
}

/** The response body for one request; unknown shapes get the all-defaults response. */
function respond(apiKey: number, apiVersion: number, request: unknown, port: number): object {
  if (apiKey === ApiKey.ApiVersions) {
    const apiKeys = API_SPECS.filter((s) => s.maxVersion >= s.minVersion).map((s) => ({
      apiKey: s.apiKey,
      minVersion: s.minVersion,
      maxVersion: s.maxVersion,
    }));
    return { errorCode: 0, apiKeys };
  }
  if (apiKey === ApiKey.Metadata) {
    const asked = (request as { topics: { name: string | null }[] | null }).topics;
    const names =
      asked === null || asked.length === 0
        ? [GOLDEN_TOPIC]
        : asked.map((t) => t.name ?? GOLDEN_TOPIC);
    return {
      brokers: [{ nodeId: NODE_ID, host: "127.0.0.1", port }],
      clusterId: "capture-cluster",
      controllerId: NODE_ID,
      topics: names.map((name) => ({
        name,
        topicId: new Uint8Array(16).fill(7),
        partitions: [
          {
            partitionIndex: 0,
            leaderId: NODE_ID,
            leaderEpoch: 0,
            replicaNodes: [NODE_ID],
            isrNodes: [NODE_ID],
          },
        ],
      })),
    };
  }
  if (apiKey === ApiKey.Produce) {
    type Topic = { name: string; partitionData: { index: number }[] };
    const topics = (request as { topicData: Topic[] }).topicData;
    return {
      responses: topics.map((t) => ({
        name: t.name,
        partitionResponses: t.partitionData.map((p) => ({ index: p.index, baseOffset: 0n })),
      })),
    };
  }
  if (apiKey === ApiKey.ListOffsets) {
    type Topic = { name: string; partitions: { partitionIndex: number }[] };
    const topics = (request as { topics: Topic[] }).topics;
    return {
      topics: topics.map((t) => ({
        name: t.name,
        partitions: t.partitions.map((p) => ({
          partitionIndex: p.partitionIndex,
          offset: 0n,
          timestamp: -1n,
          oldStyleOffsets: apiVersion === 0 ? [0n] : [],
        })),
      })),
    };
  }
  if (apiKey === ApiKey.Fetch) {
    const topics = (
      request as {
        topics: { topic: string; topicId: Uint8Array; partitions: { partition: number }[] }[];
      }
    ).topics;
    return {
      responses: topics.map((t) => ({
        topic: t.topic,
        topicId: t.topicId,
        partitions: t.partitions.map((p) => ({
          partitionIndex: p.partition,
          highWatermark: 0n,
          lastStableOffset: 0n,
          logStartOffset: 0n,
          records: new Uint8Array(0),
        })),
      })),
    };
  }
  if (apiKey === ApiKey.FindCoordinator) {
    const keys = (request as { coordinatorKeys: string[] }).coordinatorKeys;
    return apiVersion < 4
      ? { nodeId: NODE_ID, host: "127.0.0.1", port }
      : { coordinators: keys.map((key) => ({ key, nodeId: NODE_ID, host: "127.0.0.1", port })) };
  }
  if (apiKey === ApiKey.JoinGroup) {
    // The one member leads the group and is told its own subscription back.
    const { protocols } = request as { protocols: { name: string; metadata: Uint8Array }[] };
    const memberId = "member-1";
    return {
      generationId: 1,
      protocolType: "consumer",
      protocolName: protocols[0]!.name,
      leader: memberId,
      memberId,
      members: [{ memberId, metadata: protocols[0]!.metadata }],
    };
  }
  if (apiKey === ApiKey.SyncGroup) {
    const w = new Writer();
    w.int16(0);
    encodeConsumerProtocolAssignment(w, 0, {
      assignedPartitions: [{ topic: GOLDEN_TOPIC, partitions: [0] }],
    });
    return { protocolType: "consumer", protocolName: "range", assignment: w.toBytes() };
  }
  return {};
}

/** A broker that records every frame and answers with the generated encoders. */
export class CaptureBroker {
  client = "unknown";
  readonly captured: Captured[] = [];
  private server: TCPSocketListener<{ pending: Uint8Array }> | undefined;

  start(): number {
    this.server = Bun.listen<{ pending: Uint8Array }>({
      hostname: "127.0.0.1",
      port: 0,
      socket: {
        open: (s) => {
          s.data = { pending: new Uint8Array(0) };
        },
        data: (s, chunk) => this.onData(s, chunk),
      },
    });
    return this.server.port;
  }

  stop(): void {
    this.server?.stop(true);
  }

  private onData(s: Socket<{ pending: Uint8Array }>, chunk: Uint8Array): void {
    let buf = new Uint8Array(s.data.pending.length + chunk.length);
    buf.set(s.data.pending);
    buf.set(chunk, s.data.pending.length);
    while (buf.length >= 4) {
      const sizeBytes = new DataView(buf.buffer, buf.byteOffset).getInt32(0);
      if (sizeBytes < 0 || sizeBytes > FRAME_MAX_BYTES) {
        s.end();
        return;
      }
      if (buf.length < 4 + sizeBytes) break;
      try {
        this.onFrame(s, buf.slice(4, 4 + sizeBytes));
      } catch (e) {
        console.error(`${this.client}: cannot answer a frame: ${String(e)}`);
        s.end();
        return;
      }
      buf = buf.subarray(4 + sizeBytes);
    }
    s.data.pending = buf.slice();
  }

  private onFrame(s: Socket<{ pending: Uint8Array }>, frame: Uint8Array): void {
    const r = new Reader(frame);
    const header = decodeRequestHeader(r);
    const { requestApiKey: apiKey, requestApiVersion: apiVersion } = header;
    const request = decodeRequest(apiKey, apiVersion, r);
    // Phases of one client ("kcat", "kcat-group") share one set of fixtures.
    const client = this.client.split("-")[0]!;
    if (
      !this.captured.some(
        (c) => c.client === client && c.apiKey === apiKey && c.apiVersion === apiVersion,
      )
    ) {
      this.captured.push({ client, apiKey, apiVersion, frame });
    }
    const acks = (request as { acks?: number }).acks;
    if (apiKey === ApiKey.Produce && acks === 0) return;
    const w = new Writer();
    const sizeAt = w.reserve(4);
    encodeResponseHeader(w, apiKey, apiVersion, header.correlationId);
    encodeResponse(apiKey, apiVersion, w, respond(apiKey, apiVersion, request, this.server!.port));
    w.patchInt32(sizeAt, w.length - 4);
    s.write(w.toBytes());
  }
}

async function runKcat(port: number, args: string[], stdin?: string): Promise<void> {
  const proc = Bun.spawn(["kcat", "-b", `127.0.0.1:${port}`, ...args], {
    stdin: stdin === undefined ? "ignore" : new TextEncoder().encode(stdin),
    stdout: "pipe",
    stderr: "pipe",
  });
  const timer = setTimeout(() => proc.kill(), 10_000);
  await proc.exited;
  clearTimeout(timer);
}

async function runKafkajs(port: number): Promise<void> {
  const kafka = new Kafka({
    clientId: "quill-golden",
    brokers: [`127.0.0.1:${port}`],
    logLevel: logLevel.NOTHING,
    retry: { retries: 0 },
  });
  const producer = kafka.producer({ allowAutoTopicCreation: false });
  await producer.connect();
  await producer.send({
    topic: GOLDEN_TOPIC,
    acks: -1,
    messages: [{ key: "k1", value: "hello", headers: { h: "v" }, timestamp: "1700000000000" }],
  });
  await producer.disconnect();
  const admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({ topics: [{ topic: "created", numPartitions: 3 }] }).catch(() => {});
  await admin.fetchTopicOffsets(GOLDEN_TOPIC).catch(() => {});
  await admin.disconnect();
  const consumer = kafka.consumer({ groupId: "golden-group", retry: { retries: 0 } });
  await consumer.connect();
  await consumer.subscribe({ topic: GOLDEN_TOPIC, fromBeginning: true });
  await consumer.run({ eachMessage: async () => {} });
  await Bun.sleep(3000);
  await consumer.disconnect();
}

/** librdkafka's admin API through confluent-kafka-python (Debian's python3-confluent-kafka). */
async function runPythonAdmin(port: number): Promise<void> {
  const script = `
from confluent_kafka.admin import AdminClient, NewTopic, NewPartitions, ConfigResource
a = AdminClient({"bootstrap.servers": "127.0.0.1:${port}", "client.id": "quill-golden"})
def wait(fs):
    for f in fs.values():
        try: f.result(timeout=5)
        except Exception: pass
wait(a.create_topics([NewTopic("created", 3, 1)], request_timeout=5))
wait(a.create_partitions([NewPartitions("created", 6)], request_timeout=5))
wait(a.describe_configs([ConfigResource("topic", "${GOLDEN_TOPIC}")], request_timeout=5))
wait(a.delete_topics(["created"], request_timeout=5))
a.list_groups(timeout=5)
`;
  const proc = Bun.spawn(["/usr/bin/python3", "-c", script], { stdout: "pipe", stderr: "pipe" });
  const timer = setTimeout(() => proc.kill(), 30_000);
  await proc.exited;
  clearTimeout(timer);
}

async function main(): Promise<void> {
  const broker = new CaptureBroker();
  const port = broker.start();
  try {
    broker.client = "kcat";
    await runKcat(port, ["-L"]);
    await runKcat(port, ["-P", "-t", GOLDEN_TOPIC, "-K", ":", "-z", "none"], "k1:hello\n");
    await runKcat(port, ["-C", "-t", GOLDEN_TOPIC, "-p", "0", "-o", "beginning", "-c", "1", "-e"]);
    broker.client = "kcat-group";
    await runKcat(port, ["-G", "golden-group", "-o", "beginning", "-e", GOLDEN_TOPIC]);
    broker.client = "kafkajs";
    await runKafkajs(port);
    broker.client = "librdkafka-admin";
    await runPythonAdmin(port);
  } finally {
    broker.stop();
  }
  for (const c of broker.captured) {
    const dir = join(FIXTURES_DIR, kebab(API_SPECS[c.apiKey]!.name));
    mkdirSync(dir, { recursive: true });
    const file = join(dir, `v${c.apiVersion}_request.${c.client}.hex`);
    writeFileSync(file, `${Buffer.from(c.frame).toString("hex")}\n`);
    console.log(`captured ${file} (${c.frame.length} bytes)`);
  }
}

if (import.meta.main) await main();
