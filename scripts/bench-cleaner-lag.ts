/**
 * What a cleaning costs the event loop, in-process: writes a dirty compacted log (1 KB values,
 * 100,000 keys, 10% tombstones, 500-record batches, 64 MiB segments), then cleans it once while
 * a 1 ms setTimeout measures the gap between ticks (any stall of the loop shows as a long gap).
 * Not a test; figures go in docs/log-compaction.md with the load average.
 *
 *   bun scripts/bench-cleaner-lag.ts [dirtyMB=1000]
 *
 * Prints the cleaning's wall and CPU time, the CPU time of each thread that used any (event
 * loop "bun", the cleaner's "Worker", the thread pool's "Bun Pool N" (fdatasyncs, renames),
 * the JIT and GC helpers; from /proc, Linux only, 10 ms ticks), and the tick gaps'
 * p50/p99/p99.9/max.
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { buildRecordBatch } from "../src/protocol/record-batch.ts";
import { DEFAULT_LOG_CONFIG } from "../src/storage/log-config.ts";
import { LogManager } from "../src/storage/log-manager.ts";
import { loadAverage } from "./bench-common.ts";

const KEYS = 100_000;
const MS_PER_CLOCK_TICK = 10;

/** User and system CPU ms of each of this process's threads, by "tid name" (Linux /proc). */
function threadCpuMs(): Map<string, [number, number]> {
  const threads = new Map<string, [number, number]>();
  if (!fs.existsSync("/proc/self/task")) return threads;
  for (const tid of fs.readdirSync("/proc/self/task")) {
    try {
      const stat = fs.readFileSync(`/proc/self/task/${tid}/stat`, "utf8");
      const close = stat.lastIndexOf(")");
      const fields = stat.slice(close + 2).split(" ");
      const name = `${tid} ${stat.slice(stat.indexOf("(") + 1, close)}`;
      const [user, system] = [Number(fields[11]), Number(fields[12])];
      threads.set(name, [user * MS_PER_CLOCK_TICK, system * MS_PER_CLOCK_TICK]);
    } catch {
      // The thread ended between the listing and the read.
    }
  }
  return threads;
}

function threadCpuSince(before: Map<string, [number, number]>): string {
  const used: string[] = [];
  for (const [name, [user, system]] of threadCpuMs()) {
    const [user0, system0] = before.get(name) ?? [0, 0];
    if (user + system > user0 + system0) used.push(`${name} ${user - user0}/${system - system0}`);
  }
  return used.join(", ");
}
const BATCH_RECORDS = 500;
const VALUE_BYTES = 1000;

const dirtyBytes = Number(process.argv[2] ?? 1000) * 1e6;
const dir = fs.mkdtempSync(path.join(os.tmpdir(), "quill-bench-cleaner-lag-"));
const manager = LogManager.open({
  logDirs: [dir],
  defaultConfig: { ...DEFAULT_LOG_CONFIG, cleanupPolicy: "compact", segmentBytes: 64 << 20 },
  cleaner: { enable: false },
});
try {
  const log = manager.getOrCreateLog("lag", 0);
  const encoder = new TextEncoder();
  const value = new Uint8Array(VALUE_BYTES).fill(120);
  const batches = Math.ceil(dirtyBytes / (BATCH_RECORDS * (VALUE_BYTES + 30)));
  let n = 0;
  for (let b = 0; b < batches; b++) {
    const records = Array.from({ length: BATCH_RECORDS }, () => {
      n++;
      return { key: encoder.encode(`key-${n % KEYS}`), value: n % 10 === 0 ? null : value };
    });
    log.appendAsLeader(buildRecordBatch(records, {}), -1);
    log.highWatermark = log.logEndOffset;
  }
  log.roll();
  const gapsMs: number[] = [];
  let lastMs = performance.now();
  let ticking = true;
  const tick = (): void => {
    const now = performance.now();
    gapsMs.push(now - lastMs);
    lastMs = now;
    if (ticking) setTimeout(tick, 1);
  };
  setTimeout(tick, 1);
  const threadsBefore = threadCpuMs();
  const cpuBefore = process.cpuUsage();
  const startMs = performance.now();
  const result = await manager.cleaner.cleanOnce();
  ticking = false;
  const cpu = process.cpuUsage(cpuBefore);
  const wallMs = performance.now() - startMs;
  gapsMs.sort((x, y) => x - y);
  const at = (q: number): string =>
    gapsMs[Math.min(gapsMs.length - 1, Math.floor(q * gapsMs.length))].toFixed(1);
  console.log(
    `${(dirtyBytes / 1e6).toFixed(0)} MB dirty, ${log.sealedSegments().length} segments: ` +
      `cleaned in ${(wallMs / 1000).toFixed(1)} s (${result?.stats.bytesRead ?? 0} bytes read), ` +
      `CPU user ${(cpu.user / 1000).toFixed(0)} ms, sys ${(cpu.system / 1000).toFixed(0)} ms`,
  );
  console.log(`threads, CPU ms user/sys: ${threadCpuSince(threadsBefore)}`);
  console.log(
    `event-loop gap ms (1 ms timer, ${gapsMs.length} ticks): p50 ${at(0.5)}, p99 ${at(0.99)}, ` +
      `p99.9 ${at(0.999)}, max ${at(1)}; load average ${loadAverage()}`,
  );
} finally {
  manager.close();
  fs.rmSync(dir, { recursive: true, force: true });
}
