// `bun scripts/bench-acls.ts [--records N] [--rounds N] [--batch1]`
//
// Produce throughput without an authorizer and with Kafka's AclAuthorizer holding 10,000 ACLs
// (issue 16), same client, same machine, same run: librdkafka through
// scripts/bench-e2e/rdkafka-load (built by `bun scripts/bench-e2e.ts`, cached in
// ~/.cache/quill-bench) with 100-byte records and acks=1. Two embedded brokers run side by side;
// rounds alternate between them, each on a fresh topic of one partition (auto-created, which the
// ACLs must allow). The authorized broker's ACLs: 5,000 literal topic ACLs, 4,998 prefixed ones
// and the two that let User:ANONYMOUS (the PLAINTEXT listener's principal) create, write and
// describe `bench-*` topics and write idempotently, written to its acls.json before it starts.
// --batch1 sends one record per batch (linger.ms=0), where per-request work shows most.
// Not a test: the goal is a difference within the noise (a few percent).
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  OPERATION_ALL,
  PATTERN_LITERAL,
  PATTERN_PREFIXED,
  PERMISSION_ALLOW,
} from "../src/security/acl.ts";
import type { AclUpdate } from "../src/security/acl-store.ts";
import { AclOperation, ResourceType } from "../src/security/authorized-operations.ts";
import { LocalAclStore } from "../src/security/local-acl-store.ts";
import { CACHE_DIR, cpuSeconds, listeningPort, loadAverage } from "./bench-common.ts";

const LOAD = join(CACHE_DIR, "rdkafka-load");
const ROOT = join(import.meta.dir, "..");
const ACL_COUNT = 10_000;

function flag(name: string, fallback: number): number {
  const at = process.argv.indexOf(name);
  return at < 0 ? fallback : Number(process.argv[at + 1]);
}

const records = flag("--records", 1_000_000);
const rounds = flag("--rounds", 3);
const batchSettings = process.argv.includes("--batch1")
  ? ["batch.num.messages=1", "linger.ms=0"]
  : [];

const entry = (principal: string, operation: number) =>
  ({ principal, host: "*", operation, permissionType: PERMISSION_ALLOW }) as const;

/** 10,000 ACLs, of which two apply to the benchmark's principal. */
async function writeAcls(dataDir: string): Promise<void> {
  const updates: AclUpdate[] = [];
  const add = (resourceType: ResourceType, name: string, patternType: 3 | 4, e: object) =>
    updates.push({
      pattern: { resourceType, name, patternType },
      change: () => [e as ReturnType<typeof entry>],
    });
  for (let i = 0; i < 5_000; i++) {
    add(ResourceType.TOPIC, `other-${i}`, PATTERN_LITERAL, entry(`User:u${i}`, AclOperation.READ));
  }
  for (let i = 0; i < ACL_COUNT - 5_002; i++) {
    const e = entry(`User:team${i}`, OPERATION_ALL);
    add(ResourceType.TOPIC, `team-${i}-`, PATTERN_PREFIXED, e);
  }
  add(ResourceType.TOPIC, "bench-", PATTERN_PREFIXED, entry("User:ANONYMOUS", OPERATION_ALL));
  add(
    ResourceType.CLUSTER,
    "kafka-cluster",
    PATTERN_LITERAL,
    entry("User:ANONYMOUS", AclOperation.IDEMPOTENT_WRITE),
  );
  await new LocalAclStore(dataDir).update(updates);
}

async function startBroker(dataDir: string, settings: string[]) {
  const proc = Bun.spawn(
    [
      process.execPath,
      join(ROOT, "src", "main.ts"),
      "serve",
      "--listen",
      "127.0.0.1:0",
      "--data-dir",
      dataDir,
      ...settings.flatMap((s) => ["--set", s]),
    ],
    { stderr: "pipe", stdout: "ignore" },
  );
  return { proc, port: await listeningPort(proc.stderr) };
}

type Broker = Awaited<ReturnType<typeof startBroker>>;

async function run(broker: Broker, topic: string): Promise<{ rate: number; cpu: number }> {
  const cpuBefore = cpuSeconds(broker.proc.pid);
  const proc = Bun.spawn(
    [
      LOAD,
      "produce",
      `127.0.0.1:${broker.port}`,
      topic,
      "1",
      String(records),
      "100",
      "1",
      ...batchSettings,
    ],
    { stdout: "pipe", stderr: "pipe" },
  );
  const out = await new Response(proc.stdout).text();
  if ((await proc.exited) !== 0) throw new Error(await new Response(proc.stderr).text());
  const result = JSON.parse(out) as { records: number; seconds: number; failed: number };
  if (result.failed !== 0) throw new Error(`${result.failed} deliveries failed`);
  return { rate: result.records / result.seconds, cpu: cpuSeconds(broker.proc.pid) - cpuBefore };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const pct = (x: number, base: number) => `${(((x - base) / base) * 100).toFixed(1)}%`;

const plainDir = mkdtempSync(join(tmpdir(), "quill-bench-noacl-"));
const aclDir = mkdtempSync(join(tmpdir(), "quill-bench-acl-"));
await writeAcls(aclDir);
const plain = await startBroker(plainDir, []);
const authorized = await startBroker(aclDir, [
  "authorizer.class.name=kafka.security.authorizer.AclAuthorizer",
]);
const off: { rate: number; cpu: number }[] = [];
const on: { rate: number; cpu: number }[] = [];
try {
  for (let round = 0; round < rounds; round++) {
    off.push(await run(plain, `bench-off-${round}`));
    on.push(await run(authorized, `bench-on-${round}`));
    const show = (r: { rate: number; cpu: number }) =>
      `${r.rate.toFixed(0)}/s ${r.cpu.toFixed(2)} s`;
    console.log(`round ${round}: no authorizer ${show(off[round]!)}, ACLs ${show(on[round]!)}`);
  }
  const [a, b] = [median(off.map((r) => r.rate)), median(on.map((r) => r.rate))];
  const [ca, cb] = [median(off.map((r) => r.cpu)), median(on.map((r) => r.cpu))];
  const load = loadAverage();
  console.log(`medians of ${rounds} runs of ${records} x 100 B records; load average ${load}`);
  console.log("| authorizer | records/s | broker CPU s |");
  console.log("|---|---|---|");
  console.log(`| none | ${a.toFixed(0)} | ${ca.toFixed(2)} |`);
  const rate = `${b.toFixed(0)} (${pct(b, a)})`;
  console.log(`| AclAuthorizer, ${ACL_COUNT} ACLs | ${rate} | ${cb.toFixed(2)} (${pct(cb, ca)}) |`);
} finally {
  for (const b of [plain, authorized]) {
    b.proc.kill("SIGTERM");
    await b.proc.exited;
  }
  rmSync(plainDir, { recursive: true, force: true });
  rmSync(aclDir, { recursive: true, force: true });
}
