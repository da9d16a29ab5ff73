// DescribeClientQuotas and AlterClientQuotas on an embedded broker (raw requests at both
// versions), the local store surviving a restart, and throttling as Kafka applies it:
// throttle_time_ms in produce, fetch and metadata responses, the connection muted after a
// throttled response (KIP-219), and a fetch over its quota answered without records.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { ErrorCode } from "../../src/protocol/errors.ts";
import { ApiKey } from "../../src/protocol/generated/index.ts";
import { buildRecordBatch } from "../../src/protocol/record-batch.ts";
import { KafkaClient, startTestBroker, type TestBroker } from "../support/kafka-client.ts";

let b: TestBroker;
let client: KafkaClient;

// Two one-second samples: the rate reacts within a second instead of Kafka's default ten.
const SETTINGS = {
  "quota.window.num": "2",
  "quota.window.size.seconds": "1",
  "admin.listeners": "127.0.0.1:0",
};

beforeAll(async () => {
  b = await startTestBroker(SETTINGS);
  client = await KafkaClient.connect(b.port);
  const created = await client.request(ApiKey.CreateTopics, 7, {
    topics: [{ name: "q", numPartitions: 1, replicationFactor: 1 }],
  });
  expect(created.topics[0]!.errorCode).toBe(ErrorCode.NONE);
}, 60_000);

afterAll(async () => {
  client.close();
  await b.stop();
});

type Entity = { entityType: string; entityName: string | null }[];
type Op = { key: string; value: number; remove: boolean };

async function alter(version: number, entity: Entity, ops: Op[], validateOnly = false) {
  const res = await client.request(ApiKey.AlterClientQuotas, version, {
    entries: [{ entity, ops }],
    validateOnly,
  });
  return res.entries[0]!;
}

const set = (key: string, value: number): Op => ({ key, value, remove: false });
const user = (name: string | null) => ({ entityType: "user", entityName: name });
const clientId = (name: string | null) => ({ entityType: "client-id", entityName: name });

async function describe(
  version: number,
  components: { entityType: string; matchType: number; match: string | null }[],
  strict: boolean,
) {
  return client.request(ApiKey.DescribeClientQuotas, version, { components, strict });
}

/** Entities of a describe answer as `user=alice,client-id=<default>` strings, sorted. */
const names = (entries: { entity: Entity }[] | null) =>
  (entries ?? [])
    .map((e) => e.entity.map((p) => `${p.entityType}=${p.entityName ?? "<default>"}`).join(","))
    .sort();

test("quotas set per user, client-id and both are described with Kafka's filters", async () => {
  expect((await alter(1, [user("alice")], [set("producer_byte_rate", 1024)])).errorCode).toBe(0);
  await alter(0, [user("alice"), clientId("app")], [set("request_percentage", 50)]);
  await alter(1, [user(null)], [set("consumer_byte_rate", 4096)]);
  await alter(1, [clientId(null)], [set("producer_byte_rate", 2048)]);
  const all = await describe(1, [], false);
  expect(all.errorCode).toBe(ErrorCode.NONE);
  expect(names(all.entries)).toEqual([
    "client-id=<default>",
    "user=<default>",
    "user=alice",
    "user=alice,client-id=app",
  ]);
  const alice = await describe(0, [{ entityType: "user", matchType: 0, match: "alice" }], true);
  expect(alice.entries).toEqual([
    { entity: [user("alice")], values: [{ key: "producer_byte_rate", value: 1024 }] },
  ]);
  // Not strict: every entity with a user part that is alice.
  const loose = await describe(1, [{ entityType: "user", matchType: 0, match: "alice" }], false);
  expect(names(loose.entries)).toEqual(["user=alice", "user=alice,client-id=app"]);
  const defaults = await describe(1, [{ entityType: "user", matchType: 1, match: null }], true);
  expect(names(defaults.entries)).toEqual(["user=<default>"]);
  const specified = await describe(
    1,
    [{ entityType: "client-id", matchType: 2, match: null }],
    true,
  );
  expect(names(specified.entries)).toEqual(["client-id=<default>"]);
  // Removing the last key leaves nothing to describe.
  const removed = await alter(
    1,
    [user(null)],
    [{ key: "consumer_byte_rate", value: 0, remove: true }],
  );
  expect(removed.errorCode).toBe(ErrorCode.NONE);
  expect(names((await describe(1, [], false)).entries)).not.toContain("user=<default>");
});

