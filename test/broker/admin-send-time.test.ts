/**
 * quill_response_send_duration_seconds (Kafka's ResponseSendTimeMs): every response is timed
 * once (as many Produce send times as Produce requests), and a consumer that stops reading
 * while a 24 MB fetch answer is being written shows a send time as long as it stalled: the
 * kernel takes a few MB, the rest waits for `drain`, and that wait is the send time.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import net from "node:net";
import { Kafka, logLevel } from "kafkajs";
import { ApiKey, encodeRequest, encodeRequestHeader } from "../../src/protocol/generated/index.ts";
import { Writer } from "../../src/protocol/writer.ts";
import { type InProcessBroker, startInProcessBroker } from "../support/broker-harness.ts";

const TOPIC = "sent";
const SENDS = 30;
const RECORD_BYTES = 100_000;
const RECORDS_PER_SEND = 8;
const STALL_MS = 1500;
let broker: InProcessBroker;
let admin: string;

beforeAll(async () => {
  broker = await startInProcessBroker({ settings: { "admin.listeners": "127.0.0.1:0" } });
  admin = `http://127.0.0.1:${broker.broker.adminListeners[0]!.port}`;
}, 60_000);
afterAll(async () => {
  await broker?.stop();
});

/** The sum of the /metrics samples whose name and labels start with `prefix`. */
async function sample(prefix: string): Promise<number> {
  const text = await (await fetch(`${admin}/metrics`)).text();
  let total = 0;
  for (const line of text.split("\n")) {
    if (line.startsWith(prefix)) total += Number(line.slice(line.lastIndexOf(" ") + 1));
  }
  return total;
}

const SEND = "quill_response_send_duration_seconds";

/** A Fetch v4 of the whole partition in one answer, as a frame. */
function fetchFrame(): Uint8Array {
  const w = new Writer();
  w.int32(0);
  encodeRequestHeader(w, {
    requestApiKey: ApiKey.Fetch,
    requestApiVersion: 4,
    correlationId: 1,
    clientId: "slow-reader",
  });
  const maxBytes = 64 * 1024 * 1024;
  encodeRequest(ApiKey.Fetch, 4, w, {
    replicaId: -1,
    maxWaitMs: 0,
    minBytes: 1,
    maxBytes,
    isolationLevel: 0,
    topics: [
      {
        topic: TOPIC,
        partitions: [{ partition: 0, fetchOffset: 0n, partitionMaxBytes: maxBytes }],
      },
    ],
  });
  const frame = w.toBytes();
  new DataView(frame.buffer, frame.byteOffset).setInt32(0, frame.byteLength - 4);
  return frame;
}

/** Sends the fetch, reads nothing for STALL_MS, then reads the whole answer; returns its size. */
function slowFetch(): Promise<number> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ port: broker.port, host: "127.0.0.1" }, () => {
      socket.write(fetchFrame());
      socket.pause();
      setTimeout(() => socket.resume(), STALL_MS);
    });
    let received = 0;
    let expected = -1;
    socket.on("data", (data: Buffer) => {
      if (expected < 0) expected = 4 + data.readInt32BE(0);
      received += data.length;
      if (received >= expected) {
        socket.destroy();
        resolve(received);
      }
    });
    socket.on("error", reject);
  });
}

test("each response is timed once; a stalled reader's fetch shows the stall as send time", async () => {
  const kafka = new Kafka({ brokers: [broker.bootstrap], logLevel: logLevel.NOTHING });
  const producer = kafka.producer();
  await producer.connect();
  await kafka.admin().createTopics({ topics: [{ topic: TOPIC, numPartitions: 1 }] });
  const value = Buffer.alloc(RECORD_BYTES, 7);
  const producesBefore = await sample(`${SEND}_count{api="Produce"`);
  for (let i = 0; i < SENDS; i++) {
    const messages = Array.from({ length: RECORDS_PER_SEND }, () => ({ value }));
    await producer.send({ topic: TOPIC, acks: 1, messages });
  }
  await producer.disconnect();
  expect((await sample(`${SEND}_count{api="Produce"`)) - producesBefore).toBe(SENDS);
  expect(await sample(`${SEND}_count{api="Produce"`)).toBe(
    await sample('quill_requests_total{api="Produce"'),
  );

  const fetchesBefore = await sample(`${SEND}_count{api="Fetch"`);
  const slowBefore = fetchesBefore - (await sample(`${SEND}_bucket{api="Fetch",le="1"}`));
  const answerBytes = await slowFetch();
  expect(answerBytes).toBeGreaterThan(SENDS * RECORDS_PER_SEND * RECORD_BYTES);
  // The answer was written whole before the client read it all, so it is counted by now.
  const fetches = await sample(`${SEND}_count{api="Fetch"`);
  expect(fetches - fetchesBefore).toBe(1);
  const slow = fetches - (await sample(`${SEND}_bucket{api="Fetch",le="1"}`));
  expect(slow - slowBefore).toBe(1);
  expect(await sample(`${SEND}_sum{api="Fetch"`)).toBeGreaterThan((STALL_MS - 100) / 1000);
}, 120_000);
