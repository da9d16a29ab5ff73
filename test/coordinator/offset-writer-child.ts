/**
 * Child process for the kill -9 test of LocalOffsetStore: commits ever-growing offsets for
 * PARTITIONS partitions of group "g", several commits per event-loop turn, and prints
 * "ack <partition> <offset>" only after a commit's promise resolved. The parent kills it with
 * SIGKILL at a random moment and checks that every printed offset survived. FILLER_GROUPS
 * other groups make each fold of the log span many turns when foldSliceMs is 0, so kills land
 * in the middle of folds too.
 */
import { LocalOffsetStore } from "../../src/coordinator/local-offset-store.ts";

const PARTITIONS = 8;
const FILLER_GROUPS = 200;
const dir = process.argv[2];
if (dir === undefined) {
  throw new Error("usage: offset-writer-child.ts <dataDir> [compactLogBytes] [foldSliceMs]");
}
const compactLogBytes = Number(process.argv[3] ?? 64 << 20);
const foldSliceMs = process.argv[4] === undefined ? undefined : Number(process.argv[4]);
const store = LocalOffsetStore.open(dir, { compactLogBytes, foldSliceMs });
const initial = await store.loadGroup("g");
await Promise.all(
  Array.from({ length: FILLER_GROUPS }, (_, i) =>
    store.commit(`filler-${i}`, [
      {
        topic: "t",
        partition: 0,
        committed: { offset: 0n, leaderEpoch: 0, metadata: null, commitTimestampMs: 0 },
      },
    ]),
  ),
);
let next = 0n;
for (const c of initial.values()) if (c.offset >= next) next = c.offset + 1n;

for (;;) {
  const commits: Promise<void>[] = [];
  for (let i = 0; i < 4; i++) {
    const offset = next++;
    const partition = Number(offset % BigInt(PARTITIONS));
    const commitTimestampMs = Date.now();
    const committed = { offset, leaderEpoch: 0, metadata: `m${offset}`, commitTimestampMs };
    commits.push(
      store.commit("g", [{ topic: "t", partition, committed }]).then(() => {
        process.stdout.write(`ack ${partition} ${offset}\n`);
      }),
    );
  }
  await Promise.all(commits);
}
