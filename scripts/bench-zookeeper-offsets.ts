/**
 * Offset commits per second through ZooKeeperOffsetStore against a local ZooKeeper (Debian's
 * package, started by the test harness, fsync on as by default), for 1, 10 and 100 partitions
 * per commit, next to the baseline of single setData calls on the same server in the same run.
 *
 * Each case runs for DURATION_MS (median of REPEATS runs) twice: with one request in flight
 * (one consumer committing after each batch), and with IN_FLIGHT concurrent requests (many
 * groups, pipelined on one session, which is how a coordinator serving many groups uses it).
 *
 * The server is warmed up untimed first, since a cold JVM runs interpreted for a while.
 *
 * Run: bun scripts/bench-zookeeper-offsets.ts [durationMs]
 */
import { ZooKeeperOffsetStore } from "../src/coordinator/zookeeper-offset-store.ts";
import { ZooKeeperClient } from "../src/zookeeper/zookeeper-client.ts";
import { startZooKeeper } from "../test/support/zookeeper-server.ts";

const DURATION_MS = Number(process.argv[2] ?? 2_000);
/** The machine is shared and noisy: each figure is the median of this many runs. */
const REPEATS = 3;
const IN_FLIGHT = 32;
const CLIENT_OPTIONS = {
  sessionTimeoutMs: 10_000,
  connectTimeoutMs: 10_000,
  requestTimeoutMs: 10_000,
};

/** The median rate of REPEATS runs. */
async function medianRate(
  inFlight: number,
  op: (worker: number, i: number) => Promise<unknown>,
): Promise<number> {
  const rates: number[] = [];
  for (let run = 0; run < REPEATS; run += 1) rates.push(await rate(inFlight, op));
  return rates.sort((a, b) => a - b)[Math.floor(REPEATS / 2)];
}

/** Runs `op` from `inFlight` loops for DURATION_MS and returns completed operations per second. */
async function rate(
  inFlight: number,
  op: (worker: number, i: number) => Promise<unknown>,
): Promise<number> {
  const endMs = performance.now() + DURATION_MS;
  const startedMs = performance.now();
  let done = 0;
  await Promise.all(
    Array.from({ length: inFlight }, async (_, worker) => {
      for (let i = 0; performance.now() < endMs; i += 1) {
        await op(worker, i);
        done += 1;
      }
    }),
  );
  return done / ((performance.now() - startedMs) / 1000);
}

function commitOf(partitionCount: number, offset: number) {
  return Array.from({ length: partitionCount }, (_, partition) => ({
    topic: "bench-topic",
    partition,
    committed: {
      offset: BigInt(offset),
      leaderEpoch: 0,
      metadata: "",
      commitTimestampMs: Date.now(),
    },
  }));
}

const server = await startZooKeeper();
const zk = await ZooKeeperClient.connect(server.connectString, CLIENT_OPTIONS);
const store = new ZooKeeperOffsetStore(zk, { offsetCommitTimeoutMs: 10_000 });
const rows: string[] = [];
try {
  for (let worker = 0; worker < IN_FLIGHT; worker += 1) await zk.create(`/bench-${worker}`);
  const payload = new TextEncoder().encode("123456789");
  // A cold JVM interprets before it compiles: warm the server (and the client) up untimed.
  await rate(IN_FLIGHT, (worker) => zk.setData(`/bench-${worker}`, payload));
  await rate(IN_FLIGHT, (worker, i) => store.commit(`warm-${worker}`, commitOf(10, i)));
  for (const inFlight of [1, IN_FLIGHT]) {
    const setDataPerS = await medianRate(inFlight, (worker) =>
      zk.setData(`/bench-${worker}`, payload),
    );
    rows.push(
      `| single setData (baseline) | ${inFlight} | ${fmt(setDataPerS)} | ${fmt(setDataPerS)} |`,
    );
  }
  for (const partitionCount of [1, 10, 100]) {
    for (const inFlight of [1, IN_FLIGHT]) {
      // Warm-up commit creates the znodes, so the timed loop measures steady-state updates.
      for (let worker = 0; worker < inFlight; worker += 1)
        await store.commit(`g${partitionCount}-${worker}`, commitOf(partitionCount, 0));
      const commitsPerS = await medianRate(inFlight, (worker, i) =>
        store.commit(`g${partitionCount}-${worker}`, commitOf(partitionCount, i)),
      );
      rows.push(
        `| commit of ${partitionCount} partitions | ${inFlight} | ${fmt(commitsPerS)} | ${fmt(commitsPerS * partitionCount)} |`,
      );
    }
  }
} finally {
  await store.close();
  await zk.close();
  await server.stop();
}

console.log(
  `ZooKeeper offset store, median of ${REPEATS} runs of ${DURATION_MS} ms, local ZooKeeper 3.8 (fsync on)\n`,
);
console.log("| operation | in flight | operations/s | partition offsets/s |");
console.log("|---|---|---|---|");
for (const row of rows) console.log(row);

function fmt(n: number): string {
  return Math.round(n).toLocaleString("en-US");
}
