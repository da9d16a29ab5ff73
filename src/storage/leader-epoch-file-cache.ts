/**
 * The leader epochs of one partition log and the first offset written in each (Kafka's
 * LeaderEpochFileCache, KIP-101): what OffsetForLeaderEpoch answers and how a follower finds
 * where its log diverges from the leader's. Kept in `<partition dir>/leader-epoch-checkpoint`
 * in Kafka's text format:
 *
 *   0          <- format version
 *   2          <- number of entries
 *   0 0        <- epoch start offset
 *   3 1200
 *
 * Epochs and start offsets both strictly increase. A truncation rewrites the file at once
 * (fdatasync, rename, directory fsync). A new epoch (assign) only changes the entries in memory:
 * the owning log writes them (writeIfDirty, writeIfDirtyInBackground) before its recovery point
 * moves past any offset, and crash recovery rebuilds the entries of the segments it validates
 * from their batches' leader epochs (discardFrom, then assign), as Kafka's LogSegment.recover
 * does. So the file is right below the recovery point, and the batches above it say the rest.
 * Writing it with its two syncs on every assign made creating a partition (a leader taking its
 * first epoch) cost two disk syncs on the event loop: a minute per 10,000 partitions on a busy
 * disk (docs/scaling.md). Not thread-safe.
 */

import * as path from "node:path";
import type { LeaderEpoch, Offset } from "../common/branded.ts";
import { assert } from "../util/assert.ts";
import type { Logger } from "../util/logger.ts";
import {
  readFileIfExists,
  writeFileAtomically,
  writeFileAtomicallyInBackground,
} from "./durable-file.ts";
import type { PrereadFiles } from "./preread-files.ts";

export const LEADER_EPOCH_CHECKPOINT_FILE = "leader-epoch-checkpoint";
const CHECKPOINT_VERSION = 0;
/** Epochs remembered per partition: one per leader change; the oldest go first beyond this. */
export const LEADER_EPOCH_ENTRIES_MAX = 10_000;
/** Kafka's answer for an epoch it cannot place (UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET). */
export const UNDEFINED_EPOCH: LeaderEpoch = -1;
export const UNDEFINED_EPOCH_OFFSET: Offset = -1n;

export interface EpochEntry {
  readonly epoch: LeaderEpoch;
  readonly startOffset: Offset;
}

export interface EpochEndOffset {
  readonly epoch: LeaderEpoch;
  readonly endOffset: Offset;
}

export class LeaderEpochFileCache {
  private entries: EpochEntry[];
  /** Bumped by every change of the entries; `writtenGeneration` is the one on disk. */
  private generation = 0;
  private writtenGeneration = 0;
  /** Background writes run one after another (they share a temporary file). */
  private backgroundWrites: Promise<void> = Promise.resolve();

  private constructor(
    private filePath: string,
    entries: EpochEntry[],
  ) {
    this.entries = entries;
  }

  /** Loads the checkpoint of the log in `dir`; a missing or malformed file means no epochs. */
  static load(dir: string, logger: Logger, preread?: PrereadFiles): LeaderEpochFileCache {
    const filePath = path.join(dir, LEADER_EPOCH_CHECKPOINT_FILE);
    const bytes = preread?.take(filePath) ?? readFileIfExists(filePath);
    return new LeaderEpochFileCache(filePath, decodeEntries(filePath, bytes, logger));
  }

  /** The cache of a log whose directory was just made: no epochs, no file yet. */
  static empty(dir: string): LeaderEpochFileCache {
    return new LeaderEpochFileCache(path.join(dir, LEADER_EPOCH_CHECKPOINT_FILE), []);
  }

  /** The log directory moved (deletion renames it); later writes follow it. */
  moveTo(dir: string): void {
    this.filePath = path.join(dir, LEADER_EPOCH_CHECKPOINT_FILE);
  }

  get latestEpoch(): LeaderEpoch {
    return this.entries.at(-1)?.epoch ?? UNDEFINED_EPOCH;
  }

  all(): readonly EpochEntry[] {
    return this.entries;
  }

  /**
   * Records that `epoch` starts at `startOffset` (a leader taking over at its LEO, or the first
   * batch of a new epoch appended). An older or equal epoch is ignored; entries that a new one
   * contradicts (starting at or after it) are dropped, as Kafka does after a truncation.
   */
  assign(epoch: LeaderEpoch, startOffset: Offset): void {
    assert(epoch >= 0, `leader epoch ${epoch} must be >= 0`);
    assert(startOffset >= 0n, `epoch start offset ${startOffset} must be >= 0`);
    if (epoch <= this.latestEpoch) return;
    const kept = this.entries.filter((e) => e.startOffset < startOffset);
    kept.push({ epoch, startOffset });
    const excess = kept.length - LEADER_EPOCH_ENTRIES_MAX;
    if (excess > 0) kept.splice(0, excess);
    this.entries = kept;
    this.generation++;
  }

  /** True while the entries in memory differ from the file's. */
  get isDirty(): boolean {
    return this.writtenGeneration !== this.generation;
  }

  /** Writes the entries now (fdatasync, rename, directory fsync) unless the file has them. */
  writeIfDirty(): void {
    if (this.isDirty) this.flush();
  }

