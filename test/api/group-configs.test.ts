// Kafka 4's group configs (GROUP config resource, type 32) on the wire: IncrementalAlterConfigs,
// AlterConfigs and DescribeConfigs, values checked against the broker's min/max bounds with
// Kafka's messages, kept across a restart (embedded: group-configs.json), and applied: a KIP-848
// member is told the group's heartbeat interval, a share member the group's.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { ErrorCode } from "../../src/protocol/errors.ts";
import { ApiKey } from "../../src/protocol/generated/index.ts";
import { KafkaClient, startTestBroker, type TestBroker } from "../support/kafka-client.ts";

const GROUP = 32;
const GROUP_CONFIG_SOURCE = 8;
const DEFAULT_CONFIG_SOURCE = 5;

let b: TestBroker;
let client: KafkaClient;
beforeAll(async () => {
  b = await startTestBroker({});
  client = await KafkaClient.connect(b.port);
}, 60_000);
afterAll(async () => {
  client.close();
  await b.stop();
});

type Op = [name: string, op: number, value: string | null];
const alter = (group: string, ops: Op[], validateOnly = false) =>
  client.request(ApiKey.IncrementalAlterConfigs, 1, {
    resources: [
      {
        resourceType: GROUP,
        resourceName: group,
        configs: ops.map(([name, configOperation, value]) => ({ name, configOperation, value })),
      },
    ],
    validateOnly,
  });
const describe = async (group: string) => {
  const res = await client.request(ApiKey.DescribeConfigs, 4, {
    resources: [{ resourceType: GROUP, resourceName: group, configurationKeys: null }],
    includeSynonyms: true,
    includeDocumentation: false,
  });
  const r = res.results[0]!;
  expect(r.errorCode).toBe(ErrorCode.NONE);
  return new Map(r.configs.map((c) => [c.name, c]));
};

test("set, describe, delete: each key with the group's value or the broker's", async () => {
  const set = await alter("g1", [
    ["consumer.session.timeout.ms", 0, "50000"],
    ["consumer.heartbeat.interval.ms", 0, "6000"],
    ["share.record.lock.duration.ms", 0, "20000"],
    ["share.auto.offset.reset", 0, "earliest"],
  ]);
  expect(set.responses[0]!.errorCode).toBe(ErrorCode.NONE);
  const d = await describe("g1");
  expect(d.get("consumer.session.timeout.ms")).toMatchObject({
    value: "50000",
    configSource: GROUP_CONFIG_SOURCE,
  });
  expect(d.get("share.auto.offset.reset")!.value).toBe("earliest");
  expect(d.get("share.delivery.count.limit")).toMatchObject({
    value: "5",
    configSource: DEFAULT_CONFIG_SOURCE,
  });
  expect(d.has("share.session.timeout.ms")).toBe(true);
  await alter("g1", [["share.record.lock.duration.ms", 1, null]]);
  expect((await describe("g1")).get("share.record.lock.duration.ms")!.value).toBe("30000");
  // Another group is untouched.
  expect((await describe("g2")).get("consumer.session.timeout.ms")!.value).toBe("45000");
});

test("bad values are INVALID_CONFIG with Kafka's messages; validateOnly changes nothing", async () => {
  const cases: [Op[], string][] = [
    [
      [["consumer.session.timeout.ms", 0, "1000"]],
      "consumer.session.timeout.ms must be in the range 45000 to 60000 inclusive.",
    ],
    [
      [["share.delivery.count.limit", 0, "11"]],
      "share.delivery.count.limit must be in the range 2 to 10 inclusive.",
    ],
    [
      [["consumer.heartbeat.interval.ms", 0, "x"]],
      "Invalid value x for configuration consumer.heartbeat.interval.ms: Not a number of type INT",
    ],
    [[["no.such.key", 0, "1"]], "Unknown group config name: no.such.key"],
    [
      [["share.auto.offset.reset", 0, "by_duration:PT1H"]],
      "Invalid value by_duration:PT1H for configuration share.auto.offset.reset: " +
        "String must be one of: earliest, latest",
    ],
  ];
  for (const [ops, message] of cases) {
    const r = (await alter("g3", ops)).responses[0]!;
    expect([r.errorCode, r.errorMessage]).toEqual([ErrorCode.INVALID_CONFIG, message]);
  }
  const only = await alter("g3", [["share.delivery.count.limit", 0, "3"]], true);
  expect(only.responses[0]!.errorCode).toBe(ErrorCode.NONE);
  expect((await describe("g3")).get("share.delivery.count.limit")!.value).toBe("5");
});

test("AlterConfigs replaces the group's configs; they survive a restart and apply to heartbeats", async () => {
  const res = await client.request(ApiKey.AlterConfigs, 2, {
    resources: [
      {
        resourceType: GROUP,
        resourceName: "g4",
        configs: [
          { name: "consumer.heartbeat.interval.ms", value: "7000" },
          { name: "share.heartbeat.interval.ms", value: "8000" },
        ],
      },
    ],
    validateOnly: false,
  });
  expect(res.responses[0]!.errorCode).toBe(ErrorCode.NONE);
  client.close();
  b = await b.restart();
  client = await KafkaClient.connect(b.port);
  const d = await describe("g4");
  expect(d.get("consumer.heartbeat.interval.ms")!.value).toBe("7000");
  const consumer = await client.request(ApiKey.ConsumerGroupHeartbeat, 1, {
    groupId: "g4",
    memberId: "m-consumer-1",
    memberEpoch: 0,
    rebalanceTimeoutMs: 30_000,
    subscribedTopicNames: [],
  });
  expect([consumer.errorCode, consumer.heartbeatIntervalMs]).toEqual([ErrorCode.NONE, 7000]);
  const share = await client.request(ApiKey.ShareGroupHeartbeat, 1, {
    groupId: "g4-share",
    memberId: "m-share-1",
    memberEpoch: 0,
    subscribedTopicNames: [],
  });
  expect(share.heartbeatIntervalMs).toBe(5000);
  await alter("g4-share", [["share.heartbeat.interval.ms", 0, "9000"]]);
  const again = await client.request(ApiKey.ShareGroupHeartbeat, 1, {
    groupId: "g4-share",
    memberId: "m-share-1",
    memberEpoch: share.memberEpoch,
  });
  expect(again.heartbeatIntervalMs).toBe(9000);
});
