/**
 * What the embedded share state store's fold (the compaction of `share-group-state.log` into
 * `share-group-state.json`) costs the event loop, in-process: saves `partitions` share
 * partitions of IN_FLIGHT_RECORDS in-flight records each, reopens the store with a compaction
 * threshold just past the log's size, saves once more (which starts the fold) and, while the
 * fold runs, a 1 ms setInterval measures the longest gap between its ticks and the process's
 * CPU time within it. Not a test; figures go in docs/share-groups.md with the load average.
 *
 *   bun scripts/bench-share-state-fold.ts [partitions=20000] [storeModule]
 *
 * `storeModule` is the path of another share-state-store.ts to measure instead (an older
 * checkout's, for a before/after comparison in alternating runs).
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { SILENT_LOGGER } from "../src/util/logger.ts";
import { LoopGapMeter, loadAverage } from "./bench-common.ts";

const IN_FLIGHT_RECORDS = 40;
const SAVES_PER_TURN = 1_000;
const EPOCHS = { leaderEpoch: 0, stateEpoch: 0 };

const partitions = Number(process.argv[2] ?? 20_000);
const defaultModule = `${import.meta.dir}/../src/server/share-state-store.ts`;
const modulePath = path.resolve(process.argv[3] ?? defaultModule);
const { LocalShareStateStore, SHARE_STATE_LOG_FILE } = (await import(
  modulePath
)) as typeof import("../src/server/share-state-store.ts");

const state = (startOffset: bigint) => () => ({
  startOffset,
  records: Array.from({ length: IN_FLIGHT_RECORDS }, (_, i): [number, number] => [
    i % 3 === 0 ? 2 : 0,
    i % 4,
  ]),
});

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "bench-share-fold-"));
try {
  const filling = new LocalShareStateStore(dir, SILENT_LOGGER, 2 ** 40);
  for (let p = 0; p < partitions; p += SAVES_PER_TURN) {
    const turn = Math.min(SAVES_PER_TURN, partitions - p);
    await Promise.all(
      Array.from({ length: turn }, (_, i) => filling.save("g", "t", p + i, EPOCHS, state(1n))),
    );
  }
  await filling.close();
  const logBytes = fs.statSync(path.join(dir, SHARE_STATE_LOG_FILE)).size;

  const store = new LocalShareStateStore(dir, SILENT_LOGGER, logBytes + 1);
  const meter = new LoopGapMeter();
  await Bun.sleep(50);
  meter.reset();
  const startedMs = performance.now();
  await store.save("g", "t", 0, EPOCHS, state(2n));
  while (store.stats.compactions === 0) await Bun.sleep(1);
  const foldMs = performance.now() - startedMs;
  meter.stop();
  await store.close();
  console.log(
    JSON.stringify({
      module: path.relative(process.cwd(), modulePath),
      partitions,
      logMB: +(logBytes / 1e6).toFixed(1),
      foldMs: +foldMs.toFixed(1),
      worstGapMs: +meter.worstGapMs.toFixed(1),
      worstGapCpuMs: +meter.worstGapCpuMs.toFixed(1),
      loadAverage: loadAverage(),
    }),
  );
} finally {
  fs.rmSync(dir, { recursive: true, force: true });
}
