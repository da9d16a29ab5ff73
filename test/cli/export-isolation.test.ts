/**
 * `--isolation-level read_committed` on `quill export` and `quill topic consume`: kafkajs writes
 * committed and aborted transactions between plain records; read_committed leaves out exactly
 * the aborted ones (the Fetch answer's aborted list), read_uncommitted shows them all, and an
 * open transaction holds read_committed at the last stable offset.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { Kafka, logLevel } from "kafkajs";
import {
  type InProcessBroker,
  removeDir,
  startInProcessBroker,
  tempDir,
} from "../support/broker-harness.ts";
import { quill } from "./quill-client.ts";

let broker: InProcessBroker;
let b: string[];
const dir = tempDir("quill-export-isolation-");
const kafka = () =>
  new Kafka({ brokers: [broker.bootstrap], logLevel: logLevel.NOTHING, clientId: "iso" });

async function transact(id: string, values: string[], end: "commit" | "abort" | "open") {
  const producer = kafka().producer({ transactionalId: id, maxInFlightRequests: 1 });
  await producer.connect();
  const txn = await producer.transaction();
  await txn.send({ topic: "txns", messages: values.map((value) => ({ value, partition: 0 })) });
  if (end === "commit") await txn.commit();
  if (end === "abort") await txn.abort();
  await producer.disconnect();
}

beforeAll(async () => {
  broker = await startInProcessBroker({
    settings: { "transaction.state.log.replication.factor": "1" },
  });
  b = ["-b", broker.bootstrap];
  const created = await quill(["topic", "create", "txns", "-p", "1", ...b]);
  expect(created.code).toBe(0);
  await transact("t1", ["a1", "a2", "a3"], "commit");
  await transact("t2", ["b1", "b2"], "abort");
  const plain = kafka().producer();
  await plain.connect();
  await plain.send({ topic: "txns", messages: [{ value: "c1", partition: 0 }] });
  await plain.disconnect();
  await transact("t2", ["d1"], "commit");
  await transact("t3", ["e1", "e2"], "abort");
}, 60_000);
afterAll(async () => {
  await broker.stop();
  removeDir(broker.dataDir);
  removeDir(dir);
});

function exportedValues(out: string): string[] {
  const files = readdirSync(join(out, "txns")).filter((f) => f.endsWith(".jsonl"));
  return files
    .flatMap((f) =>
      readFileSync(join(out, "txns", f), "utf8")
        .trim()
        .split("\n"),
    )
    .map((line) => JSON.parse(line).value);
}

describe("read_committed", () => {
  test("export and consume drop aborted transactions; read_uncommitted keeps them", async () => {
    const committed = join(dir, "committed");
    const r = await quill([
      "export",
      "txns",
      "--to",
      committed,
      "--isolation-level",
      "read_committed",
      ...b,
    ]);
    expect(r.code).toBe(0);
    expect(exportedValues(committed)).toEqual(["a1", "a2", "a3", "c1", "d1"]);
    const all = join(dir, "all");
    expect((await quill(["export", "txns", "--to", all, ...b])).code).toBe(0);
    expect(exportedValues(all)).toEqual(["a1", "a2", "a3", "b1", "b2", "c1", "d1", "e1", "e2"]);
    const consumed = await quill([
      "topic",
      "consume",
      "txns",
      "-e",
      "--isolation-level",
      "read_committed",
      ...b,
    ]);
    expect(consumed.stdout).toBe("a1\na2\na3\nc1\nd1\n");
    const bad = await quill([
      "export",
      "txns",
      "--to",
      all,
      "--isolation-level",
      "committed",
      ...b,
    ]);
    expect(bad.code).toBe(2);
  }, 60_000);

  test("an open transaction holds read_committed at the last stable offset", async () => {
    await transact("t4", ["f1"], "open");
    const plain = kafka().producer();
    await plain.connect();
    await plain.send({ topic: "txns", messages: [{ value: "g1", partition: 0 }] });
    await plain.disconnect();
    const consumed = await quill([
      "topic",
      "consume",
      "txns",
      "-e",
      "--isolation-level",
      "read_committed",
      ...b,
    ]);
    expect(consumed.stdout).toBe("a1\na2\na3\nc1\nd1\n");
    const uncommitted = await quill(["topic", "consume", "txns", "-e", ...b]);
    expect(uncommitted.stdout).toContain("f1\ng1\n");
  }, 60_000);
});
