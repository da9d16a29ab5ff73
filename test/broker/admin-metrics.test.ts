// /metrics of an embedded broker against traffic whose size is known: kafkajs produces N
// records and commits an offset, and every counter, log gauge and the group's lag move by
// exactly that; the lag equals the one kafkajs' admin computes independently.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { Kafka, logLevel } from "kafkajs";
import { ErrorCode } from "../../src/protocol/errors.ts";
import { ApiKey } from "../../src/protocol/generated/index.ts";
import { buildRecordBatch } from "../../src/protocol/record-batch.ts";
import { type InProcessBroker, startInProcessBroker } from "../support/broker-harness.ts";
import { KafkaClient } from "../support/kafka-client.ts";

let broker: InProcessBroker;
let admin: string;
let kafka: Kafka;

beforeAll(async () => {
  broker = await startInProcessBroker({ settings: { "admin.listeners": "127.0.0.1:0" } });
  admin = `http://127.0.0.1:${broker.broker.adminListeners[0]!.port}`;
  kafka = new Kafka({ brokers: [broker.bootstrap], logLevel: logLevel.NOTHING });
}, 60_000);
afterAll(async () => {
  await broker.stop();
});

/** Every sample of the exposition by its full name with labels, e.g. `x{a="b"}`. */
async function scrape(): Promise<Map<string, number>> {
  const text = await (await fetch(`${admin}/metrics`)).text();
  const samples = new Map<string, number>();
  for (const line of text.split("\n")) {
    if (line === "" || line.startsWith("#")) continue;
    const at = line.lastIndexOf(" ");
    samples.set(line.slice(0, at), Number(line.slice(at + 1)));
  }
  return samples;
}

test("records, bytes, requests, times and log gauges move by exactly the produced records", async () => {
  const kafkaAdmin = kafka.admin();
  await kafkaAdmin.connect();
  await kafkaAdmin.createTopics({ topics: [{ topic: "counted", numPartitions: 2 }] });
  await kafkaAdmin.disconnect();
  const before = await scrape();
  expect(before.get('quill_log_end_offset{topic="counted",partition="0"}')).toBe(0);
  const producer = kafka.producer();
  await producer.connect();
  const sends = [5, 12, 3];
  for (const n of sends) {
    const messages = Array.from({ length: n }, (_, i) => ({ partition: 0, value: `v${i}` }));
    await producer.send({ topic: "counted", acks: 1, messages });
  }
  await producer.disconnect();
  const after = await scrape();
  const produce = (name: string) =>
    after.get(`${name}{api="Produce"}`)! - (before.get(`${name}{api="Produce"}`) ?? 0);
  expect(after.get('quill_topic_records_in_total{topic="counted"}')).toBe(20);
  expect(produce("quill_requests_total")).toBe(3);
  // kafkajs negotiates Produce v7 (its newest); the per-version counter says so.
  const v7 = 'quill_request_versions_total{api="Produce",version="7"}';
  expect(after.get(v7)! - (before.get(v7) ?? 0)).toBe(3);
  expect(produce("quill_request_duration_seconds_count")).toBe(3);
  expect(produce("quill_request_local_duration_seconds_count")).toBe(3);
  expect(after.get('quill_request_duration_seconds_bucket{api="Produce",le="+Inf"}')).toBe(
    after.get('quill_request_duration_seconds_count{api="Produce"}'),
  );
  const p0 = '{topic="counted",partition="0"}';
  expect(after.get(`quill_log_end_offset${p0}`)).toBe(20);
  expect(after.get(`quill_log_start_offset${p0}`)).toBe(0);
  expect(after.get(`quill_log_segments${p0}`)).toBe(1);
  // The log holds exactly the batches produced: their bytes are the topic's bytes in.
  const bytesIn = after.get('quill_topic_bytes_in_total{topic="counted"}')!;
  expect(after.get(`quill_log_size_bytes${p0}`)).toBe(bytesIn);
  expect(after.get('quill_log_end_offset{topic="counted",partition="1"}')).toBe(0);
  expect(after.get("quill_partitions")).toBeGreaterThanOrEqual(2);
  expect(after.get("quill_leader_partitions")).toBe(after.get("quill_partitions"));
  expect(after.get("quill_under_replicated_partitions")).toBe(0);
  expect(after.get("quill_offline_partitions")).toBe(0);
  expect(after.get("quill_active_controller")).toBe(1);
  expect(after.get('quill_connections{listener="PLAINTEXT"}')).toBeGreaterThanOrEqual(0);
  expect(after.get("quill_event_loop_delay_seconds_count")).toBeGreaterThanOrEqual(0);
});

test("a committed offset shows as lag equal to the one kafkajs computes", async () => {
  const kafkaAdmin = kafka.admin();
  await kafkaAdmin.connect();
  const client = await KafkaClient.connect(broker.port);
  try {
    // A commit outside any generation, as a tool resetting offsets makes one.
    const res = await client.request(ApiKey.OffsetCommit, 8, {
      groupId: "laggard",
      generationIdOrMemberEpoch: -1,
      memberId: "",
      groupInstanceId: null,
      retentionTimeMs: -1n,
      topics: [
        {
          name: "counted",
          partitions: [
            {
              partitionIndex: 0,
              committedOffset: 7n,
              committedLeaderEpoch: -1,
              committedMetadata: null,
            },
          ],
        },
      ],
    });
    expect(res.topics[0]!.partitions[0]!.errorCode).toBe(ErrorCode.NONE);
    const committed = await kafkaAdmin.fetchOffsets({ groupId: "laggard", topics: ["counted"] });
    const ends = await kafkaAdmin.fetchTopicOffsets("counted");
    const end0 = Number(ends.find((o) => o.partition === 0)!.high);
    const offset0 = Number(committed[0]!.partitions.find((p) => p.partition === 0)!.offset);
    const samples = await scrape();
    const labels = '{group="laggard",topic="counted",partition="0"}';
    expect(samples.get(`quill_consumer_group_lag${labels}`)).toBe(end0 - offset0);
    expect(samples.get(`quill_consumer_group_lag${labels}`)).toBe(13);
    expect(samples.get(`quill_consumer_group_committed_offset${labels}`)).toBe(7);
    expect(samples.get('quill_consumer_group_members{group="laggard",state="Empty"}')).toBe(0);
    expect(samples.get('quill_consumer_groups{state="Empty"}')).toBeGreaterThanOrEqual(1);
  } finally {
    client.close();
    await kafkaAdmin.disconnect();
  }
});

test("error codes in responses are counted per API and error", async () => {
  const client = await KafkaClient.connect(broker.port);
  try {
    const key = 'quill_request_errors_total{api="Produce",error="UNKNOWN_TOPIC_OR_PARTITION"}';
    const before = (await scrape()).get(key) ?? 0;
    const records = buildRecordBatch([{ value: new TextEncoder().encode("x") }]);
    const res = await client.request(ApiKey.Produce, 9, {
      transactionalId: null,
      acks: 1,
      timeoutMs: 5_000,
      topicData: [{ name: "counted", partitionData: [{ index: 7, records }] }],
    });
    const code = res.responses[0]!.partitionResponses[0]!.errorCode;
    expect(code).toBe(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION);
    expect((await scrape()).get(key)).toBe(before + 1);
  } finally {
    client.close();
  }
});
