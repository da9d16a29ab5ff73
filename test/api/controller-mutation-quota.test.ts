// controller_mutation_rate (KIP-599) on an embedded broker, with raw requests: the token bucket
// lets a request overdraw it and then refuses topics with THROTTLING_QUOTA_EXCEEDED (CreateTopics
// v6+, CreatePartitions v3+, DeleteTopics v5+), older versions are served but throttled, the
// throttle time is in the response and the connection is muted for it, validateOnly counts
// nothing, and the quota is set, described and refused as a client quota.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { ErrorCode } from "../../src/protocol/errors.ts";
import { ApiKey } from "../../src/protocol/generated/index.ts";
import { KafkaClient, startTestBroker, type TestBroker } from "../support/kafka-client.ts";

let b: TestBroker;
/** A client without a quota, to make the topics the others delete and grow. */
let setup: KafkaClient;
const clients: KafkaClient[] = [];

// One one-second sample: a bucket holds one second of mutations (2 at a rate of 2). The rate is
// low so that a refusal does not depend on how fast the broker creates partitions under load:
// each overdraw leaves the bucket negative for a second or more.
const SETTINGS = {
  "controller.quota.window.num": "1",
  "controller.quota.window.size.seconds": "1",
};
const RATE = 2;
const EXCEEDED = "The throttling quota has been exceeded.";

beforeAll(async () => {
  b = await startTestBroker(SETTINGS);
  setup = await KafkaClient.connect(b.port);
  setup.clientId = "setup";
}, 60_000);

afterAll(async () => {
  for (const c of [setup, ...clients]) c.close();
  await b.stop();
});

async function clientWithQuota(clientId: string, rate = RATE): Promise<KafkaClient> {
  const res = await setup.request(ApiKey.AlterClientQuotas, 1, {
    entries: [
      {
        entity: [{ entityType: "client-id", entityName: clientId }],
        ops: [{ key: "controller_mutation_rate", value: rate, remove: false }],
      },
    ],
    validateOnly: false,
  });
  expect(res.entries[0]!.errorCode).toBe(ErrorCode.NONE);
  const c = await KafkaClient.connect(b.port);
  c.clientId = clientId;
  clients.push(c);
  return c;
}

const topic = (name: string, numPartitions: number) => ({
  name,
  numPartitions,
  replicationFactor: 1,
});

async function createTopics(
  c: KafkaClient,
  version: number,
  topics: { name: string; numPartitions: number }[],
  validateOnly = false,
) {
  const all = topics.map((t) => topic(t.name, t.numPartitions));
  return c.request(ApiKey.CreateTopics, version, { topics: all, validateOnly, timeoutMs: 10_000 });
}

/** How long the next request on `c` waits for its answer (a muted connection reads nothing). */
async function nextRequestMs(c: KafkaClient): Promise<number> {
  const startMs = performance.now();
  await c.request(ApiKey.Metadata, 12, { topics: [], allowAutoTopicCreation: false });
  return performance.now() - startMs;
}

test("CreateTopics v7: one request overdraws the bucket, the next topics are refused, then muted", async () => {
  const c = await clientWithQuota("strict-creator");
  // validateOnly takes nothing from the bucket, however many partitions.
  const validated = await createTopics(c, 7, [{ name: "v", numPartitions: 500 }], true);
  expect(validated.topics[0]!.errorCode).toBe(ErrorCode.NONE);
  expect(validated.throttleTimeMs).toBe(0);
  const res = await createTopics(c, 7, [
    { name: "s1", numPartitions: 4 },
    { name: "s2", numPartitions: 1 },
    { name: "s3", numPartitions: 1 },
  ]);
  const codes = res.topics.map((t) => [t.name, t.errorCode, t.errorMessage]);
  expect(codes).toEqual([
    ["s1", ErrorCode.NONE, null],
    ["s2", ErrorCode.THROTTLING_QUOTA_EXCEEDED, EXCEEDED],
    ["s3", ErrorCode.THROTTLING_QUOTA_EXCEEDED, EXCEEDED],
  ]);
  // 2 tokens less 4 partitions: -2 at 2 per second is 1 s, less the time since.
  expect(res.throttleTimeMs).toBeGreaterThan(0);
  expect(res.throttleTimeMs).toBeLessThanOrEqual(1000);
  expect(b.broker.services.metadataCache.topic("s2")).toBeUndefined();
  expect(await nextRequestMs(c)).toBeGreaterThan(res.throttleTimeMs - 100);
  const times = b.broker.services.clientQuotas.throttleTimes();
  const mine = times.find(
    (t) => t.type === "controller_mutation_rate" && t.clientId === c.clientId,
  );
  expect(mine?.ms).toBe(res.throttleTimeMs);
}, 30_000);

