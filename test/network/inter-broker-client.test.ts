/**
 * The inter-broker client against a real broker over TCP: pipelined requests answered in
 * order, a multi-megabyte request written whole through short writes, and the failures a
 * caller retries on (refused connection, a peer that never answers).
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { InterBrokerClient, InterBrokerError } from "../../src/network/inter-broker-client.ts";
import { ErrorCode } from "../../src/protocol/errors.ts";
import {
  ApiKey,
  encodeResponse,
  encodeResponseHeader,
} from "../../src/protocol/generated/index.ts";
import { buildRecordBatch } from "../../src/protocol/record-batch.ts";
import { Writer } from "../../src/protocol/writer.ts";
import { startTestBroker, type TestBroker } from "../support/kafka-client.ts";
import { freePorts } from "../support/zookeeper-server.ts";

const OPTIONS = { clientId: "inter-broker-test", connectTimeoutMs: 2_000 };
let b: TestBroker;

beforeAll(async () => {
  b = await startTestBroker();
}, 60_000);

afterAll(async () => {
  await b.stop();
});

async function failure(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  return null;
}

test("pipelined requests of different APIs come back in order, decoded", async () => {
  const client = await InterBrokerClient.connect("127.0.0.1", b.port, OPTIONS);
  try {
    const answers = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        i % 2 === 0
          ? client
              .request(
                ApiKey.ApiVersions,
                3,
                { clientSoftwareName: "t", clientSoftwareVersion: "1" },
                5_000,
              )
              .then((r) => `versions:${r.errorCode}:${r.apiKeys.length > 10}`)
          : client
              .request(ApiKey.Metadata, 12, { topics: null }, 5_000)
              .then((r) => `metadata:${r.brokers[0]!.port}`),
      ),
    );
    answers.forEach((answer, i) => {
      expect(answer).toBe(i % 2 === 0 ? "versions:0:true" : `metadata:${b.port}`);
    });
  } finally {
    client.close();
  }
});

test("a 3 MB produce request is written whole (the broker answers it)", async () => {
  const client = await InterBrokerClient.connect("127.0.0.1", b.port, OPTIONS);
  try {
    const records = buildRecordBatch([{ value: new Uint8Array(3 * 1024 * 1024).fill(7) }]);
    const res = await client.request(
      ApiKey.Produce,
      9,
      {
        transactionalId: null,
        acks: 1,
        timeoutMs: 5_000,
        topicData: [{ name: "big", partitionData: [{ index: 0, records }] }],
      },
      10_000,
    );
    // The topic does not exist; that the broker could say so proves every byte arrived.
    expect(res.responses[0]!.partitionResponses[0]!.errorCode).toBe(
      ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    );
    const after = await client.request(ApiKey.Metadata, 12, { topics: null }, 5_000);
    expect(after.brokers).toHaveLength(1);
  } finally {
    client.close();
  }
});

test("a refused connection and a silent peer are InterBrokerErrors", async () => {
  const [unused] = await freePorts(1);
  expect(await failure(InterBrokerClient.connect("127.0.0.1", unused!, OPTIONS))).toBeInstanceOf(
    InterBrokerError,
  );
  const silent = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
  try {
    const client = await InterBrokerClient.connect("127.0.0.1", silent.port, OPTIONS);
    const startedMs = Date.now();
    const error = await failure(client.request(ApiKey.Metadata, 12, { topics: null }, 300));
    expect(error).toBeInstanceOf(InterBrokerError);
    expect(Date.now() - startedMs).toBeGreaterThanOrEqual(290);
    expect(client.isClosed).toBe(true);
    expect(
      await failure(client.request(ApiKey.Metadata, 12, { topics: null }, 300)),
    ).toBeInstanceOf(InterBrokerError);
  } finally {
    silent.stop(true);
  }
});

/** A peer that answers each ApiVersions v0 request with `apiKeys` entries, cut into `pieces`. */
function slicingPeer(apiKeys: number, pieces: (frame: Uint8Array) => Uint8Array[]) {
  return Bun.listen({
    hostname: "127.0.0.1",
    port: 0,
    socket: {
      async data(socket, request) {
        const correlationId = new DataView(request.buffer, request.byteOffset).getInt32(8);
        const w = new Writer();
        w.int32(0);
        encodeResponseHeader(w, ApiKey.ApiVersions, 0, correlationId);
        encodeResponse(ApiKey.ApiVersions, 0, w, {
          errorCode: 0,
          apiKeys: Array.from({ length: apiKeys }, (_, i) => ({
            apiKey: i,
            minVersion: 0,
            maxVersion: 1,
          })),
        });
        const frame = w.toBytes();
        new DataView(frame.buffer, frame.byteOffset).setInt32(0, frame.byteLength - 4);
        for (const piece of pieces(frame)) {
          socket.write(piece);
          socket.flush();
          await Bun.sleep(1);
        }
      },
    },
  });
}

test("a response whose size prefix and body arrive in many reads is decoded whole", async () => {
  const cuts = (frame: Uint8Array) => [
    frame.subarray(0, 1),
    frame.subarray(1, 4),
    ...Array.from({ length: 8 }, (_, i) =>
      frame.subarray(
        4 + Math.floor(((frame.length - 4) * i) / 8),
        4 + Math.floor(((frame.length - 4) * (i + 1)) / 8),
      ),
    ),
  ];
  const peer = slicingPeer(20_000, cuts);
  const client = await InterBrokerClient.connect("127.0.0.1", peer.port, OPTIONS);
  try {
    for (let i = 0; i < 3; i++) {
      const answer = await client.request(ApiKey.ApiVersions, 0, {}, 5_000);
      expect(answer.apiKeys).toHaveLength(20_000);
      expect(answer.apiKeys[19_999]).toEqual({ apiKey: 19_999, minVersion: 0, maxVersion: 1 });
    }
  } finally {
    client.close();
    peer.stop(true);
  }
});

test("a produce sent without response leaves later answers matched to their requests", async () => {
  const client = await InterBrokerClient.connect("127.0.0.1", b.port, OPTIONS);
  try {
    const records = buildRecordBatch([{ value: new Uint8Array(10) }]);
    client.sendWithoutResponse(ApiKey.Produce, 9, {
      acks: 0,
      timeoutMs: 5_000,
      topicData: [{ name: "no-answer", partitionData: [{ index: 0, records }] }],
    });
    const after = await client.request(ApiKey.Metadata, 12, { topics: null }, 5_000);
    expect(after.brokers).toHaveLength(1);
    expect(client.unsentBytes).toBe(0);
  } finally {
    client.close();
  }
});
