// `bun scripts/bench-idempotence.ts [--records N] [--rounds N] [--batch1]`
//
// Produce throughput with idempotence off and on (issue 7), same client, same broker, same run:
// librdkafka through scripts/bench-e2e/rdkafka-load (built by `bun scripts/bench-e2e.ts`, cached
// in ~/.cache/quill-bench) with 100-byte records, acks=all and five requests in flight either
// way, so enable.idempotence is the only difference. Rounds alternate off/on, each on a fresh
// topic of one partition; the median records/s of each side is printed with the difference.
// --batch1 sends one record per batch (linger.ms=0), where per-batch broker work shows most.
// The broker's CPU seconds per run (utime+stime from /proc) are printed too: on a loaded machine
// they isolate the broker's share from the client's, which differs between the two modes.
// Not a test: the goal is under 5% difference.
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import { join } from "node:path";
import { listeningPort } from "./bench-common.ts";

const LOAD = join(homedir(), ".cache", "quill-bench", "rdkafka-load");
const ROOT = join(import.meta.dir, "..");

function flag(name: string, fallback: number): number {
  const at = process.argv.indexOf(name);
  return at < 0 ? fallback : Number(process.argv[at + 1]);
}

const records = flag("--records", 2_000_000);
const rounds = flag("--rounds", 3);
const batchSettings = process.argv.includes("--batch1")
  ? ["batch.num.messages=1", "linger.ms=0"]
  : [];
if (!existsSync(LOAD)) throw new Error(`${LOAD} missing: run bun scripts/bench-e2e.ts once`);

const dataDir = mkdtempSync(join(tmpdir(), "quill-bench-idem-"));
const broker = Bun.spawn(
  [
    process.execPath,
    join(ROOT, "src", "main.ts"),
    "serve",
    "--listen",
    "127.0.0.1:0",
    "--data-dir",
    dataDir,
  ],
  { stderr: "pipe", stdout: "ignore" },
);
const port = await listeningPort(broker.stderr);

const CLOCK_TICKS_PER_SECOND = 100;

/** The broker's user + system CPU seconds so far (fields 14 and 15 of /proc/PID/stat). */
function brokerCpuSeconds(): number {
  const fields = readFileSync(`/proc/${broker.pid}/stat`, "utf8").split(") ")[1]!.split(" ");
  return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS_PER_SECOND;
}

async function run(topic: string, idempotent: boolean): Promise<{ rate: number; cpu: number }> {
  const cpuBefore = brokerCpuSeconds();
  const proc = Bun.spawn(
    [
      LOAD,
      "produce",
      `127.0.0.1:${port}`,
      topic,
      "1",
      String(records),
      "100",
      "-1",
      `enable.idempotence=${idempotent}`,
      "max.in.flight.requests.per.connection=5",
      ...batchSettings,
    ],
    { stdout: "pipe", stderr: "pipe" },
  );
  const out = await new Response(proc.stdout).text();
  if ((await proc.exited) !== 0) throw new Error(await new Response(proc.stderr).text());
  const result = JSON.parse(out) as { records: number; seconds: number; failed: number };
  if (result.failed !== 0) throw new Error(`${result.failed} deliveries failed`);
  return { rate: result.records / result.seconds, cpu: brokerCpuSeconds() - cpuBefore };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const off: { rate: number; cpu: number }[] = [];
const on: { rate: number; cpu: number }[] = [];
const pct = (x: number, base: number) => `${(((x - base) / base) * 100).toFixed(1)}%`;
try {
  for (let round = 0; round < rounds; round++) {
    off.push(await run(`plain-${round}`, false));
    on.push(await run(`idem-${round}`, true));
    const show = (r: { rate: number; cpu: number }) =>
      `${r.rate.toFixed(0)}/s ${r.cpu.toFixed(2)} s`;
    console.log(`round ${round}: off ${show(off[round])}, on ${show(on[round])}`);
  }
  const [a, b] = [median(off.map((r) => r.rate)), median(on.map((r) => r.rate))];
  const [ca, cb] = [median(off.map((r) => r.cpu)), median(on.map((r) => r.cpu))];
  console.log(`medians of ${rounds} runs of ${records} x 100 B records`);
  console.log("| idempotence | records/s | broker CPU s |");
  console.log("|---|---|---|");
  console.log(`| off | ${a.toFixed(0)} | ${ca.toFixed(2)} |`);
  console.log(`| on | ${b.toFixed(0)} (${pct(b, a)}) | ${cb.toFixed(2)} (${pct(cb, ca)}) |`);
} finally {
  broker.kill("SIGTERM");
  await broker.exited;
  rmSync(dataDir, { recursive: true, force: true });
}
