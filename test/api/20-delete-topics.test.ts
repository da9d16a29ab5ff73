import { afterAll, beforeAll, expect, test } from "bun:test";
import * as fs from "node:fs";
import * as path from "node:path";
import { Kafka, logLevel } from "kafkajs";
import { ErrorCode } from "../../src/protocol/errors.ts";
import { ApiKey } from "../../src/protocol/generated/index.ts";
import {
  KafkaClient,
  requestOnce,
  startTestBroker,
  type TestBroker,
} from "../support/kafka-client.ts";

let b: TestBroker;
let client: KafkaClient;
beforeAll(async () => {
  b = await startTestBroker();
  client = await KafkaClient.connect(b.port);
}, 60_000);
afterAll(async () => {
  client.close();
  await b.stop();
});

async function createTopic(name: string, numPartitions = 1): Promise<Uint8Array> {
  const res = await client.request(ApiKey.CreateTopics, 7, {
    topics: [{ name, numPartitions, replicationFactor: 1 }],
  });
  expect(res.topics[0]!.errorCode).toBe(ErrorCode.NONE);
  return res.topics[0]!.topicId;
}

const partitionDir = (topic: string, p: number) => path.join(b.dataDir, `${topic}-${p}`);

test("kafkajs deletes a topic: metadata, logs and directories are gone", async () => {
  await createTopic("kjs-del", 2);
  expect(fs.existsSync(partitionDir("kjs-del", 1))).toBe(true);
  const kafka = new Kafka({ brokers: [`127.0.0.1:${b.port}`], logLevel: logLevel.NOTHING });
  // UNKNOWN_TOPIC_OR_PARTITION is retriable, so kafkajs would retry it until it times out.
  const admin = kafka.admin({ retry: { retries: 0 } });
  await admin.connect();
  try {
    await admin.deleteTopics({ topics: ["kjs-del"] });
    expect(await admin.listTopics()).not.toContain("kjs-del");
    const missing = await admin
      .deleteTopics({ topics: ["kjs-del"] })
      .catch((e: { cause?: { type?: string } }) => e.cause?.type);
    expect(missing).toBe("UNKNOWN_TOPIC_OR_PARTITION");
  } finally {
    await admin.disconnect();
  }
  expect(b.broker.services.metadataCache.topic("kjs-del")).toBeUndefined();
  expect(fs.existsSync(partitionDir("kjs-del", 0))).toBe(false);
  expect(fs.existsSync(partitionDir("kjs-del", 1))).toBe(false);
});

test("v1 (lowest): by name, unknown names answer UNKNOWN_TOPIC_OR_PARTITION", async () => {
  await createTopic("del-v1");
  const res = await client.request(ApiKey.DeleteTopics, 1, {
    topicNames: ["del-v1", "nope"],
    timeoutMs: 5000,
  });
  expect(res.responses.map((r) => [r.name, r.errorCode])).toEqual([
    ["del-v1", ErrorCode.NONE],
    ["nope", ErrorCode.UNKNOWN_TOPIC_OR_PARTITION],
  ]);
  expect(b.broker.services.metadataCache.topic("del-v1")).toBeUndefined();
});

test("v6 (highest): by topic id and by name; unknown id is UNKNOWN_TOPIC_ID", async () => {
  const id = await createTopic("del-by-id");
  await createTopic("del-by-name");
  const unknownId = new Uint8Array(16).fill(7);
  const res = await client.request(ApiKey.DeleteTopics, 6, {
    topics: [
      { name: null, topicId: id },
      { name: "del-by-name" },
      { name: null, topicId: unknownId },
    ],
    timeoutMs: 5000,
  });
  expect(res.responses.map((r) => [r.name, r.errorCode])).toEqual([
    ["del-by-id", ErrorCode.NONE],
    ["del-by-name", ErrorCode.NONE],
    [null, ErrorCode.UNKNOWN_TOPIC_ID],
  ]);
  expect(Buffer.from(res.responses[0]!.topicId).equals(Buffer.from(id))).toBe(true);
  expect(res.responses[2]!.errorMessage).toContain("topic ID");
  expect(b.broker.services.metadataCache.topic("del-by-id")).toBeUndefined();
  expect(b.broker.services.metadataCache.topic("del-by-name")).toBeUndefined();
});

test("v6: a name and an id in one entry make the whole request INVALID_REQUEST", async () => {
  const id = await createTopic("del-both");
  const res = await client.request(ApiKey.DeleteTopics, 6, {
    topics: [{ name: "del-both", topicId: id }],
    timeoutMs: 5000,
  });
  expect(res.responses[0]!.errorCode).toBe(ErrorCode.INVALID_REQUEST);
  expect(b.broker.services.metadataCache.topic("del-both")).toBeDefined();
});

