import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import * as fs from "node:fs";
import * as path from "node:path";
import { verifyBatchCrc } from "../../src/protocol/record-batch.ts";
import { LEADER_EPOCH_CHECKPOINT_FILE } from "../../src/storage/leader-epoch-file-cache.ts";
import { DEFAULT_LOG_CONFIG } from "../../src/storage/log-config.ts";
import { CLEAN_SHUTDOWN_FILE, LogManager } from "../../src/storage/log-manager.ts";
import { RECOVERY_POINT_CHECKPOINT_FILE } from "../../src/storage/offset-checkpoint-file.ts";
import type { UnifiedLog } from "../../src/storage/unified-log.ts";
import { LineLogger } from "../support/line-logger.ts";
import { batch, batchOffsets, readBytes, removeDir, tempDir } from "./helpers.ts";

let dir: string;
let manager: LogManager;
let lines: string[];
const config = { ...DEFAULT_LOG_CONFIG, segmentBytes: 2000, indexIntervalBytes: 200 };
const stem = (base: bigint) => base.toString().padStart(20, "0");

function open(options: { syncFileSystems?: boolean } = {}): UnifiedLog {
  lines = [];
  const logger = new LineLogger(lines);
  manager = LogManager.open({ logDirs: [dir], defaultConfig: config, logger, ...options });
  return manager.getOrCreateLog("events", 3);
}

/** Closes cleanly, then removes what says so: the next open must recover as after a crash. */
function crashAndReopen(opts: { fromStart?: boolean } = {}): UnifiedLog {
  manager.close();
  fs.rmSync(path.join(dir, CLEAN_SHUTDOWN_FILE));
  if (opts.fromStart) fs.rmSync(path.join(dir, RECOVERY_POINT_CHECKPOINT_FILE));
  return open();
}

function reopenClean(): UnifiedLog {
  manager.close();
  return open();
}

function partitionFile(name: string): string {
  return path.join(dir, "events-3", name);
}

/** Every batch from the log start to the end, read through the fetch path. */
function readAll(log: UnifiedLog): Uint8Array[] {
  const batches: Uint8Array[] = [];
  let offset = log.logStartOffset;
  while (offset < log.logEndOffset) {
    const bytes = readBytes(log, offset, 1 << 20);
    let at = 0;
    for (const b of batchOffsets(bytes)) {
      const size = 12 + new DataView(bytes.buffer, at).getInt32(8);
      const one = bytes.slice(at, at + size);
      expect(verifyBatchCrc(one, 0)).toBe(true);
      batches.push(one);
      at += size;
      offset = b.last + 1n;
    }
  }
  return batches;
}

function fill(log: UnifiedLog, count: number): void {
  for (let i = 0; i < count; i++) log.appendAsLeader(batch(4, { valueBytes: 40 }), -1);
}

beforeEach(() => (dir = tempDir()));
afterEach(() => {
  manager.close();
  removeDir(dir);
});

