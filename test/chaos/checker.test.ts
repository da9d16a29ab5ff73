/**
 * The chaos harness's checker on logs written here: a lost acknowledgement, a duplicate, a dirty
 * read, a reordering, differing replicas and a committed offset moving back are each counted.
 */
import { afterEach, expect, test } from "bun:test";
import { appendFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { checkAll } from "../../scripts/chaos-harness/checker.ts";
import { COMBINATIONS, holdFor, KINDS, parseOptions } from "../../scripts/chaos-harness/cluster.ts";
import { buildRecordBatch } from "../../src/protocol/record-batch.ts";

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** One segment of one-record batches with offsets 0.. for `values`. */
function segment(values: readonly string[]): Uint8Array {
  const batches = values.map((value, offset) => {
    const record = { key: null, value: new TextEncoder().encode(value) };
    const batch = buildRecordBatch([record], { timestampMs: 1 });
    new DataView(batch.buffer, batch.byteOffset).setBigInt64(0, BigInt(offset));
    return batch;
  });
  return Buffer.concat(batches);
}

function broker(root: string, id: number, values: readonly string[]): string {
  const dir = join(root, `b${id}`);
  mkdirSync(join(dir, "chaos-0"), { recursive: true });
  writeFileSync(join(dir, "chaos-0", "00000000000000000000.log"), segment(values));
  return dir;
}

const jsonl = (path: string, rows: object[]) =>
  appendFileSync(path, rows.map((r) => `${JSON.stringify(r)}\n`).join(""));

test("counts lost, duplicated, dirty, reordered, differing and backwards records", () => {
  const root = mkdtempSync(join(tmpdir(), "quill-chaos-check-"));
  dirs.push(root);
  const dataDirs = new Map([
    [1, broker(root, 1, ["a", "b", "c", "c"])],
    [2, broker(root, 2, ["a", "b", "c", "c"])],
    [3, broker(root, 3, ["a", "b"])],
  ]);
  const ack = (offset: number, value: string, atMs: number) => ({
    partition: 0,
    offset: String(offset),
    value,
    sentAtMs: atMs,
    atMs,
  });
  // "x" was acknowledged at offset 1 but offset 1 holds "b": lost. "c" at 2 then "b" at 1:
  // reordered.
  jsonl(join(root, "acked.jsonl"), [ack(0, "a", 1), ack(2, "c", 2), ack(1, "x", 3)]);
  jsonl(join(root, "read.jsonl"), [
    { partition: 0, offset: "0", value: "a" },
    { partition: 0, offset: "1", value: "y" },
  ]);
  jsonl(join(root, "commits.jsonl"), [
    { partition: 0, committed: "3" },
    { partition: 0, committed: "2" },
  ]);
  const faults = [{ kind: "kill9", target: "broker 1", startMs: 2, endMs: 10 }];
  const report = checkAll({
    outDir: root,
    dataDirs,
    topic: "chaos",
    partitions: 1,
    faults,
    startMs: 0,
    endMs: 10,
  });
  expect(report.acked).toBe(3);
  expect(report.lost).toBe(1);
  expect(report.duplicates).toBe(1);
  expect(report.dirtyReads).toBe(1);
  expect(report.reordered).toBe(1);
  expect(report.commitsBackwards).toBe(1);
  expect(report.replicasDiffer).toEqual(["chaos-0: broker 1 vs 3"]);
  expect(report.rows).toEqual(["| kill9 | 1 | 2 | 1 | 7 |"]);
});

test("with more brokers than replicas, only the partition's replicas are compared", () => {
  const root = mkdtempSync(join(tmpdir(), "quill-chaos-check-"));
  dirs.push(root);
  const elsewhere = join(root, "b4");
  mkdirSync(elsewhere);
  const dataDirs = new Map([
    [1, broker(root, 1, ["a", "b"])],
    [2, broker(root, 2, ["a", "b"])],
    [3, broker(root, 3, ["a", "b"])],
    [4, elsewhere],
  ]);
  jsonl(join(root, "acked.jsonl"), [
    { partition: 0, offset: "1", value: "b", sentAtMs: 1, atMs: 1 },
  ]);
  const input = { outDir: root, topic: "chaos", partitions: 1, faults: [], startMs: 0, endMs: 2 };
  const report = checkAll({ ...input, dataDirs });
  expect(report.replicasDiffer).toEqual([]);
  expect(report.lost).toBe(0);
  const none = checkAll({ ...input, dataDirs: new Map([[4, elsewhere]]) });
  expect(none.replicasDiffer).toEqual(["chaos-0: no replica found"]);
});

test("--brokers takes 3 to 5; combined faults are in every schedule", () => {
  expect(parseOptions([]).brokers).toBe(3);
  expect(parseOptions(["--quick", "--brokers", "5"]).brokers).toBe(5);
  expect(() => parseOptions(["--brokers", "2"])).toThrow("--brokers takes 3 to 5");
  expect(() => parseOptions(["--brokers", "6"])).toThrow("--brokers takes 3 to 5");
  expect(KINDS).toContain("leader-cut+zk-minority");
  for (const [kind, parts] of Object.entries(COMBINATIONS)) expect(kind).toBe(parts.join("+"));
});

test("the loss kinds are in every schedule; --quick holds them and kill9 shorter, --hold-ms wins", () => {
  expect(KINDS).toContain("loss");
  expect(KINDS).toContain("loss-one-way");
  const quick = parseOptions(["--quick"]);
  expect(holdFor(quick, "loss")).toBe(3_000);
  expect(holdFor(quick, "kill9")).toBe(2_000);
  expect(holdFor(quick, "leader-cut")).toBe(6_000);
  expect(holdFor(parseOptions([]), "loss")).toBe(8_000);
  expect(holdFor(parseOptions(["--quick", "--hold-ms", "5000"]), "loss")).toBe(5_000);
});

test("a gap is blamed on the fault in progress when it began, not on the faults it runs into", () => {
  const root = mkdtempSync(join(tmpdir(), "quill-chaos-check-"));
  dirs.push(root);
  const values = ["a", "b", "c", "d"];
  const dataDirs = new Map([[1, broker(root, 1, values)]]);
  // Acknowledged at 1, 5, 30 and 31: the 25 ms gap begins during kill9 and runs into sigstop,
  // which begins after it (at 20) and sees acknowledgements 10 ms after it began.
  const atMs = [1, 5, 30, 31];
  jsonl(
    join(root, "acked.jsonl"),
    values.map((value, i) => ({
      partition: 0,
      offset: String(i),
      value,
      sentAtMs: atMs[i]!,
      atMs: atMs[i]!,
    })),
  );
  const faults = [
    { kind: "kill9", target: "broker 1", startMs: 2, endMs: 19 },
    { kind: "sigstop", target: "broker 1", startMs: 20, endMs: 35 },
    { kind: "disk-full", target: "broker 1", startMs: 0, endMs: 0 },
  ];
  const input = { outDir: root, topic: "chaos", partitions: 1, startMs: 0, endMs: 40 };
  const report = checkAll({ ...input, dataDirs, faults });
  expect(report.rows).toEqual([
    "| kill9 | 1 | 1 | 0 | 25 |",
    "| sigstop | 1 | 2 | 0 | 9 |",
    "| disk-full | 1 | 0 | 0 | 1 |",
  ]);
});