test("bad alterations and filters get Kafka's INVALID_REQUEST; validateOnly writes nothing", async () => {
  const cases: [Entity, Op[], string][] = [
    [[user("bob")], [set("producer_byte_rate", 1.5)], "must be a LONG value"],
    [[user("bob")], [set("no_such_quota", 1)], "Invalid configuration key no_such_quota"],
    [[], [set("producer_byte_rate", 1)], "Invalid empty client quota entity"],
    [[{ entityType: "group", entityName: "g" }], [], "Unhandled client quota entity type: group"],
    [[user("")], [set("producer_byte_rate", 1)], "Empty user not supported"],
  ];
  for (const [entity, ops, message] of cases) {
    const answer = await alter(1, entity, ops);
    expect(answer.errorCode).toBe(ErrorCode.INVALID_REQUEST);
    expect(answer.errorMessage).toContain(message);
  }
  const checked = await alter(1, [user("bob")], [set("producer_byte_rate", 10)], true);
  expect(checked.errorCode).toBe(ErrorCode.NONE);
  const bob = await describe(1, [{ entityType: "user", matchType: 0, match: "bob" }], false);
  expect(bob.entries).toEqual([]);
  const twice = await describe(
    1,
    [
      { entityType: "user", matchType: 2, match: null },
      { entityType: "user", matchType: 1, match: null },
    ],
    false,
  );
  expect(twice.errorCode).toBe(ErrorCode.INVALID_REQUEST);
  expect(twice.errorMessage).toBe("Duplicate user filter component entity type");
  const custom = await describe(1, [{ entityType: "x", matchType: 2, match: null }], false);
  expect(custom.errorCode).toBe(ErrorCode.UNSUPPORTED_VERSION);
});

test("embedded mode keeps quotas in client-quotas.json across a restart", async () => {
  const file = JSON.parse(readFileSync(join(b.dataDir, "client-quotas.json"), "utf8"));
  expect(file["users/alice"]).toEqual({ producer_byte_rate: "1024" });
  expect(file["users/alice/clients/app"]).toEqual({ request_percentage: "50.0" });
  client.close();
  b = await b.restart();
  client = await KafkaClient.connect(b.port);
  const all = await describe(1, [], false);
  expect(names(all.entries)).toEqual([
    "client-id=<default>",
    "user=alice",
    "user=alice,client-id=app",
  ]);
  expect(b.broker.services.clientQuotas.active).toBe(true);
});

const bigBatch = (bytes: number) =>
  buildRecordBatch([{ key: null, value: new Uint8Array(bytes).fill(120) }]);

async function produceAs(c: KafkaClient, bytes: number) {
  const res = await c.request(ApiKey.Produce, 9, {
    transactionalId: null,
    acks: 1,
    timeoutMs: 5000,
    topicData: [{ name: "q", partitionData: [{ index: 0, records: bigBatch(bytes) }] }],
  });
  expect(res.responses[0]!.partitionResponses[0]!.errorCode).toBe(ErrorCode.NONE);
  return res.throttleTimeMs;
}

test("a producer over producer_byte_rate gets throttle_time_ms, then its connection is muted", async () => {
  // The default client-id quota of the first test would hold back every other client too.
  await alter(1, [clientId(null)], [{ key: "producer_byte_rate", value: 0, remove: true }]);
  await alter(1, [clientId("slow-producer")], [set("producer_byte_rate", 10_000)]);
  const slow = await KafkaClient.connect(b.port);
  slow.clientId = "slow-producer";
  try {
    // 30 KB against 10 KB/s over a one-second minimum window: about 2 s of throttle.
    const throttleMs = await produceAs(slow, 30_000);
    expect(throttleMs).toBeGreaterThan(1000);
    // KIP-219: the answer came first; the next request is read only once the throttle is over.
    const sentMs = performance.now();
    await slow.request(ApiKey.ApiVersions, 3, {
      clientSoftwareName: "t",
      clientSoftwareVersion: "1",
    });
    expect(performance.now() - sentMs).toBeGreaterThanOrEqual(throttleMs * 0.8);
    // Another client-id is not held back.
    expect(await produceAs(client, 30_000)).toBe(0);
    const admin = b.broker.adminListeners[0]!.port;
    const metrics = await (await fetch(`http://127.0.0.1:${admin}/metrics`)).text();
    const series =
      'quill_client_quota_throttle_time_ms_total{quota="producer_byte_rate",user="",' +
      'client_id="slow-producer"} ';
    const line = metrics.split("\n").find((l) => l.startsWith(series));
    expect(Number(line?.slice(series.length))).toBe(throttleMs);
  } finally {
    slow.close();
  }
}, 30_000);

