// The web console in a real browser (Debian's chromium, headless, driven through the DevTools
// protocol) against a running broker with a topic and a lagging group: every page loads with no
// console error, the lag shown equals the lag kafkajs computes, and the record browser shows
// the records produced. Screenshots go to .ci/artifacts/console/ (kept by CI, ignored by git).
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { Kafka, logLevel } from "kafkajs";
import { ErrorCode } from "../../src/protocol/errors.ts";
import { ApiKey } from "../../src/protocol/generated/index.ts";
import {
  type InProcessBroker,
  REPO_ROOT,
  startInProcessBroker,
} from "../support/broker-harness.ts";
import { HeadlessChromium } from "../support/headless-chromium.ts";
import { KafkaClient } from "../support/kafka-client.ts";

const SCREENSHOTS = join(REPO_ROOT, ".ci", "artifacts", "console");
const RECORDS = 30;
const COMMITTED = 12;

let broker: InProcessBroker;
let browser: HeadlessChromium;
let admin: string;
let kafka: Kafka;

beforeAll(async () => {
  mkdirSync(SCREENSHOTS, { recursive: true });
  broker = await startInProcessBroker({ settings: { "admin.listeners": "127.0.0.1:0" } });
  admin = `http://127.0.0.1:${broker.broker.adminListeners[0]!.port}`;
  kafka = new Kafka({ brokers: [broker.bootstrap], logLevel: logLevel.NOTHING });
  const producer = kafka.producer();
  await producer.connect();
  const messages = Array.from({ length: RECORDS }, (_, i) => ({
    key: `key-${i}`,
    value: JSON.stringify({ n: i }),
    headers: { source: "console-test" },
  }));
  await producer.send({
    topic: "browsed",
    messages: messages.map((m) => ({ ...m, partition: 0 })),
  });
  await producer.disconnect();
  await commit("slow", "browsed", COMMITTED);
  browser = await HeadlessChromium.start();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await broker.stop();
});

/** A commit outside any generation, as an offsets tool makes one: the group lags behind. */
async function commit(group: string, topic: string, offset: number): Promise<void> {
  const client = await KafkaClient.connect(broker.port);
  try {
    const res = await client.request(ApiKey.OffsetCommit, 8, {
      groupId: group,
      generationIdOrMemberEpoch: -1,
      memberId: "",
      groupInstanceId: null,
      retentionTimeMs: -1n,
      topics: [
        {
          name: topic,
          partitions: [
            {
              partitionIndex: 0,
              committedOffset: BigInt(offset),
              committedLeaderEpoch: -1,
              committedMetadata: null,
            },
          ],
        },
      ],
    });
    expect(res.topics[0]!.partitions[0]!.errorCode).toBe(ErrorCode.NONE);
  } finally {
    client.close();
  }
}

async function visit(path: string, screenshot: string): Promise<void> {
  await browser.goto(`${admin}${path}`);
  await browser.screenshot(join(SCREENSHOTS, `${screenshot}.png`));
}

test("every console page loads in chromium with no console error", async () => {
  const pages: [string, string][] = [
    ["/console", "cluster"],
    ["/console/topics", "topics"],
    ["/console/topics/browsed", "topic"],
    ["/console/groups", "groups"],
    ["/console/groups/slow", "group"],
    ["/console/configs", "configs"],
  ];
  for (const [path, name] of pages) {
    await visit(path, name);
    expect(await browser.evaluate<string>("document.querySelector('h1').textContent")).not.toBe("");
  }
  expect(await browser.evaluate<number>("document.querySelectorAll('table').length")).toBe(1);
  await visit("/console", "cluster");
  const brokers = await browser.evaluate<string>("document.querySelector('table').innerText");
  expect(brokers).toContain("controller");
  expect(browser.errors).toEqual([]);
}, 60_000);

test("the lag shown equals the lag kafkajs computes", async () => {
  const kafkaAdmin = kafka.admin();
  await kafkaAdmin.connect();
  let expected: number;
  try {
    const committed = await kafkaAdmin.fetchOffsets({ groupId: "slow", topics: ["browsed"] });
    const ends = await kafkaAdmin.fetchTopicOffsets("browsed");
    const high = Number(ends.find((o) => o.partition === 0)!.high);
    expected = high - Number(committed[0]!.partitions.find((p) => p.partition === 0)!.offset);
  } finally {
    await kafkaAdmin.disconnect();
  }
  expect(expected).toBe(RECORDS - COMMITTED);
  await visit("/console/groups/slow", "group");
  const shown = await browser.evaluate<string>(
    'document.querySelector(\'.lag[data-topic="browsed"][data-partition="0"]\').textContent',
  );
  expect(Number(shown)).toBe(expected);
  await visit("/console/groups", "groups");
  expect(await browser.evaluate<string>("document.querySelector('tbody').innerText")).toContain(
    String(expected),
  );
  expect(browser.errors).toEqual([]);
});

test("the record browser shows the records produced, as text, JSON and hex", async () => {
  await visit(`/console/topics/browsed?partition=0&offset=0&count=${RECORDS}`, "records");
  const offsets = await browser.evaluate<string[]>(
    "[...document.querySelectorAll('.offset')].map((e) => e.textContent)",
  );
  expect(offsets).toEqual(Array.from({ length: RECORDS }, (_, i) => String(i)));
  const values = await browser.evaluate<string[]>(
    "[...document.querySelectorAll('.value')].map((e) => e.textContent)",
  );
  expect(values).toEqual(Array.from({ length: RECORDS }, (_, i) => JSON.stringify({ n: i })));
  const row = await browser.evaluate<string>(
    "document.querySelector('.offset').closest('tr').innerText",
  );
  expect(row).toContain("key-0");
  expect(row).toContain("source=console-test");
  // The latest records by default; JSON pretty-printed; hex.
  await visit("/console/topics/browsed?format=json&count=5", "records-json");
  const latest = await browser.evaluate<string[]>(
    "[...document.querySelectorAll('.offset')].map((e) => e.textContent)",
  );
  expect(latest).toEqual(["25", "26", "27", "28", "29"]);
  const json = await browser.evaluate<string>("document.querySelector('.value').textContent");
  expect(JSON.parse(json)).toEqual({ n: 25 });
  await visit("/console/topics/browsed?format=hex&offset=3&count=1", "records-hex");
  const hex = await browser.evaluate<string>("document.querySelector('.value').textContent");
  expect(hex).toBe(
    Buffer.from(JSON.stringify({ n: 3 }))
      .toString("hex")
      .replace(/(.{2})(?!$)/g, "$1 "),
  );
  expect(browser.errors).toEqual([]);
});