describe("recovery after a crash", () => {
  test("bytes flipped in the last batch: truncated exactly at that batch", () => {
    const log = open();
    fill(log, 5);
    const lastStart = log.sizeBytes - batch(4, { valueBytes: 40 }).length;
    const file = partitionFile(`${stem(0n)}.log`);
    const fd = fs.openSync(file, "r+");
    fs.writeSync(fd, new Uint8Array([0xde, 0xad]), 0, 2, lastStart + 70);
    fs.closeSync(fd);
    const recovered = crashAndReopen();
    expect(recovered.logEndOffset).toBe(16n);
    expect(fs.statSync(file).size).toBe(lastStart);
    const truncations = lines.filter((l) => l.includes("truncated at position"));
    expect(truncations).toHaveLength(1);
    expect(truncations[0]).toContain(`position ${lastStart}`);
    expect(truncations[0]).toContain("CRC mismatch");
    expect(readAll(recovered)).toHaveLength(4);
    expect(recovered.appendAsLeader(batch(1), -1).baseOffset).toBe(16n);
  });

  test("file cut in the middle of a batch: the partial batch is removed", () => {
    const log = open();
    fill(log, 5);
    const size = log.sizeBytes;
    const batchBytes = size / 5;
    const file = partitionFile(`${stem(0n)}.log`);
    fs.truncateSync(file, size - 30);
    const recovered = crashAndReopen();
    expect(fs.statSync(file).size).toBe(size - batchBytes);
    expect(recovered.logEndOffset).toBe(16n);
    expect(lines.some((l) => l.includes(`truncated at position ${size - batchBytes}`))).toBe(true);
  });

  test("garbage appended after the last batch is cut off", () => {
    const log = open();
    fill(log, 3);
    const size = log.sizeBytes;
    fs.appendFileSync(partitionFile(`${stem(0n)}.log`), new Uint8Array(100).fill(7));
    const recovered = crashAndReopen();
    expect(recovered.sizeBytes).toBe(size);
    expect(recovered.logEndOffset).toBe(12n);
  });

  test("corruption in an older segment deletes the segments after it", () => {
    const log = open();
    fill(log, 40);
    const bases = log.segmentBaseOffsets();
    expect(bases.length).toBeGreaterThan(3);
    const victim = partitionFile(`${stem(bases[1])}.log`);
    const fd = fs.openSync(victim, "r+");
    fs.writeSync(fd, new Uint8Array([1, 2, 3]), 0, 3, 400);
    fs.closeSync(fd);
    const recovered = crashAndReopen({ fromStart: true });
    expect(recovered.segmentBaseOffsets()).toEqual(bases.slice(0, 2));
    expect(fs.existsSync(partitionFile(`${stem(bases[2])}.log`))).toBe(false);
    const batches = readAll(recovered);
    expect(batchOffsets(batches[batches.length - 1])[0].last + 1n).toBe(recovered.logEndOffset);
  });

  test("segments below the recovery point are trusted, not rescanned", () => {
    const log = open();
    fill(log, 40);
    log.flush();
    const bases = log.segmentBaseOffsets();
    // Damage below the recovery point is not looked for (Kafka does the same): it stays.
    const old = partitionFile(`${stem(bases[0])}.log`);
    const sizeBefore = fs.statSync(old).size;
    fs.appendFileSync(old, new Uint8Array(10));
    const recovered = crashAndReopen();
    expect(fs.statSync(old).size).toBe(sizeBefore + 10);
    expect(recovered.logEndOffset).toBe(160n);
    expect(lines.filter((l) => l.includes("truncated"))).toHaveLength(0);
  });

  test("crash recovery syncs nothing: the recovery point stays until the next flush", () => {
    fill(open(), 40);
    const recovered = crashAndReopen({ fromStart: true });
    expect(recovered.logEndOffset).toBe(160n);
    // As Kafka's LogLoader: the recovered segments are synced by the next flush, not by
    // recovery, so the checkpoint written after loading still says they were never synced.
    expect(recovered.flushedOffset).toBe(0n);
    const checkpoint = fs.readFileSync(path.join(dir, RECOVERY_POINT_CHECKPOINT_FILE), "utf8");
    expect(checkpoint).toBe("0\n1\nevents 3 0\n");
    recovered.flush();
    expect(recovered.flushedOffset).toBe(160n);
    const again = crashAndReopen({ fromStart: true });
    expect(readAll(again)).toHaveLength(40);
    expect(again.appendAsLeader(batch(1), -1).baseOffset).toBe(160n);
  });

  test("with more logs than the fd cap, recovered active segments stay open, unwritten", () => {
    const small = { ...config, segmentBytes: 1_000_000 };
    const openMany = () => {
      lines = [];
      const logger = new LineLogger(lines);
      const options = { logDirs: [dir], defaultConfig: small, logger, maxOpenSegmentFiles: 2 };
      manager = LogManager.open(options);
      return [0, 1, 2, 3, 4].map((p) => manager.getOrCreateLog("many", p));
    };
    for (const log of openMany()) fill(log, 6);
    manager.close();
    fs.rmSync(path.join(dir, CLEAN_SHUTDOWN_FILE));
    fs.rmSync(path.join(dir, RECOVERY_POINT_CHECKPOINT_FILE));
    const indexes = [0, 1, 2, 3, 4].map((p) => path.join(dir, `many-${p}`, `${stem(0n)}.index`));
    for (const file of indexes) fs.rmSync(file);
    const logs = openMany();
    // Evicted right after its recovery scan, a segment wrote its rebuilt indexes (with an
    // fdatasync each, on the event loop); pinned first, it keeps them until its flush.
    expect(logs.map((l) => l.logEndOffset)).toEqual([24n, 24n, 24n, 24n, 24n]);
    expect(indexes.filter((file) => fs.existsSync(file))).toEqual([]);
    for (const log of logs) {
      expect(batchOffsets(readBytes(log, 10n, 1_000_000))[0]!.base).toBe(8n);
      log.flush();
    }
    expect(indexes.filter((file) => fs.existsSync(file))).toEqual(indexes);
  });

  test("a clean shutdown writes the marker and the next open removes it", () => {
    const log = open();
    fill(log, 3);
    expect(fs.existsSync(path.join(dir, CLEAN_SHUTDOWN_FILE))).toBe(false);
    manager.close();
    expect(fs.existsSync(path.join(dir, CLEAN_SHUTDOWN_FILE))).toBe(true);
    const checkpoint = fs.readFileSync(path.join(dir, RECOVERY_POINT_CHECKPOINT_FILE), "utf8");
    expect(checkpoint).toBe("0\n1\nevents 3 12\n");
    open();
    expect(fs.existsSync(path.join(dir, CLEAN_SHUTDOWN_FILE))).toBe(false);
  });
});