test("CreateTopics v5 (before KIP-599): every topic is created, the response throttled", async () => {
  const c = await clientWithQuota("permissive-creator");
  const res = await createTopics(c, 5, [
    { name: "p1", numPartitions: 4 },
    { name: "p2", numPartitions: 1 },
  ]);
  expect(res.topics.map((t) => t.errorCode)).toEqual([ErrorCode.NONE, ErrorCode.NONE]);
  // 2 - 5 = -3 tokens: 1.5 s, less the time since.
  expect(res.throttleTimeMs).toBeGreaterThan(0);
  expect(res.throttleTimeMs).toBeLessThanOrEqual(1500);
  expect(await nextRequestMs(c)).toBeGreaterThan(res.throttleTimeMs - 100);
}, 30_000);

test("DeleteTopics v6 is refused once the bucket is overdrawn, v4 only throttled", async () => {
  const made = await createTopics(setup, 7, [
    ...["d1", "d3"].map((name) => ({ name, numPartitions: 12 })),
    ...["d2", "d4"].map((name) => ({ name, numPartitions: 1 })),
  ]);
  expect(made.topics.every((t) => t.errorCode === ErrorCode.NONE)).toBe(true);
  const strict = await clientWithQuota("strict-deleter");
  const refused = await strict.request(ApiKey.DeleteTopics, 6, {
    topics: ["d1", "d2"].map((name) => ({ name, topicId: new Uint8Array(16) })),
    timeoutMs: 10_000,
  });
  expect(refused.responses.map((r) => [r.name, r.errorCode])).toEqual([
    ["d1", ErrorCode.NONE],
    ["d2", ErrorCode.THROTTLING_QUOTA_EXCEEDED],
  ]);
  expect(refused.responses[1]!.errorMessage).toBe(EXCEEDED);
  expect(refused.throttleTimeMs).toBeGreaterThan(0);
  expect(b.broker.services.metadataCache.topic("d2")).toBeDefined();
  const permissive = await clientWithQuota("permissive-deleter");
  const served = await permissive.request(ApiKey.DeleteTopics, 4, {
    topicNames: ["d3", "d4"],
    timeoutMs: 10_000,
  });
  expect(served.responses.map((r) => r.errorCode)).toEqual([ErrorCode.NONE, ErrorCode.NONE]);
  expect(served.throttleTimeMs).toBeGreaterThan(0);
}, 30_000);

