// Transactions v2 (KIP-890 part 2) with the Kafka 4.4 Java producer (test/compat/java4,
// TransactionsV2.java): it sees transaction.version 2 finalized in ApiVersions, so it sends no
// AddPartitionsToTxn or AddOffsetsToTxn, produces with v12+ (the leader adds the partitions),
// commits offsets with TxnOffsetCommit v5+ and ends each transaction with EndTxn v5 (the epoch
// bumped every time). The broker's per-version request counters show which versions it used.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { type InProcessBroker, startInProcessBroker } from "../support/broker-harness.ts";
import { ensureJava4Built, runJava4 } from "../support/java4-client.ts";

let broker: InProcessBroker;
let admin: string;

beforeAll(async () => {
  ensureJava4Built("TransactionsV2");
  broker = await startInProcessBroker({
    settings: {
      "admin.listeners": "127.0.0.1:0",
      "transaction.state.log.num.partitions": "1",
      "group.consumer.heartbeat.interval.ms": "300",
    },
  });
  admin = `http://127.0.0.1:${broker.broker.adminListeners[0]!.port}`;
}, 300_000);

afterAll(async () => {
  await broker?.stop();
});

/** quill_request_versions_total per `api:version`. */
async function requestVersions(): Promise<Map<string, number>> {
  const text = await (await fetch(`${admin}/metrics`)).text();
  const out = new Map<string, number>();
  for (const m of text.matchAll(
    /^quill_request_versions_total\{api="(\w+)",version="(\d+)"\} (\d+)$/gm,
  )) {
    out.set(`${m[1]}:${m[2]}`, Number(m[3]));
  }
  return out;
}

test("a Kafka 4.4 transactional producer uses transactions v2: commits, aborts, offsets, fencing", async () => {
  const lines = await runJava4("quill.compat4.TransactionsV2", [broker.bootstrap, "tv2", "tv2-id"]);
  const fenced = lines.find((l) => l.startsWith("first fenced "));
  expect(["ProducerFencedException", "InvalidProducerEpochException"]).toContain(
    fenced?.slice("first fenced ".length) ?? "not fenced",
  );
  const committed = [
    ...[0, 1, 2, 3, 4].map((i) => `committed-a-${i}`),
    ...[0, 1, 2].map((i) => `committed-b-${i}`),
    ...[0, 1].map((i) => `committed-c-${i}`),
  ];
  expect(lines).toContain(`read_committed ${committed.join(",")}`);
  expect(lines).toContain("output 8");
  // Inputs: 5 aborted and their marker (0-5), 5 committed (6-10), a marker, 3 committed
  // (12-14): the group's offset is just after the 8th input.
  expect(lines.find((l) => l.startsWith("transformed "))).toBe("transformed 8 committed offset 15");
  const versions = await requestVersions();
  const used = (api: string) =>
    [...versions].filter(([k]) => k.startsWith(`${api}:`)).map(([k]) => Number(k.split(":")[1]));
  expect(used("AddPartitionsToTxn")).toEqual([]);
  expect(used("AddOffsetsToTxn")).toEqual([]);
  expect(used("EndTxn")).toEqual([5]);
  expect(Math.min(...used("Produce"))).toBeGreaterThanOrEqual(12);
  expect(Math.min(...used("TxnOffsetCommit"))).toBeGreaterThanOrEqual(5);
  console.log("versions used:", JSON.stringify(Object.fromEntries(versions)));
}, 120_000);
