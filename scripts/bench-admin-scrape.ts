// `bun scripts/bench-admin-scrape.ts [--records N] [--rounds N] [--broker binary|source]`
//
// What scraping the admin listener costs the data path: produce and consume throughput of the
// single broker with `/metrics` scraped every second against the same broker without an admin
// listener, in one run. Rounds alternate (off, on, off, on, ...) on fresh brokers and data dirs,
// so drift in the shared machine's load falls on both sides. The load is librdkafka (the C
// program of scripts/bench-e2e/rdkafka-load.c): 100-byte records, acks=1, the client's default
// batching, one partition, then every record consumed back. Printed: records/s per round and
// the median per side, scrapes made and their mean time, the load average. Not a test.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { compileRdkafkaProgram, loadAverage } from "./bench-common.ts";

const ROOT = join(import.meta.dir, "..");
const LOAD_SOURCE = join(import.meta.dir, "bench-e2e", "rdkafka-load.c");
const RECORD_BYTES = 100;
const SCRAPE_INTERVAL_MS = 1_000;
const START_TIMEOUT_MS = 30_000;

interface Options {
  records: number;
  rounds: number;
  broker: "binary" | "source";
}

interface RunResult {
  readonly records: number;
  readonly bytes: number;
  readonly seconds: number;
  readonly failed: number;
}

interface Round {
  readonly scraped: boolean;
  readonly produce: RunResult;
  readonly consume: RunResult;
  readonly scrapes: number;
  readonly scrapeMs: number;
}

function parseOptions(argv: readonly string[]): Options {
  const options: Options = { records: 2_000_000, rounds: 3, broker: "binary" };
  for (let i = 0; i < argv.length; i += 2) {
    const [flag, value] = [argv[i]!, argv[i + 1]];
    if (flag === "--records") options.records = Number(value);
    else if (flag === "--rounds") options.rounds = Number(value);
    else if (flag === "--broker" && (value === "binary" || value === "source")) {
      options.broker = value;
    } else throw new Error(`unknown or incomplete option ${flag}`);
  }
  if (!(options.records > 0 && options.rounds > 0)) throw new Error("records and rounds > 0");
  return options;
}

async function run(argv: string[]): Promise<RunResult> {
  const proc = Bun.spawn(argv, { stdout: "pipe", stderr: "pipe" });
  const [out, err, code] = await Promise.all([
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
    proc.exited,
  ]);
  if (code !== 0) throw new Error(`${argv.join(" ")} exited ${code}: ${err}`);
  return JSON.parse(out) as RunResult;
}

interface Broker {
  readonly proc: ReturnType<typeof Bun.spawn>;
  readonly bootstrap: string;
  readonly admin: string | null;
  readonly dataDir: string;
}

async function startBroker(command: string[], admin: boolean): Promise<Broker> {
  const dataDir = mkdtempSync(join(tmpdir(), "quill-bench-admin-"));
  const argv = [...command, "serve", "--listen", "127.0.0.1:0", "--data-dir", dataDir];
  if (admin) argv.push("--admin", "127.0.0.1:0");
  const proc = Bun.spawn(argv, { stdin: "ignore", stdout: "ignore", stderr: "pipe" });
  const reader = (proc.stderr as ReadableStream<Uint8Array>).getReader();
  let text = "";
  const deadline = Date.now() + START_TIMEOUT_MS;
  while (Date.now() < deadline) {
    const listening = text.match(/listening on ([^\s:]+):(\d+)/);
    if (listening !== null) {
      void (async () => {
        while (!(await reader.read()).done) {}
      })();
      const adminUrl = text.match(/admin listener on (http:\/\/\S+:\d+)/)?.[1] ?? null;
      return { proc, bootstrap: `${listening[1]}:${listening[2]}`, admin: adminUrl, dataDir };
    }
    const { value, done } = await reader.read();
    if (done) break;
    text += new TextDecoder().decode(value);
  }
  proc.kill("SIGKILL");
  throw new Error(`the broker did not start:\n${text}`);
}

/** Scrapes /metrics every second until stopped; counts the scrapes and their time. */
function scraper(admin: string) {
  const stats = { scrapes: 0, totalMs: 0 };
  let stopped = false;
  const loop = (async () => {
    while (!stopped) {
      const startMs = performance.now();
      const body = await (await fetch(`${admin}/metrics`)).text();
      if (!body.includes("quill_requests_total")) throw new Error("a scrape without metrics");
      stats.totalMs += performance.now() - startMs;
      stats.scrapes++;
      await Bun.sleep(SCRAPE_INTERVAL_MS);
    }
  })();
  return {
    stats,
    stop: async () => {
      stopped = true;
      await loop;
    },
  };
}

async function oneRound(command: string[], load: string, scraped: boolean, records: number) {
  const broker = await startBroker(command, scraped);
  const scraping = broker.admin === null ? null : scraper(broker.admin);
  try {
    const topic = "bench-admin";
    const args = [broker.bootstrap, topic, "1"];
    const produce = await run([
      load,
      "produce",
      ...args,
      String(records),
      String(RECORD_BYTES),
      "1",
    ]);
    const consume = await run([load, "consume", ...args, String(records)]);
    await scraping?.stop();
    const scrapes = scraping?.stats.scrapes ?? 0;
    const scrapeMs = scrapes === 0 ? 0 : scraping!.stats.totalMs / scrapes;
    return { scraped, produce, consume, scrapes, scrapeMs } satisfies Round;
  } finally {
    broker.proc.kill("SIGTERM");
    await broker.proc.exited;
    rmSync(broker.dataDir, { recursive: true, force: true });
  }
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

function report(rounds: readonly Round[], options: Options): void {
  const rate = (r: RunResult) => Math.round(r.records / r.seconds);
  console.log(`| round | /metrics every 1 s | produce rec/s | consume rec/s | scrapes | mean ms |`);
  console.log(`|---:|---|---:|---:|---:|---:|`);
  rounds.forEach((r, i) => {
    const ms = r.scrapeMs.toFixed(1);
    const cells = [i + 1, r.scraped ? "yes" : "no", rate(r.produce), rate(r.consume), r.scrapes];
    console.log(`| ${cells.join(" | ")} | ${ms} |`);
  });
  for (const scraped of [false, true]) {
    const side = rounds.filter((r) => r.scraped === scraped);
    const p = median(side.map((r) => rate(r.produce)));
    const c = median(side.map((r) => rate(r.consume)));
    console.log(
      `median ${scraped ? "scraped" : "no admin"}: produce ${p} rec/s, consume ${c} rec/s`,
    );
  }
  console.log(`${options.records} records of ${RECORD_BYTES} B per round; load ${loadAverage()}`);
}

async function main(): Promise<void> {
  const options = parseOptions(process.argv.slice(2));
  const compiled = compileRdkafkaProgram(LOAD_SOURCE);
  if (!("path" in compiled)) throw new Error(`${compiled.error} (apt install librdkafka-dev)`);
  let command = [process.execPath, join(ROOT, "src", "main.ts")];
  if (options.broker === "binary") {
    const build = Bun.spawnSync([process.execPath, "run", "build"], { cwd: ROOT, stderr: "pipe" });
    if (build.exitCode !== 0) throw new Error(`bun run build failed:\n${build.stderr}`);
    command = [join(ROOT, "dist", "quill")];
  }
  console.log(`load average at start: ${loadAverage()}`);
  const rounds: Round[] = [];
  for (let i = 0; i < options.rounds * 2; i++) {
    rounds.push(await oneRound(command, compiled.path, i % 2 === 1, options.records));
  }
  report(rounds, options);
}

await main();