describe("leader epochs and directories written by flushes, not by creation", () => {
  const epochFile = () => partitionFile(LEADER_EPOCH_CHECKPOINT_FILE);

  test("a new epoch reaches the checkpoint with the flush that moves the recovery point", () => {
    const log = open();
    log.appendAsLeader(batch(4), 3);
    expect(fs.existsSync(epochFile())).toBe(false);
    log.flush();
    expect(fs.readFileSync(epochFile(), "utf8")).toBe("0\n1\n3 0\n");
  });

  test("recovery rebuilds the epochs of the segments it validates from their batches", () => {
    const log = open();
    for (const epoch of [0, 0, 2, 2, 5]) log.appendAsLeader(batch(4, { valueBytes: 40 }), epoch);
    const epochs = [
      { epoch: 0, startOffset: 0n },
      { epoch: 2, startOffset: 8n },
      { epoch: 5, startOffset: 16n },
    ];
    expect(log.leaderEpochCache.all()).toEqual(epochs);
    // A crash before any flush: no checkpoint of the epochs, nothing synced.
    manager.close();
    fs.rmSync(epochFile());
    const recovered = crashAndReopen({ fromStart: true });
    expect(recovered.leaderEpochCache.all()).toEqual(epochs);
    // A stale checkpoint naming an epoch the batches contradict is corrected the same way.
    manager.close();
    fs.writeFileSync(epochFile(), "0\n2\n0 0\n7 4\n");
    expect(crashAndReopen({ fromStart: true }).leaderEpochCache.all()).toEqual(epochs);
  });

  test.each([
    ["one syncfs per log dir", true],
    ["the files of each log", false],
  ])(
    "closeAsync makes every log durable (%s), then writes the marker; a failed close leaves none",
    async (_how, syncFileSystems) => {
      const log = open({ syncFileSystems });
      const other = manager.getOrCreateLog("events", 4);
      log.appendAsLeader(batch(4), 1);
      other.appendAsLeader(batch(2), 1);
      await manager.closeAsync();
      expect(fs.existsSync(path.join(dir, CLEAN_SHUTDOWN_FILE))).toBe(true);
      expect(fs.readFileSync(epochFile(), "utf8")).toBe("0\n1\n1 0\n");
      const checkpoint = fs.readFileSync(path.join(dir, RECOVERY_POINT_CHECKPOINT_FILE), "utf8");
      expect(checkpoint.split("\n").sort().join(" ")).toBe(" 0 2 events 3 4 events 4 2");
      const reopened = open({ syncFileSystems });
      expect(reopened.logEndOffset).toBe(4n);
      expect(lines.filter((l) => /truncat|recover/i.test(l))).toEqual([]);
      // A log whose directory vanished cannot close: the next start must recover.
      reopened.appendAsLeader(batch(1), 1);
      fs.rmSync(reopened.dir, { recursive: true });
      await manager.closeAsync();
      expect(fs.existsSync(path.join(dir, CLEAN_SHUTDOWN_FILE))).toBe(false);
    },
  );
});

describe("index rebuilds", () => {
  test("a missing offset index of a sealed segment is rebuilt on first use", () => {
    const log = open();
    fill(log, 40);
    const before = readAll(log);
    const bases = log.segmentBaseOffsets();
    const indexFile = partitionFile(`${stem(bases[1])}.index`);
    manager.close();
    const original = fs.readFileSync(indexFile);
    expect(original.length).toBeGreaterThan(0);
    fs.rmSync(indexFile);
    const reopened = open();
    expect(readAll(reopened)).toEqual(before);
    expect(fs.readFileSync(indexFile)).toEqual(original);
    expect(lines.some((l) => l.includes("rebuilding indexes") && l.includes("missing"))).toBe(true);
  });

  test("a corrupt offset index and a missing time index are rebuilt", () => {
    const log = open();
    fill(log, 40);
    const before = readAll(log);
    const bases = log.segmentBaseOffsets();
    manager.close();
    fs.writeFileSync(partitionFile(`${stem(bases[0])}.index`), new Uint8Array(16).fill(0xff));
    fs.rmSync(partitionFile(`${stem(bases[2])}.timeindex`));
    const active = bases[bases.length - 1];
    fs.writeFileSync(partitionFile(`${stem(active)}.index`), new Uint8Array(5));
    const reopened = open();
    expect(reopened.logEndOffset).toBe(160n);
    expect(readAll(reopened)).toEqual(before);
    expect(fs.statSync(partitionFile(`${stem(bases[2])}.timeindex`)).size % 12).toBe(0);
    expect(lines.filter((l) => l.includes("rebuilding indexes")).length).toBe(3);
  });

  test("leftover .deleted/.swap/.cleaned/.tmp files and orphan indexes are removed", () => {
    const log = open();
    fill(log, 2);
    const leftovers = ["x.swap", "y.cleaned", "z.tmp", `${stem(99n)}.log.deleted`];
    leftovers.push(`${stem(500n)}.index`);
    for (const name of leftovers) {
      fs.writeFileSync(partitionFile(name), "junk");
    }
    reopenClean();
    // The producer state snapshot written at close is not a leftover.
    const names = fs
      .readdirSync(path.join(dir, "events-3"))
      .filter((n) => !n.endsWith(".snapshot"));
    expect(names.sort()).toEqual([`${stem(0n)}.index`, `${stem(0n)}.log`, `${stem(0n)}.timeindex`]);
  });
});
