/**
 * What the embedded offset store's fold (the compaction of `commits.log` into `offsets.snapshot`)
 * costs the event loop, in-process: commits `groups` groups x PARTITIONS partitions, reopens the
 * store with a compaction threshold just past the log's size, makes one more commit (which
 * starts the fold) and, while the fold runs, a 1 ms setInterval measures the gap between ticks
 * (any stall of the loop shows as a long gap; the process's CPU time within the gap tells a
 * stall from time the machine's other processes had the cores), and a commit is issued every
 * millisecond (its latency is what a committing consumer waits during a fold). Not a test;
 * figures go in docs/consumer-groups.md with the load average.
 *
 *   bun scripts/bench-offset-store-fold.ts [groups=20000] [storeModule]
 *
 * `storeModule` is the path of another local-offset-store.ts to measure instead (an older
 * checkout's, for a before/after comparison in alternating runs).
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import type { CommittedOffset } from "../src/coordinator/offset-store.ts";
import { LoopGapMeter, loadAverage } from "./bench-common.ts";

const PARTITIONS = 10;
const GROUPS_PER_TURN = 500;

const groups = Number(process.argv[2] ?? 20_000);
const modulePath = path.resolve(
  process.argv[3] ?? `${import.meta.dir}/../src/coordinator/local-offset-store.ts`,
);
const { LocalOffsetStore, OFFSETS_DIR_NAME } = (await import(
  modulePath
)) as typeof import("../src/coordinator/local-offset-store.ts");

const committed = (offset: bigint): CommittedOffset => ({
  offset,
  leaderEpoch: 1,
  metadata: null,
  commitTimestampMs: 1,
});
const offsetsOf = (offset: bigint) =>
  Array.from({ length: PARTITIONS }, (_, partition) => ({
    topic: "t",
    partition,
    committed: committed(offset),
  }));

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "bench-offset-fold-"));
try {
  const filling = LocalOffsetStore.open(dataDir, { compactLogBytes: 2 ** 40 });
  for (let g = 0; g < groups; g += GROUPS_PER_TURN) {
    const turn = Math.min(GROUPS_PER_TURN, groups - g);
    await Promise.all(
      Array.from({ length: turn }, (_, i) => filling.commit(`group-${g + i}`, offsetsOf(1n))),
    );
  }
  await filling.close();
  const logBytes = fs.statSync(path.join(dataDir, OFFSETS_DIR_NAME, "commits.log")).size;

  const store = LocalOffsetStore.open(dataDir, { compactLogBytes: logBytes + 1 });
  const meter = new LoopGapMeter();
  await Bun.sleep(50);
  meter.reset();
  const latenciesMs: number[] = [];
  const startedMs = performance.now();
  await store.commit("group-0", offsetsOf(2n));
  // One commit per millisecond while the fold runs: what a consumer committing meanwhile waits.
  const commits: Promise<void>[] = [];
  for (let i = 0; store.stats.compactions === 0; i++) {
    const issuedMs = performance.now();
    const group = `group-${(i * 7919) % groups}`;
    commits.push(
      store.commit(group, offsetsOf(3n)).then(() => {
        latenciesMs.push(performance.now() - issuedMs);
      }),
    );
    await Bun.sleep(1);
  }
  const foldMs = performance.now() - startedMs;
  await Promise.all(commits);
  meter.stop();
  await store.close();
  latenciesMs.sort((a, b) => a - b);
  const snapshotBytes = fs.statSync(path.join(dataDir, OFFSETS_DIR_NAME, "offsets.snapshot")).size;
  console.log(
    JSON.stringify({
      module: path.relative(process.cwd(), modulePath),
      groups,
      partitions: PARTITIONS,
      snapshotMB: +(snapshotBytes / 1e6).toFixed(1),
      foldMs: +foldMs.toFixed(1),
      worstGapMs: +meter.worstGapMs.toFixed(1),
      worstGapCpuMs: +meter.worstGapCpuMs.toFixed(1),
      commitsDuringFold: latenciesMs.length,
      commitMaxMs: +(latenciesMs.at(-1) ?? 0).toFixed(1),
      loadAverage: loadAverage(),
    }),
  );
} finally {
  fs.rmSync(dataDir, { recursive: true, force: true });
}
