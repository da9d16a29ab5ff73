// `bun scripts/bench-idempotence.ts [--records N] [--rounds N] [--batch1]`
//
// Produce throughput with idempotence off and on (issue 7), same client, same broker, same run:
// librdkafka through scripts/bench-e2e/rdkafka-load (built by `bun scripts/bench-e2e.ts`, cached
// in ~/.cache/quill-bench) with 100-byte records, acks=all and five requests in flight either
// way, so enable.idempotence is the only difference. Rounds alternate off/on, each on a fresh
// topic of one partition; the median records/s of each side is printed with the difference.
// --batch1 sends one record per batch (linger.ms=0), where per-batch broker work shows most.
// Not a test: the goal is under 5% difference.
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import { join } from "node:path";

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
const broker = Bun.spawn([process.execPath, join(ROOT, "src", "main.ts"), "serve",
  "--listen", "127.0.0.1:0", "--data-dir", dataDir], { stderr: "pipe", stdout: "ignore" });
const port = await listeningPort(broker.stderr);

async function listeningPort(stderr: ReadableStream<Uint8Array>): Promise<number> {
  let text = "";
  for await (const chunk of stderr) {
    text += new TextDecoder().decode(chunk);
    const match = /listening on [\d.]+:(\d+)/.exec(text);
    if (match !== null) return Number(match[1]);
  }
  throw new Error(`broker exited: ${text}`);
}

async function run(topic: string, idempotent: boolean): Promise<number> {
  const proc = Bun.spawn([LOAD, "produce", `127.0.0.1:${port}`, topic, "1", String(records),
    "100", "-1", `enable.idempotence=${idempotent}`,
    "max.in.flight.requests.per.connection=5", ...batchSettings],
  { stdout: "pipe", stderr: "pipe" });
  const out = await new Response(proc.stdout).text();
  if ((await proc.exited) !== 0) throw new Error(await new Response(proc.stderr).text());
  const result = JSON.parse(out) as { records: number; seconds: number; failed: number };
  if (result.failed !== 0) throw new Error(`${result.failed} deliveries failed`);
  return result.records / result.seconds;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const off: number[] = [];
const on: number[] = [];
try {
  for (let round = 0; round < rounds; round++) {
    off.push(await run(`plain-${round}`, false));
    on.push(await run(`idem-${round}`, true));
    console.log(`round ${round}: off ${off[round].toFixed(0)}/s, on ${on[round].toFixed(0)}/s`);
  }
  const [a, b] = [median(off), median(on)];
  console.log(`| idempotence | records/s (median of ${rounds}, ${records} x 100 B) |`);
  console.log("|---|---|");
  console.log(`| off | ${a.toFixed(0)} |`);
  console.log(`| on | ${b.toFixed(0)} (${(((b - a) / a) * 100).toFixed(1)}%) |`);
} finally {
  broker.kill("SIGTERM");
  await broker.exited;
  rmSync(dataDir, { recursive: true, force: true });
}
