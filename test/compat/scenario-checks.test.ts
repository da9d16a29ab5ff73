// The record checks behind every consume-group cell: a matrix that passes must mean the records
// came back whole, once, in order. Each case breaks one thing a broker could get wrong and
// expects the check to name it; the Python copy of the checks is run on the same cases.
import { expect, test } from "bun:test";
import { join } from "node:path";
import {
  type ConsumedRecord,
  KEY_COUNT,
  PARTITION_COUNT,
  recordsFor,
  verifyConsumed,
} from "./support/scenario.ts";

/** What a healthy group consumes: keys hashed to partitions, partition 0 to member 0. */
function healthy(): ConsumedRecord[] {
  return [...recordsFor("gzip"), ...recordsFor("zstd")].map((record) => {
    const partition = (record.seq % KEY_COUNT) % PARTITION_COUNT;
    return {
      member: partition === 0 ? 0 : 1,
      partition,
      key: record.key,
      value: record.value,
      headers: record.headers,
    };
  });
}

const CASES: ReadonlyArray<{
  name: string;
  broken: (records: ConsumedRecord[]) => ConsumedRecord[];
  problem: RegExp;
}> = [
  { name: "a lost record", broken: (r) => r.slice(1), problem: /1 of 20000 records missing/ },
  {
    name: "a record delivered twice",
    broken: (r) => [...r, r[5] as ConsumedRecord],
    problem: /record 5 delivered twice/,
  },
  {
    name: "two records of a key swapped",
    broken: (r) => [
      r[100] as ConsumedRecord,
      r[0] as ConsumedRecord,
      ...r.slice(1, 100),
      ...r.slice(101),
    ],
    problem: /key key-0: record 0 after 100/,
  },
  {
    name: "a header lost",
    broken: (r) => r.map((x, i) => (i === 7 ? { ...x, headers: x.headers.slice(0, 1) } : x)),
    problem: /record 7: headers/,
  },
  {
    name: "a changed value",
    broken: (r) => r.map((x, i) => (i === 9 ? { ...x, value: `${x.value}!` } : x)),
    problem: /record 9: value differs/,
  },
  {
    name: "a key in two partitions",
    broken: (r) => r.map((x, i) => (i === 300 ? { ...x, partition: (x.partition + 1) % 3 } : x)),
    problem: /key key-0 in partitions/,
  },
  {
    name: "one member doing all the work",
    broken: (r) => r.map((x) => ({ ...x, member: 0 })),
    problem: /member 1 received no records/,
  },
];

test("a healthy group's records pass the checks", () => {
  expect(verifyConsumed(healthy(), ["gzip", "zstd"])).toEqual([]);
});

test("kcat's records, with one codec header per run, pass when headersPerRecord is false", () => {
  const records = healthy().map((record) => ({ ...record, headers: record.headers.slice(1) }));
  expect(verifyConsumed(records, ["gzip", "zstd"], false)).toEqual([]);
  expect(verifyConsumed(records, ["gzip", "zstd"]).join("; ")).toMatch(/headers/);
});

for (const { name, broken, problem } of CASES) {
  test(`the checks catch ${name}`, () => {
    expect(verifyConsumed(broken(healthy()), ["gzip", "zstd"]).join("; ")).toMatch(problem);
  });
}

// Python reads 160,000 records here; on a loaded 2-core machine that can take several seconds.
test("the Python checks (scenario.py) agree on every case", () => {
  const cases = [{ name: "healthy", records: healthy(), problem: "" }].concat(
    CASES.map(({ name, broken, problem }) => ({
      name,
      records: broken(healthy()),
      problem: problem.source,
    })),
  );
  const script = `
import json, re, sys
sys.path.insert(0, ${JSON.stringify(join(import.meta.dir, "support"))})
from scenario import Consumed, verify_consumed
results = {}
for case in json.load(sys.stdin):
    records = [Consumed(m, p, k, v, [tuple(h) for h in hs]) for m, p, k, v, hs in case["records"]]
    problems = "; ".join(verify_consumed(records, ["gzip", "zstd"]))
    expected = case["problem"]
    results[case["name"]] = bool(re.search(expected, problems)) if expected else problems == ""
print(json.dumps(results))
`;
  const python = Bun.spawnSync(["python3", "-c", script], {
    // Records as arrays, not objects: a third of the JSON for Python to read.
    stdin: new TextEncoder().encode(JSON.stringify(cases.map(compact))),
    env: { ...process.env, BOOTSTRAP: "unused:0", TOPIC: "unused", GROUP: "unused" },
  });
  expect(new TextDecoder().decode(python.stderr)).toBe("");
  const results = JSON.parse(new TextDecoder().decode(python.stdout));
  expect(results).toEqual(Object.fromEntries(cases.map((c) => [c.name, true])));
}, 30_000);

function compact(c: { name: string; records: ConsumedRecord[]; problem: string }) {
  const records = c.records.map((r) => [r.member, r.partition, r.key, r.value, r.headers]);
  return { name: c.name, problem: c.problem, records };
}
