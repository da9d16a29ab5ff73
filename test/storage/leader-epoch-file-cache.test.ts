import { afterEach, beforeEach, expect, test } from "bun:test";
import * as fs from "node:fs";
import * as path from "node:path";
import {
  LEADER_EPOCH_CHECKPOINT_FILE,
  LeaderEpochFileCache,
} from "../../src/storage/leader-epoch-file-cache.ts";
import { LineLogger } from "../support/line-logger.ts";
import { removeDir, tempDir } from "./helpers.ts";

let dir: string;
const lines: string[] = [];
const logger = new LineLogger(lines);
beforeEach(() => {
  dir = tempDir("quill-epochs-");
  lines.length = 0;
});
afterEach(() => removeDir(dir));

const checkpointText = () => fs.readFileSync(path.join(dir, LEADER_EPOCH_CHECKPOINT_FILE), "utf8");

test("epochs are checkpointed in Kafka's text format and read back", () => {
  const cache = LeaderEpochFileCache.load(dir, logger);
  expect(cache.latestEpoch).toBe(-1);
  cache.assign(0, 0n);
  cache.assign(3, 1200n);
  cache.assign(2, 1500n); // Older than the latest: ignored.
  // A new epoch waits in memory for the log's next flush (writeIfDirty).
  expect(fs.existsSync(path.join(dir, LEADER_EPOCH_CHECKPOINT_FILE))).toBe(false);
  expect(cache.isDirty).toBe(true);
  cache.writeIfDirty();
  expect(cache.isDirty).toBe(false);
  expect(checkpointText()).toBe("0\n2\n0 0\n3 1200\n");
  const again = LeaderEpochFileCache.load(dir, logger);
  expect(again.all()).toEqual([
    { epoch: 0, startOffset: 0n },
    { epoch: 3, startOffset: 1200n },
  ]);
  expect(again.latestEpoch).toBe(3);
});

test("endOffsetFor answers as Kafka's cache does", () => {
  const cache = LeaderEpochFileCache.load(dir, logger);
  cache.assign(1, 10n);
  cache.assign(3, 20n);
  cache.assign(5, 30n);
  expect(cache.endOffsetFor(5, 42n)).toEqual({ epoch: 5, endOffset: 42n }); // Latest: the LEO.
  expect(cache.endOffsetFor(3, 42n)).toEqual({ epoch: 3, endOffset: 30n });
  expect(cache.endOffsetFor(4, 42n)).toEqual({ epoch: 3, endOffset: 30n }); // Largest epoch <= 4.
  expect(cache.endOffsetFor(0, 42n)).toEqual({ epoch: 0, endOffset: 10n }); // Below all known.
  expect(cache.endOffsetFor(6, 42n)).toEqual({ epoch: -1, endOffset: -1n }); // Above all known.
  expect(cache.endOffsetFor(-1, 42n)).toEqual({ epoch: -1, endOffset: -1n });
});

test("truncation drops epochs from the new end on; a new epoch replaces contradictions", () => {
  const cache = LeaderEpochFileCache.load(dir, logger);
  cache.assign(1, 0n);
  cache.assign(2, 10n);
  cache.assign(4, 20n);
  cache.truncateFromEnd(10n);
  expect(cache.all()).toEqual([{ epoch: 1, startOffset: 0n }]);
  expect(checkpointText()).toBe("0\n1\n1 0\n");
  cache.assign(5, 0n); // Starts where epoch 1 did: epoch 1 never really held anything here.
  expect(cache.all()).toEqual([{ epoch: 5, startOffset: 0n }]);
});

test("a malformed checkpoint is reported and treated as empty", () => {
  fs.writeFileSync(path.join(dir, LEADER_EPOCH_CHECKPOINT_FILE), "0\n2\n3 10\n1 20\n");
  expect(LeaderEpochFileCache.load(dir, logger).all()).toEqual([]);
  expect(lines.join("\n")).toContain("out of order");
  fs.writeFileSync(path.join(dir, LEADER_EPOCH_CHECKPOINT_FILE), "0\n3\n3 10\n");
  expect(LeaderEpochFileCache.load(dir, logger).all()).toEqual([]);
});

test("epochForOffset names the epoch whose leader wrote an offset", () => {
  const cache = LeaderEpochFileCache.load(dir, logger);
  expect(cache.epochForOffset(0n)).toBe(-1);
  cache.assign(1, 10n);
  cache.assign(3, 20n);
  expect([5n, 10n, 19n].map((o) => cache.epochForOffset(o))).toEqual([-1, 1, 1]);
  expect(cache.epochForOffset(500n)).toBe(3);
});

test("a background write never replaces a newer truncation written meanwhile", async () => {
  const cache = LeaderEpochFileCache.load(dir, logger);
  cache.assign(1, 0n);
  cache.assign(2, 100n);
  const background = cache.writeIfDirtyInBackground();
  // A truncation writes at once, before the background write reaches its rename.
  cache.truncateFromEnd(100n);
  await background;
  expect(checkpointText()).toBe("0\n1\n1 0\n");
  expect(cache.isDirty).toBe(false);
  cache.assign(3, 50n);
  await cache.writeIfDirtyInBackground();
  expect(checkpointText()).toBe("0\n2\n1 0\n3 50\n");
  expect(LeaderEpochFileCache.load(dir, logger).all()).toEqual(cache.all());
});

test("discardFrom forgets epochs in memory only, for recovery to rebuild them", () => {
  const cache = LeaderEpochFileCache.load(dir, logger);
  cache.assign(1, 0n);
  cache.assign(4, 70n);
  cache.writeIfDirty();
  cache.discardFrom(70n);
  expect(cache.latestEpoch).toBe(1);
  expect(checkpointText()).toBe("0\n2\n1 0\n4 70\n");
  expect(cache.isDirty).toBe(true);
});
