// `bun scripts/bench-quotas.ts [--records N] [--rounds N] [--baseline COMMIT]`
//
// What client quotas cost a producer's requests (issue 16), same client, same machine, same run:
// librdkafka through scripts/bench-e2e/rdkafka-load (built by `bun scripts/bench-e2e.ts`, cached
// in ~/.cache/quill-bench) sending one 100-byte record per request (batch.num.messages=1,
// linger.ms=0, acks=1), where per-request work shows most. Embedded brokers run side by side and
// rounds alternate between them, each on a fresh topic:
// - `none`: no quota set (the request path reads one boolean);
// - `other`: a quota set for another client-id, so every request looks its client up;
// - `applies`: producer_byte_rate and request_percentage far above what the client reaches, so
//   every request is measured against both and never throttled;
// - with --baseline, the same broker built from COMMIT (e.g. the commit before quotas), to
//   compare `none` with a broker that has no quota code at all.
// `--micro` prints only the in-process cost of the quota work per request (CPU time).
// Not a test: the goal is differences within the noise.
import { mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { QuotaEntityPath } from "../src/metadata/client-quota-store.ts";
import { ClientQuotaManager } from "../src/server/client-quota-manager.ts";
import { CACHE_DIR, cpuSeconds, listeningPort, loadAverage } from "./bench-common.ts";

const LOAD = join(CACHE_DIR, "rdkafka-load");
const ROOT = join(import.meta.dir, "..");
const CLIENT_ID = "rdkafka";

function flag(name: string, fallback: string): string {
  const at = process.argv.indexOf(name);
  return at < 0 ? fallback : process.argv[at + 1]!;
}

const records = Number(flag("--records", "100000"));
const rounds = Number(flag("--rounds", "3"));
const baseline = flag("--baseline", "");

/** The source tree of `commit` in a temp dir, sharing this checkout's node_modules. */
function exportCommit(commit: string): string {
  const dir = mkdtempSync(join(tmpdir(), "quill-bench-baseline-"));
  const archive = Bun.spawnSync(["git", "-C", ROOT, "archive", commit], { stdout: "pipe" });
  if (archive.exitCode !== 0) throw new Error(`git archive ${commit} failed`);
  Bun.spawnSync(["tar", "-x", "-C", dir], { stdin: archive.stdout });
  symlinkSync(join(ROOT, "node_modules"), join(dir, "node_modules"));
  return dir;
}

async function startBroker(root: string, dataDir: string) {
  const proc = Bun.spawn(
    [process.execPath, join(root, "src", "main.ts"), "serve", "--listen", "127.0.0.1:0"].concat([
      "--data-dir",
      dataDir,
    ]),
    { stderr: "pipe", stdout: "ignore" },
  );
  return { proc, port: await listeningPort(proc.stderr) };
}

type Broker = Awaited<ReturnType<typeof startBroker>>;
type Result = { rate: number; cpu: number };

async function run(broker: Broker, topic: string): Promise<Result> {
  const cpuBefore = cpuSeconds(broker.proc.pid);
  const proc = Bun.spawn(
    [LOAD, "produce", `127.0.0.1:${broker.port}`, topic, "1", String(records), "100", "1"].concat([
      "batch.num.messages=1",
      "linger.ms=0",
      `client.id=${CLIENT_ID}`,
    ]),
    { stdout: "pipe", stderr: "pipe" },
  );
  const out = await new Response(proc.stdout).text();
  if ((await proc.exited) !== 0) throw new Error(await new Response(proc.stderr).text());
  const result = JSON.parse(out) as { records: number; seconds: number; failed: number };
  if (result.failed !== 0) throw new Error(`${result.failed} deliveries failed`);
  return { rate: result.records / result.seconds, cpu: cpuSeconds(broker.proc.pid) - cpuBefore };
}

/** client-quotas.json as AlterClientQuotas writes it, before the broker starts. */
function writeQuotas(dataDir: string, quotas: Record<string, Record<string, string>>) {
  writeFileSync(join(dataDir, "client-quotas.json"), JSON.stringify(quotas));
}

/**
 * The request path's quota work alone, in-process: per request what the dispatcher does for a
 * produce (the `active` check, then producer_byte_rate and request_percentage), in ns.
 */
function microCostsNs(quotas: Record<string, Record<string, string>>): number {
  const manager = new ClientQuotaManager({ samples: 11, sampleMs: 1000 });
  manager.replaceAll(
    new Map(Object.entries(quotas)) as Map<QuotaEntityPath, Record<string, string>>,
  );
  const calls = 2_000_000;
  let throttleMs = 0;
  // CPU time, not wall time: on a shared machine the process waits for a core.
  const start = process.cpuUsage();
  for (let i = 0; i < calls; i++) {
    if (!manager.active) continue;
    const nowMs = Date.now();
    throttleMs += manager.recordAndGetThrottleTimeMs(
      "producer_byte_rate",
      "User:ANONYMOUS",
      CLIENT_ID,
      150,
      nowMs,
    );
    throttleMs += manager.recordAndGetThrottleTimeMs(
      "request_percentage",
      "User:ANONYMOUS",
      CLIENT_ID,
      0.002,
      nowMs,
    );
  }
  if (throttleMs !== 0) throw new Error("the micro benchmark must not throttle");
  const used = process.cpuUsage(start);
  return ((used.user + used.system) * 1000) / calls;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const pct = (x: number, base: number) => `${(((x - base) / base) * 100).toFixed(1)}%`;

const setups: { name: string; root: string; quotas: Record<string, Record<string, string>> }[] = [
  { name: "none", root: ROOT, quotas: {} },
  { name: "other", root: ROOT, quotas: { "clients/someone-else": { producer_byte_rate: "1024" } } },
  {
    name: "applies",
    root: ROOT,
    quotas: {
      [`clients/${CLIENT_ID}`]: { producer_byte_rate: "1000000000", request_percentage: "10000.0" },
    },
  },
];
if (process.argv.includes("--micro")) {
  for (const s of setups) console.log(`${s.name}: ${microCostsNs(s.quotas).toFixed(1)} ns`);
  console.log(`load average ${loadAverage()}`);
  process.exit(0);
}
const baselineRoot = baseline === "" ? null : exportCommit(baseline);
if (baselineRoot !== null)
  setups.unshift({ name: `baseline ${baseline}`, root: baselineRoot, quotas: {} });
const dirs = setups.map(() => mkdtempSync(join(tmpdir(), "quill-bench-quota-")));
const brokers: Broker[] = [];
for (const [i, s] of setups.entries()) {
  writeQuotas(dirs[i]!, s.quotas);
  brokers.push(await startBroker(s.root, dirs[i]!));
}
const results: Result[][] = setups.map(() => []);
try {
  for (let round = 0; round < rounds; round++) {
    for (const [i, b] of brokers.entries()) results[i]!.push(await run(b, `bench-${i}-${round}`));
    const line = results.map(
      (r, i) =>
        `${setups[i]!.name} ${r[round]!.rate.toFixed(0)}/s ` + `${r[round]!.cpu.toFixed(2)} s`,
    );
    console.log(`round ${round}: ${line.join(", ")}`);
  }
  const base = setups.findIndex((s) => s.name === "none");
  const rate = (i: number) => median(results[i]!.map((r) => r.rate));
  const cpu = (i: number) => median(results[i]!.map((r) => r.cpu));
  console.log(`medians of ${rounds} runs of ${records} one-record requests; load ${loadAverage()}`);
  console.log("| quotas | records/s | broker CPU s | quota work per request, in-process |");
  console.log("|---|---|---|---|");
  for (const [i, s] of setups.entries()) {
    const vs = i === base ? "" : ` (${pct(cpu(i), cpu(base))})`;
    const micro = s.root === ROOT ? `${microCostsNs(s.quotas).toFixed(1)} ns` : "-";
    console.log(`| ${s.name} | ${rate(i).toFixed(0)} | ${cpu(i).toFixed(2)}${vs} | ${micro} |`);
  }
} finally {
  for (const b of brokers) {
    b.proc.kill("SIGTERM");
    await b.proc.exited;
  }
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
  if (baselineRoot !== null) rmSync(baselineRoot, { recursive: true, force: true });
}