  /**
   * writeIfDirty with the write and its syncs on the thread pool. Resolves once the entries the
   * cache held at the call (or newer ones) are durable; with `durable` false, once they are
   * written (a clean stop syncs the whole file system afterwards, file-system-sync.ts).
   */
  writeIfDirtyInBackground(durable = true): Promise<void> {
    if (!this.isDirty) return Promise.resolve();
    const run = this.backgroundWrites.then(async () => {
      if (!this.isDirty) return;
      const generation = this.generation;
      // A synchronous write since (a truncation) holds newer entries: it must not be replaced.
      const stillCurrent = () => this.writtenGeneration < generation;
      const wrote = await writeFileAtomicallyInBackground(
        this.filePath,
        this.encode(),
        stillCurrent,
        durable,
      );
      if (wrote && this.writtenGeneration < generation) this.writtenGeneration = generation;
    });
    this.backgroundWrites = run.catch(() => undefined);
    return run;
  }

  /**
   * The epochs of the log this one replaces (a replica moved between log dirs): the copy holds
   * the same batches, and now the same epochs, also those no batch carries.
   */
  copyFrom(other: LeaderEpochFileCache): void {
    this.entries = [...other.entries];
    this.generation++;
  }

  /**
   * Crash recovery: forgets the epochs starting at or after `offset`, the first offset it
   * validates, whose entries it then rebuilds with assign from the batches. In memory only.
   */
  discardFrom(offset: Offset): void {
    const kept = this.entries.filter((e) => e.startOffset < offset);
    if (kept.length === this.entries.length) return;
    this.entries = kept;
    this.generation++;
  }

  /**
   * The end of `requestedEpoch` in this log: the start of the next higher epoch, or the LEO for
   * the latest epoch, together with the largest known epoch <= the requested one (Kafka's
   * LeaderEpochFileCache.endOffsetFor). UNDEFINED when the epoch is unknown or above all.
   */
  endOffsetFor(requestedEpoch: LeaderEpoch, logEndOffset: Offset): EpochEndOffset {
    const undefinedAnswer = { epoch: UNDEFINED_EPOCH, endOffset: UNDEFINED_EPOCH_OFFSET };
    if (requestedEpoch === UNDEFINED_EPOCH || this.entries.length === 0) return undefinedAnswer;
    if (requestedEpoch === this.latestEpoch) {
      return { epoch: requestedEpoch, endOffset: logEndOffset };
    }
    const higher = this.entries.findIndex((e) => e.epoch > requestedEpoch);
    if (higher < 0) return undefinedAnswer;
    const endOffset = this.entries[higher]!.startOffset;
    if (higher === 0) return { epoch: requestedEpoch, endOffset };
    return { epoch: this.entries[higher - 1]!.epoch, endOffset };
  }

  /** The epoch whose leader wrote `offset`: the latest one starting at or before it, else -1. */
  epochForOffset(offset: Offset): LeaderEpoch {
    let epoch = UNDEFINED_EPOCH;
    for (const e of this.entries) {
      if (e.startOffset > offset) break;
      epoch = e.epoch;
    }
    return epoch;
  }

  /** After a truncation to `endOffset`: epochs starting at or after it never happened here. */
  truncateFromEnd(endOffset: Offset): void {
    const kept = this.entries.filter((e) => e.startOffset < endOffset);
    if (kept.length === this.entries.length) return;
    this.entries = kept;
    this.generation++;
    this.flush();
  }

  private flush(): void {
    const generation = this.generation;
    writeFileAtomically(this.filePath, this.encode());
    this.writtenGeneration = generation;
  }

  private encode(): Uint8Array {
    const lines = [String(CHECKPOINT_VERSION), String(this.entries.length)];
    for (const e of this.entries) lines.push(`${e.epoch} ${e.startOffset}`);
    return new TextEncoder().encode(lines.join("\n") + "\n");
  }
}

function decodeEntries(filePath: string, bytes: Uint8Array | null, logger: Logger): EpochEntry[] {
  if (bytes === null) return [];
  const lines = new TextDecoder()
    .decode(bytes)
    .split("\n")
    .filter((l) => l.length > 0);
  const count = Number(lines[1]);
  const malformed = (why: string) => {
    logger.warn(`ignoring malformed ${filePath}: ${why}`);
    return [];
  };
  if (lines[0] !== String(CHECKPOINT_VERSION)) return malformed(`version "${lines[0]}"`);
  if (!Number.isInteger(count) || count > LEADER_EPOCH_ENTRIES_MAX || lines.length !== count + 2) {
    return malformed(`${lines.length - 2} entries, header says ${lines[1]}`);
  }
  const entries: EpochEntry[] = [];
  for (const line of lines.slice(2)) {
    const match = /^(\d+) (\d+)$/.exec(line);
    if (match === null) return malformed(`line "${line}"`);
    const entry = { epoch: Number(match[1]), startOffset: BigInt(match[2]!) };
    const last = entries.at(-1);
    const ordered =
      last === undefined || (entry.epoch > last.epoch && entry.startOffset > last.startOffset);
    if (!ordered) {
      return malformed(`entries out of order at "${line}"`);
    }
    entries.push(entry);
  }
  return entries;
}
