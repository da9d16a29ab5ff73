// `bun scripts/bench-null-broker.ts [--partitions 10000] [--records 2000000]`
//
// How fast bench-vs-kafka's scale producer (rdkafka-scale.c, librdkafka) can go when the broker
// costs nothing: a stand-in broker that answers ApiVersions, Metadata (100 topics named p-t<i>,
// partitions/100 each, all led by itself) and Produce (every partition NONE, offsets counted per
// partition, nothing stored) and does nothing else. Run against it, the producer's records/s is
// the client's own ceiling at that partition count; beside bench-partitions.ts
// --produce-records (the same producer against Quill) it says how much of the time the broker
// takes. Prints one JSON line with the load average and both processes' CPU seconds.
import type { Socket } from "bun";
import { FrameDecoder } from "../src/network/frame-decoder.ts";
import {
  ApiKey,
  decodeRequest,
  decodeRequestHeader,
  encodeResponse,
  encodeResponseHeader,
} from "../src/protocol/generated/index.ts";
import { Reader } from "../src/protocol/reader.ts";
import { Writer } from "../src/protocol/writer.ts";
import { compileRdkafkaProgram, cpuSeconds, loadAverage, numberOption } from "./bench-common.ts";

const TOPICS = 100;
const FRAME_MAX_BYTES = 100 * 1024 * 1024;
/** The versions answered: what librdkafka 2.0 asks for, each within what the codecs speak. */
const VERSIONS: Record<number, [number, number]> = {
  [ApiKey.Produce]: [0, 9],
  [ApiKey.Metadata]: [0, 9],
  [ApiKey.ApiVersions]: [0, 3],
};

const partitions = numberOption("--partitions", 10_000);
const records = numberOption("--records", 2_000_000);
const perTopic = partitions / TOPICS;
if (!Number.isInteger(perTopic) || perTopic <= 0) {
  throw new Error(`--partitions ${partitions}: not a positive multiple of ${TOPICS}`);
}
const nextOffsets = new Map<string, bigint>();
let produceRequests = 0;

function answer(apiKey: number, request: Record<string, unknown>, port: number): object {
  if (apiKey === ApiKey.ApiVersions) {
    const apiKeys = Object.entries(VERSIONS).map(([key, [minVersion, maxVersion]]) => ({
      apiKey: Number(key),
      minVersion,
      maxVersion,
    }));
    return { errorCode: 0, apiKeys, throttleTimeMs: 0 };
  }
  if (apiKey === ApiKey.Metadata) return metadata(request, port);
  produceRequests++;
  const topicData = request.topicData as {
    name: string;
    partitionData: { index: number; records: Uint8Array | null }[];
  }[];
  return {
    responses: topicData.map((t) => ({
      name: t.name,
      partitionResponses: t.partitionData.map((p) => {
        const key = `${t.name}-${p.index}`;
        const baseOffset = nextOffsets.get(key) ?? 0n;
        const count =
          p.records === null
            ? 0
            : new DataView(p.records.buffer).getInt32(p.records.byteOffset + 57);
        nextOffsets.set(key, baseOffset + BigInt(count));
        const base = { index: p.index, errorCode: 0, baseOffset, logAppendTimeMs: -1n };
        return { ...base, logStartOffset: 0n, errorMessage: null };
      }),
    })),
    throttleTimeMs: 0,
  };
}

function metadata(request: Record<string, unknown>, port: number): object {
  const asked = request.topics as { name: string }[] | null;
  const names = asked?.map((t) => t.name) ?? Array.from({ length: TOPICS }, (_, i) => `p-t${i}`);
  const partition = (index: number) => ({
    errorCode: 0,
    partitionIndex: index,
    leaderId: 0,
    leaderEpoch: 0,
    replicaNodes: [0],
    isrNodes: [0],
    offlineReplicas: [],
  });
  return {
    throttleTimeMs: 0,
    brokers: [{ nodeId: 0, host: "127.0.0.1", port, rack: null }],
    clusterId: "null-broker",
    controllerId: 0,
    topics: names.map((name) => ({
      errorCode: /^p-t\d+$/.test(name) ? 0 : 3,
      name,
      topicId: new Uint8Array(16),
      isInternal: false,
      partitions: /^p-t\d+$/.test(name)
        ? Array.from({ length: perTopic }, (_, i) => partition(i))
        : [],
      topicAuthorizedOperations: -2147483648,
    })),
    clusterAuthorizedOperations: -2147483648,
    errorCode: 0,
  };
}