test("a consumer over consumer_byte_rate is answered without records and throttled", async () => {
  await produceAs(client, 30_000);
  await alter(1, [clientId("slow-consumer")], [set("consumer_byte_rate", 5_000)]);
  const slow = await KafkaClient.connect(b.port);
  slow.clientId = "slow-consumer";
  const fetch = () =>
    slow.request(ApiKey.Fetch, 11, {
      replicaId: -1,
      maxWaitMs: 100,
      minBytes: 1,
      maxBytes: 50 * 1024 * 1024,
      isolationLevel: 0,
      sessionId: 0,
      sessionEpoch: -1,
      topics: [
        {
          topic: "q",
          partitions: [
            {
              partition: 0,
              currentLeaderEpoch: -1,
              fetchOffset: 0n,
              logStartOffset: -1n,
              partitionMaxBytes: 1024 * 1024,
            },
          ],
        },
      ],
      forgottenTopicsData: [],
      rackId: "",
    });
  try {
    const first = await fetch();
    expect(first.throttleTimeMs).toBeGreaterThan(0);
    const records = first.responses[0]!.partitions[0]!.records;
    expect(records === null || (records as Uint8Array).byteLength === 0).toBe(true);
  } finally {
    slow.close();
  }
}, 30_000);

test("request_percentage throttles any API by its handler time", async () => {
  await alter(1, [clientId("busy")], [set("request_percentage", 0.0001)]);
  const busy = await KafkaClient.connect(b.port);
  busy.clientId = "busy";
  try {
    let throttleMs = 0;
    for (let i = 0; i < 20 && throttleMs === 0; i++) {
      const res = await busy.request(ApiKey.Metadata, 9, {
        topics: null,
        allowAutoTopicCreation: false,
        includeClusterAuthorizedOperations: false,
        includeTopicAuthorizedOperations: false,
      });
      throttleMs = res.throttleTimeMs;
    }
    expect(throttleMs).toBeGreaterThan(0);
    // Bounded at one quota sample (quota.window.size.seconds), as Kafka bounds it.
    expect(throttleMs).toBeLessThanOrEqual(1000);
  } finally {
    busy.close();
  }
}, 30_000);

test("a user quota applies to the SASL principal's user, shared by its client-ids", async () => {
  const sasl = await startTestBroker({
    listeners: "SASL_PLAINTEXT://127.0.0.1:0",
    "sasl.enabled.mechanisms": "PLAIN",
    "listener.name.sasl_plaintext.plain.sasl.jaas.config":
      "org.apache.kafka.common.security.plain.PlainLoginModule required " +
      'user_bob="bob-secret" user_eve="eve-secret";',
    ...SETTINGS,
  });
  const login = async (user: string, clientId: string) => {
    const c = await KafkaClient.connect(sasl.port);
    c.clientId = clientId;
    await c.request(ApiKey.SaslHandshake, 1, { mechanism: "PLAIN" });
    const token = new TextEncoder().encode(`\u0000${user}\u0000${user}-secret`);
    const auth = await c.request(ApiKey.SaslAuthenticate, 2, { authBytes: token });
    expect(auth.errorCode).toBe(ErrorCode.NONE);
    return c;
  };
  const admin = await login("bob", "admin");
  const produce = async (c: KafkaClient) => {
    const res = await c.request(ApiKey.Produce, 9, {
      transactionalId: null,
      acks: 1,
      timeoutMs: 5000,
      topicData: [{ name: "u", partitionData: [{ index: 0, records: bigBatch(12_000) }] }],
    });
    return res.throttleTimeMs;
  };
  try {
    const altered = await admin.request(ApiKey.AlterClientQuotas, 1, {
      entries: [{ entity: [user("bob")], ops: [set("producer_byte_rate", 20_000)] }],
      validateOnly: false,
    });
    expect(altered.entries[0]!.errorCode).toBe(ErrorCode.NONE);
    const [bob1, bob2, eve] = [
      await login("bob", "one"),
      await login("bob", "two"),
      await login("eve", "one"),
    ];
    // 12 KB each: bob's two clients share 20 KB/s, eve has no quota.
    expect(await produce(bob1)).toBe(0);
    expect(await produce(bob2)).toBeGreaterThan(0);
    expect(await produce(eve)).toBe(0);
    for (const c of [bob1, bob2, eve]) c.close();
  } finally {
    admin.close();
    await sasl.stop();
  }
}, 30_000);
