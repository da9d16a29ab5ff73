/**
 * Test support for API tests: a tiny raw Kafka client (one TCP connection, requests encoded with
 * the generated codecs at any version, responses decoded in order) and an in-process broker on
 * port 0 with a temporary data dir. Raw requests let a test pin each API version, which real
 * clients never do.
 */

import * as fs from "node:fs";
import net from "node:net";
import * as os from "node:os";
import * as path from "node:path";
import { type RunningBroker, startBroker } from "../../src/broker/broker.ts";
import { type FlagSetting, loadConfig } from "../../src/config/load-config.ts";
import {
  ApiKey,
  type ApiKeyNumber,
  type ApiMessages,
  decodeResponse,
  decodeResponseHeader,
  encodeRequest,
  encodeRequestHeader,
  type Init,
} from "../../src/protocol/generated/index.ts";
import { Reader } from "../../src/protocol/reader.ts";
import { Writer } from "../../src/protocol/writer.ts";
import { SILENT_LOGGER } from "../../src/util/logger.ts";

interface Pending {
  readonly apiKey: number;
  readonly apiVersion: number;
  readonly correlationId: number;
  readonly resolve: (body: unknown) => void;
  readonly reject: (error: Error) => void;
}

/** One connection; requests may be pipelined, responses are matched in order. */
export class KafkaClient {
  private buffered = Buffer.alloc(0);
  private readonly pending: Pending[] = [];
  private nextCorrelationId = 1;
  private closedError: Error | null = null;
  /** The client-id in the header of every request sent from now on. */
  clientId: string | null = "quill-test";

  private constructor(private readonly socket: net.Socket) {
    socket.setNoDelay(true);
    socket.on("data", (data: Buffer) => this.onData(data));
    socket.on("error", () => {});
    socket.on("close", () => this.failAll(new Error("connection closed by the broker")));
  }

  static connect(port: number, host = "127.0.0.1"): Promise<KafkaClient> {
    return new Promise((resolve, reject) => {
      const socket = net.connect({ port, host }, () => resolve(new KafkaClient(socket)));
      socket.once("error", reject);
    });
  }

  /** Writes bytes as they are, e.g. a frame no encoder would produce. */
  sendRaw(bytes: Uint8Array): void {
    this.socket.write(bytes);
  }

  /** Sends one request at `apiVersion` and resolves with its decoded response body. */
  request<K extends ApiKeyNumber>(
    apiKey: K,
    apiVersion: number,
    body: Init<ApiMessages[K]["request"]>,
  ): Promise<ApiMessages[K]["response"]> {
    if (this.closedError !== null) return Promise.reject(this.closedError);
    const correlationId = this.nextCorrelationId++;
    const w = new Writer();
    w.int32(0);
    encodeRequestHeader(w, {
      requestApiKey: apiKey,
      requestApiVersion: apiVersion,
      correlationId,
      clientId: this.clientId,
    });
    encodeRequest(apiKey, apiVersion, w, body);
    const frame = Buffer.from(w.toBytes());
    frame.writeInt32BE(frame.length - 4, 0);
    return new Promise((resolve, reject) => {
      this.pending.push({
        apiKey,
        apiVersion,
        correlationId,
        reject,
        resolve: resolve as (body: unknown) => void,
      });
      this.socket.write(frame);
    });
  }

  close(): void {
    this.socket.destroy();
  }

  private onData(data: Buffer): void {
    this.buffered = Buffer.concat([this.buffered, data]);
    while (this.buffered.length >= 4) {
      const sizeBytes = this.buffered.readInt32BE(0);
      if (this.buffered.length < 4 + sizeBytes) return;
      const frame = this.buffered.subarray(4, 4 + sizeBytes);
      this.buffered = this.buffered.subarray(4 + sizeBytes);
      this.deliver(frame);
    }
  }

  private deliver(frame: Uint8Array): void {
    const p = this.pending.shift();
    if (p === undefined) throw new Error("response without a request");
    try {
      const r = new Reader(frame);
      const correlationId = decodeResponseHeader(r, p.apiKey, p.apiVersion);
      if (correlationId !== p.correlationId) {
        throw new Error(`correlation id ${correlationId}, expected ${p.correlationId}`);
      }
      const body = decodeResponse(p.apiKey as ApiKeyNumber, p.apiVersion, r);
      if (r.remaining() !== 0) throw new Error(`${r.remaining()} bytes left after the response`);
      p.resolve(body);
    } catch (e) {
      p.reject(e as Error);
    }
  }

