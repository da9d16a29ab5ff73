// The admin HTTP listener against a real broker: health endpoints, and /metrics counters that
// move by exactly the known traffic sent (raw requests whose batch sizes are known).
import { afterAll, beforeAll, expect, test } from "bun:test";
import { type AdminState, startAdminServer } from "../../src/broker/admin-server.ts";
import { ErrorCode } from "../../src/protocol/errors.ts";
import { ApiKey } from "../../src/protocol/generated/index.ts";
import { buildRecordBatch } from "../../src/protocol/record-batch.ts";
import { BrokerMetrics } from "../../src/server/broker-metrics.ts";
import { type InProcessBroker, startInProcessBroker } from "../support/broker-harness.ts";
import { KafkaClient } from "../support/kafka-client.ts";

let broker: InProcessBroker;
let admin: string;

beforeAll(async () => {
  broker = await startInProcessBroker({ settings: { "admin.listeners": "127.0.0.1:0" } });
  const [listener] = broker.broker.adminListeners;
  admin = `http://127.0.0.1:${listener!.port}`;
}, 60_000);
afterAll(async () => {
  await broker.stop();
});

/** The value of one sample line of the exposition, or undefined when absent. */
async function sample(name: string, labels: string): Promise<number | undefined> {
  const text = await (await fetch(`${admin}/metrics`)).text();
  const line = text.split("\n").find((l) => l.startsWith(`${name}{${labels}} `));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(" ") + 1));
}

test("a running broker is live and ready; other paths and methods are refused", async () => {
  expect((await fetch(`${admin}/health/live`)).status).toBe(200);
  expect((await fetch(`${admin}/health/ready`)).status).toBe(200);
  expect((await fetch(`${admin}/nope`)).status).toBe(404);
  expect((await fetch(`${admin}/metrics`, { method: "POST" })).status).toBe(405);
  const metrics = await fetch(`${admin}/metrics`);
  expect(metrics.headers.get("content-type")).toStartWith("text/plain; version=0.0.4");
});

test("requests per API and bytes in and out per topic move by exactly the traffic", async () => {
  const client = await KafkaClient.connect(broker.port);
  try {
    const created = await client.request(ApiKey.CreateTopics, 5, {
      topics: [{ name: "metered", numPartitions: 1, replicationFactor: 1 }],
      timeoutMs: 5_000,
    });
    expect(created.topics[0]!.errorCode).toBe(ErrorCode.NONE);
    const batches = [3, 10, 1].map((count) =>
      buildRecordBatch(
        Array.from({ length: count }, (_, i) => ({
          value: new TextEncoder().encode(`value-${i}`),
        })),
      ),
    );
    const produceBefore = (await sample("quill_requests_total", 'api="Produce"')) ?? 0;
    for (const records of batches) {
      const res = await client.request(ApiKey.Produce, 9, {
        transactionalId: null,
        acks: 1,
        timeoutMs: 5_000,
        topicData: [{ name: "metered", partitionData: [{ index: 0, records }] }],
      });
      expect(res.responses[0]!.partitionResponses[0]!.errorCode).toBe(ErrorCode.NONE);
    }
    const batchBytes = batches.reduce((n, b) => n + b.length, 0);
    expect(await sample("quill_requests_total", 'api="Produce"')).toBe(produceBefore + 3);
    expect(await sample("quill_topic_bytes_in_total", 'topic="metered"')).toBe(batchBytes);
    expect(await sample("quill_topic_bytes_out_total", 'topic="metered"')).toBe(0);
    const fetchBefore = (await sample("quill_requests_total", 'api="Fetch"')) ?? 0;
    const fetched = await client.request(ApiKey.Fetch, 12, {
      replicaId: -1,
      maxWaitMs: 0,
      minBytes: 0,
      maxBytes: 1 << 20,
      isolationLevel: 0,
      sessionId: 0,
      sessionEpoch: -1,
      rackId: "",
      forgottenTopicsData: [],
      topics: [
        {
          topic: "metered",
          partitions: [
            {
              partition: 0,
              currentLeaderEpoch: -1,
              fetchOffset: 0n,
              lastFetchedEpoch: -1,
              logStartOffset: -1n,
              partitionMaxBytes: 1 << 20,
            },
          ],
        },
      ],
    });
    expect(fetched.responses[0]!.partitions[0]!.errorCode).toBe(ErrorCode.NONE);
    expect(await sample("quill_topic_bytes_out_total", 'topic="metered"')).toBe(batchBytes);
    expect(await sample("quill_requests_total", 'api="Fetch"')).toBe(fetchBefore + 1);
    // A deleted topic's counters go with it.
    await client.request(ApiKey.DeleteTopics, 4, { topicNames: ["metered"], timeoutMs: 5_000 });
    expect(await sample("quill_topic_bytes_in_total", 'topic="metered"')).toBeUndefined();
  } finally {
    client.close();
  }
});

test("ready follows the broker's state: 503 until it serves and once it stops", async () => {
  const state: AdminState = {
    metrics: new BrokerMetrics(),
    eventLoop: null,
    ready: false,
    sources: null,
    authentication: "none",
    authenticator: null,
    pages: null,
  };
  const server = startAdminServer([{ listenerName: "HTTP", host: "127.0.0.1", port: 0 }], state);
  try {
    const url = `http://127.0.0.1:${server.bound[0]!.port}/health/ready`;
    expect((await fetch(url)).status).toBe(503);
    state.ready = true;
    expect((await fetch(url)).status).toBe(200);
    state.ready = false;
    expect((await fetch(url)).status).toBe(503);
  } finally {
    await server.stop();
  }
});

test("an address in use fails the start and leaves no other address bound", async () => {
  const taken = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response("") });
  const state: AdminState = {
    metrics: new BrokerMetrics(),
    eventLoop: null,
    ready: false,
    sources: null,
    authentication: "none",
    authenticator: null,
    pages: null,
  };
  const free = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response("") });
  const freePort = free.port!;
  await free.stop(true);
  try {
    expect(() =>
      startAdminServer(
        [
          { listenerName: "A", host: "127.0.0.1", port: freePort },
          { listenerName: "B", host: "127.0.0.1", port: taken.port! },
        ],
        state,
      ),
    ).toThrow();
    // The first address was let go: it can be bound again.
    const again = Bun.serve({
      hostname: "127.0.0.1",
      port: freePort,
      fetch: () => new Response(""),
    });
    await again.stop(true);
  } finally {
    await taken.stop(true);
  }
});