/** The responses to one `data` event's requests go out in one write, as Quill's do. */
function onFrame(out: Uint8Array[], frame: Uint8Array, port: number): void {
  const r = new Reader(frame);
  const header = decodeRequestHeader(r);
  const { requestApiKey: apiKey, requestApiVersion: version } = header;
  const range = VERSIONS[apiKey];
  if (range === undefined || version > range[1])
    throw new Error(`unexpected API ${apiKey} v${version}`);
  const body = answer(apiKey, decodeRequest(apiKey as never, version, r) as never, port);
  const w = new Writer(1024);
  encodeResponseHeader(w, apiKey, version, header.correlationId);
  encodeResponse(apiKey, version, w, body);
  const chunks = w.finish() as Uint8Array[];
  const size = new Uint8Array(4);
  new DataView(size.buffer).setInt32(
    0,
    chunks.reduce((sum, c) => sum + c.length, 0),
  );
  out.push(size, ...chunks);
}

/** Writes what the socket takes now and the rest when it drains, in order. */
function send(socket: Socket<FrameDecoder>, bytes: Uint8Array): void {
  const queued = pending.get(socket);
  if (queued !== undefined) {
    queued.push(bytes);
    return;
  }
  const written = socket.write(bytes);
  if (written < bytes.length) pending.set(socket, [bytes.subarray(Math.max(0, written))]);
}

const pending = new Map<Socket<FrameDecoder>, Uint8Array[]>();

const server = Bun.listen<FrameDecoder>({
  hostname: "127.0.0.1",
  port: 0,
  socket: {
    open(socket) {
      socket.data = new FrameDecoder(FRAME_MAX_BYTES);
    },
    drain(socket) {
      const queued = pending.get(socket);
      if (queued === undefined) return;
      pending.delete(socket);
      for (const bytes of queued) send(socket, bytes);
    },
    data(socket, data) {
      socket.data.push(data);
      const out: Uint8Array[] = [];
      for (let frame = socket.data.next(); frame !== null; frame = socket.data.next()) {
        if (!(frame instanceof Uint8Array)) throw new Error("oversized frame");
        try {
          onFrame(out, frame, server.port);
        } catch (error) {
          console.error(`null broker: ${String(error)}`);
          socket.end();
        }
      }
      if (out.length > 0) send(socket, Buffer.concat(out));
    },
  },
});

const program = compileRdkafkaProgram(`${import.meta.dir}/bench-vs-kafka/rdkafka-scale.c`);
if ("error" in program) throw new Error(program.error);
const loadBefore = loadAverage();
const brokerCpuBefore = cpuSeconds(process.pid);
const argv = [program.path, "produce", `127.0.0.1:${server.port}`, "p-t", String(TOPICS)];
argv.push(String(perTopic), String(records), "100");
const proc = Bun.spawn(argv, { stdin: "ignore", stdout: "pipe", stderr: "inherit" });
const stdout = await new Response(proc.stdout).text();
if ((await proc.exited) !== 0) throw new Error(`rdkafka-scale produce failed: ${stdout}`);
const result = JSON.parse(stdout) as { records: number; seconds: number };
console.log(
  JSON.stringify({
    partitions,
    records: result.records,
    producePerSecond: Math.round(result.records / result.seconds),
    produceSeconds: Number(result.seconds.toFixed(2)),
    nullBrokerCpuS: Number((cpuSeconds(process.pid) - brokerCpuBefore).toFixed(2)),
    clientCpuS: Number((Number(proc.resourceUsage()!.cpuTime.total) / 1e6).toFixed(2)),
    produceRequests,
    loadBefore,
    loadAfter: loadAverage(),
  }),
);
server.stop(true);