test("CreatePartitions v3 is refused once the bucket is overdrawn, v2 only throttled", async () => {
  const names = ["g1", "g2", "g3", "g4"];
  const made = await createTopics(
    setup,
    7,
    names.map((name) => ({ name, numPartitions: 1 })),
  );
  expect(made.topics.every((t) => t.errorCode === ErrorCode.NONE)).toBe(true);
  const grow = (name: string, count: number) => ({ name, count, assignments: null });
  const strict = await clientWithQuota("strict-grower");
  // validateOnly counts nothing.
  const validated = await strict.request(ApiKey.CreatePartitions, 3, {
    topics: [grow("g1", 1000)],
    timeoutMs: 10_000,
    validateOnly: true,
  });
  expect(validated.results[0]!.errorCode).toBe(ErrorCode.NONE);
  const refused = await strict.request(ApiKey.CreatePartitions, 3, {
    topics: [grow("g1", 13), grow("g2", 2)],
    timeoutMs: 10_000,
    validateOnly: false,
  });
  expect(refused.results.map((r) => [r.name, r.errorCode])).toEqual([
    ["g1", ErrorCode.NONE],
    ["g2", ErrorCode.THROTTLING_QUOTA_EXCEEDED],
  ]);
  expect(refused.throttleTimeMs).toBeGreaterThan(0);
  expect(b.broker.services.metadataCache.topic("g2")!.partitions.length).toBe(1);
  const permissive = await clientWithQuota("permissive-grower");
  const served = await permissive.request(ApiKey.CreatePartitions, 2, {
    topics: [grow("g3", 13), grow("g4", 2)],
    timeoutMs: 10_000,
    validateOnly: false,
  });
  expect(served.results.map((r) => r.errorCode)).toEqual([ErrorCode.NONE, ErrorCode.NONE]);
  expect(served.throttleTimeMs).toBeGreaterThan(0);
}, 30_000);

test("a bucket refills at the rate: after the throttle time the client may create again", async () => {
  const c = await clientWithQuota("refilled", 4);
  // A strict quota throttles only when it refuses: overdrawing the bucket costs nothing yet.
  const first = await createTopics(c, 7, [{ name: "r1", numPartitions: 8 }]);
  expect(first.topics[0]!.errorCode).toBe(ErrorCode.NONE);
  expect(first.throttleTimeMs).toBe(0);
  const refused = await createTopics(c, 7, [{ name: "r2", numPartitions: 1 }]);
  expect(refused.topics[0]!.errorCode).toBe(ErrorCode.THROTTLING_QUOTA_EXCEEDED);
  // 4 - 8 = -4 tokens at 4 per second: 1 s, less the time since.
  expect(refused.throttleTimeMs).toBeGreaterThan(0);
  expect(refused.throttleTimeMs).toBeLessThanOrEqual(1000);
  await Bun.sleep(refused.throttleTimeMs + 50);
  const again = await createTopics(c, 7, [{ name: "r2", numPartitions: 1 }]);
  expect(again.topics[0]!.errorCode).toBe(ErrorCode.NONE);
  expect(again.throttleTimeMs).toBe(0);
}, 30_000);

test("controller_mutation_rate is a DOUBLE client quota: described, and bad values refused", async () => {
  const alter = (value: number) =>
    setup.request(ApiKey.AlterClientQuotas, 1, {
      entries: [
        {
          entity: [{ entityType: "user", entityName: null }],
          ops: [{ key: "controller_mutation_rate", value, remove: false }],
        },
      ],
      validateOnly: false,
    });
  for (const bad of [0, -1]) {
    const res = await alter(bad);
    expect(res.entries[0]!.errorCode).toBe(ErrorCode.INVALID_REQUEST);
  }
  expect((await alter(1.5)).entries[0]!.errorCode).toBe(ErrorCode.NONE);
  const described = await setup.request(ApiKey.DescribeClientQuotas, 1, {
    components: [{ entityType: "user", matchType: 1, match: null }],
    strict: true,
  });
  expect(described.entries).toEqual([
    {
      entity: [{ entityType: "user", entityName: null }],
      values: [{ key: "controller_mutation_rate", value: 1.5 }],
    },
  ]);
  // The <default> user's quota now applies to a client-id without its own.
  const anyone = await KafkaClient.connect(b.port);
  anyone.clientId = "no-quota-of-its-own";
  clients.push(anyone);
  const res = await createTopics(anyone, 7, [
    { name: "u1", numPartitions: 20 },
    { name: "u2", numPartitions: 1 },
  ]);
  expect(res.topics.map((t) => t.errorCode)).toEqual([
    ErrorCode.NONE,
    ErrorCode.THROTTLING_QUOTA_EXCEEDED,
  ]);
}, 30_000);