  private failAll(error: Error): void {
    this.closedError = error;
    for (const p of this.pending.splice(0)) p.reject(error);
  }
}

/**
 * Fetches partition 0 of `topic` from `offset` (Fetch v12, no wait, up to 1 MiB, read_uncommitted,
 * no session) and returns that partition's response.
 */
export async function fetchPartition0(client: KafkaClient, topic: string, offset: bigint) {
  const partition = {
    partition: 0,
    fetchOffset: offset,
    currentLeaderEpoch: -1,
    logStartOffset: -1n,
    partitionMaxBytes: 1 << 20,
  };
  const res = await client.request(ApiKey.Fetch, 12, {
    replicaId: -1,
    maxWaitMs: 0,
    minBytes: 1,
    maxBytes: 1 << 20,
    isolationLevel: 0,
    sessionId: 0,
    sessionEpoch: -1,
    topics: [{ topic, partitions: [partition] }],
  });
  return res.responses[0]!.partitions[0]!;
}

/** An acknowledgement batch of ShareFetch or ShareAcknowledge. */
export interface ShareAck {
  readonly firstOffset: bigint;
  readonly lastOffset: bigint;
  readonly acknowledgeTypes: number[];
}

export interface ShareFetchOfPartition0 {
  readonly groupId: string;
  readonly memberId: string;
  readonly topicId: Uint8Array;
  readonly epoch: number;
  readonly maxWaitMs: number;
  readonly acks?: readonly ShareAck[];
  /** maxRecords and batchSize (100 by default). */
  readonly maxRecords?: number;
}

/**
 * ShareFetch v1 of partition 0 of one topic (min 1 byte, up to 1 MiB), with the member's
 * acknowledgements; the whole response.
 */
export function shareFetchPartition0(client: KafkaClient, f: ShareFetchOfPartition0) {
  const maxRecords = f.maxRecords ?? 100;
  return client.request(ApiKey.ShareFetch, 1, {
    groupId: f.groupId,
    memberId: f.memberId,
    shareSessionEpoch: f.epoch,
    maxWaitMs: f.maxWaitMs,
    minBytes: 1,
    maxBytes: 1 << 20,
    maxRecords,
    batchSize: maxRecords,
    topics: [
      {
        topicId: f.topicId,
        partitions: [{ partitionIndex: 0, acknowledgementBatches: [...(f.acks ?? [])] }],
      },
    ],
  });
}

/** The records a ShareFetch response acquired, over all its partitions. */
export function acquiredRecords(res: Awaited<ReturnType<typeof shareFetchPartition0>>) {
  return res.responses.flatMap((t) => t.partitions.flatMap((p) => p.acquiredRecords));
}

/** Opens a connection, sends one request, closes. */
export async function requestOnce<K extends ApiKeyNumber>(
  port: number,
  apiKey: K,
  apiVersion: number,
  body: Init<ApiMessages[K]["request"]>,
): Promise<ApiMessages[K]["response"]> {
  const client = await KafkaClient.connect(port);
  try {
    return await client.request(apiKey, apiVersion, body);
  } finally {
    client.close();
  }
}

export interface TestBroker {
  readonly dataDir: string;
  readonly port: number;
  readonly broker: RunningBroker;
  /** Stops cleanly and starts again on the same data dir (a new port). */
  restart(): Promise<TestBroker>;
  /** Stops and removes the data dir. */
  stop(): Promise<void>;
}

/**
 * Starts a real broker in this process on 127.0.0.1 port 0 with a temporary data dir.
 * `settings` are extra broker keys, e.g. `{ "delete.topic.enable": "false" }`.
 */
export async function startTestBroker(
  settings: Readonly<Record<string, string>> = {},
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "quill-api-")),
): Promise<TestBroker> {
  const flags: FlagSetting[] = [
    { key: "listeners", value: "127.0.0.1:0", flag: "--listen" },
    { key: "log.dirs", value: dataDir, flag: "--data-dir" },
    ...Object.entries(settings).map(([key, value]) => ({ key, value, flag: "--set" })),
  ];
  const { config } = loadConfig({ flags });
  const broker = await startBroker(config, SILENT_LOGGER);
  return {
    dataDir,
    port: broker.port,
    broker,
    async restart() {
      await broker.stop();
      return startTestBroker(settings, dataDir);
    },
    async stop() {
      await broker.stop();
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