test("a deleted topic can be created again, empty", async () => {
  await createTopic("reborn");
  const kafka = new Kafka({ brokers: [`127.0.0.1:${b.port}`], logLevel: logLevel.NOTHING });
  const producer = kafka.producer();
  const admin = kafka.admin();
  await Promise.all([producer.connect(), admin.connect()]);
  try {
    await producer.send({ topic: "reborn", messages: [{ value: "a" }, { value: "b" }] });
    expect((await admin.fetchTopicOffsets("reborn"))[0]!.high).toBe("2");
    await client.request(ApiKey.DeleteTopics, 6, { topics: [{ name: "reborn" }], timeoutMs: 5000 });
    const id = await createTopic("reborn");
    const known = b.broker.services.metadataCache.topic("reborn")!;
    expect(Buffer.from(known.topicId).equals(Buffer.from(id))).toBe(true);
    expect((await admin.fetchTopicOffsets("reborn"))[0]!.high).toBe("0");
  } finally {
    await Promise.all([producer.disconnect(), admin.disconnect()]);
  }
});

test("deletion survives a restart", async () => {
  await createTopic("gone-after-restart");
  await client.request(ApiKey.DeleteTopics, 4, {
    topicNames: ["gone-after-restart"],
    timeoutMs: 5000,
  });
  client.close();
  b = await b.restart();
  client = await KafkaClient.connect(b.port);
  expect(b.broker.services.metadataCache.topic("gone-after-restart")).toBeUndefined();
  expect(fs.existsSync(partitionDir("gone-after-restart", 0))).toBe(false);
}, 20_000);

test("deletion disabled: TOPIC_DELETION_DISABLED from v3, INVALID_REQUEST before", async () => {
  const locked = await startTestBroker({ "delete.topic.enable": "false" });
  try {
    const created = await requestOnce(locked.port, ApiKey.CreateTopics, 7, {
      topics: [{ name: "kept", numPartitions: 1, replicationFactor: 1 }],
    });
    expect(created.topics[0]!.errorCode).toBe(ErrorCode.NONE);
    const kept = { topicNames: ["kept"], timeoutMs: 1 };
    const v3 = await requestOnce(locked.port, ApiKey.DeleteTopics, 5, kept);
    expect(v3.responses[0]!.errorCode).toBe(ErrorCode.TOPIC_DELETION_DISABLED);
    expect(v3.responses[0]!.errorMessage).toBe("Topic deletion is disabled.");
    const v2 = await requestOnce(locked.port, ApiKey.DeleteTopics, 2, kept);
    expect(v2.responses[0]!.errorCode).toBe(ErrorCode.INVALID_REQUEST);
    expect(locked.broker.services.metadataCache.topic("kept")).toBeDefined();
  } finally {
    await locked.stop();
  }
});

/** kafka-python's admin client (v3 DeleteTopics, v2 DescribeConfigs, v1 AlterConfigs). */
const KAFKA_PYTHON_ADMIN = `
import json, sys
from kafka.admin import (ConfigResource, ConfigResourceType, KafkaAdminClient, NewPartitions,
                         NewTopic)
a = KafkaAdminClient(bootstrap_servers=sys.argv[1])
out = {"created": a.create_topics([NewTopic("kp", 2, 1)]).topic_errors[0][1]}
a.alter_configs([ConfigResource(ConfigResourceType.TOPIC, "kp", configs={"retention.ms": "6000"})])
res = a.describe_configs([ConfigResource(ConfigResourceType.TOPIC, "kp")])[0].resources[0]
out["retention"] = [e[1] for e in res[4] if e[0] == "retention.ms"][0]
out["grown"] = a.create_partitions({"kp": NewPartitions(3)}).topic_errors[0][1]
out["deleted"] = a.delete_topics(["kp"]).topic_error_codes[0][1]
try:
    a.delete_topics(["kp"])
except Exception as e:
    out["missing"] = type(e).__name__
print(json.dumps(out))
`;

test("kafka-python's admin client creates, alters, describes, grows and deletes", async () => {
  // Asynchronous spawn: the broker runs in this process and must keep serving meanwhile.
  const child = Bun.spawn(["/usr/bin/python3", "-c", KAFKA_PYTHON_ADMIN, `127.0.0.1:${b.port}`], {
    stdout: "pipe",
    stderr: "pipe",
  });
  const [stdout, stderr, exitCode] = await Promise.all([
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
    child.exited,
  ]);
  expect({ exitCode, stderr }).toEqual({ exitCode: 0, stderr: "" });
  expect(JSON.parse(stdout)).toEqual({
    created: 0,
    retention: "6000",
    grown: 0,
    deleted: 0,
    missing: "UnknownTopicOrPartitionError",
  });
  expect(b.broker.services.metadataCache.topic("kp")).toBeUndefined();
}, 30_000);
