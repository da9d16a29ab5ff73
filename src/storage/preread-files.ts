/**
 * The small files of one partition directory, read on the thread pool while the broker lists
 * its log dirs (LogManager.openAsync), so that the synchronous load of each log decodes bytes
 * already in memory instead of reading its files one after another on the event loop: the
 * leader-epoch checkpoint, the newest producer snapshot and, after a clean stop, the active
 * segment's two indexes (after a crash that segment is recovered from the log, its indexes are
 * rebuilt, not read). docs/scaling.md has the measurements.
 *
 * Each file's bytes are handed out once (`take`), so they are garbage as soon as decoded; a
 * file that was not read ahead (missing, larger than PREREAD_FILE_MAX_BYTES, over the load's
 * budget, or failed to read) is read by the load as before, which then also meets (and
 * handles) any error. The bytes are what the file held when listed: nothing writes a log's files
 * between its listing and its load, except an interrupted swap's recovery, after which the
 * load drops both the listing and these bytes (log-loader.ts).
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { LEADER_EPOCH_CHECKPOINT_FILE } from "./leader-epoch-file-cache.ts";
import { INDEX_FILE_SUFFIX, logFileStem, TIME_INDEX_FILE_SUFFIX } from "./log-segment.ts";
import { listSnapshotOffsets, snapshotPath } from "./producer-state-snapshot.ts";

/** Files larger than this are left to the load: per-file costs no longer dominate them. */
export const PREREAD_FILE_MAX_BYTES = 1024 * 1024;
/**
 * What a whole load may read ahead in all (bytes the load has taken are not credited back);
 * past it, logs read their files themselves.
 */
export const PREREAD_BUDGET_BYTES = 64 * 1024 * 1024;

/** Bytes read ahead, by file path; each is taken at most once. */
export class PrereadFiles {
  private readonly files = new Map<string, Uint8Array>();

  /** The file's bytes as read ahead (once), or undefined: read it now. */
  take(filePath: string): Uint8Array | undefined {
    const bytes = this.files.get(filePath);
    if (bytes !== undefined) this.files.delete(filePath);
    return bytes;
  }

  put(filePath: string, bytes: Uint8Array): void {
    this.files.set(filePath, bytes);
  }

  get fileCount(): number {
    return this.files.size;
  }
}

/** How much a whole load may still read ahead (shared by every directory of one load). */
export interface PrereadBudget {
  remainingBytes: number;
}

export interface PartitionDirListing {
  readonly names: string[];
  readonly preread: PrereadFiles;
}

/**
 * Lists `dir` and reads its small files ahead, all on the thread pool (the files in parallel).
 * `withIndexes`: also the active segment's indexes (only a clean stop's load reads them).
 */
export async function listPartitionDir(
  dir: string,
  withIndexes: boolean,
  budget: PrereadBudget,
): Promise<PartitionDirListing> {
  const names = await fs.promises.readdir(dir);
  const preread = new PrereadFiles();
  await Promise.all(
    filesToPreread(dir, names, withIndexes).map(async (filePath) => {
      if (budget.remainingBytes <= 0) return;
      const bytes = await readSmallFile(filePath);
      if (bytes === null || bytes.length > budget.remainingBytes) return;
      budget.remainingBytes -= bytes.length;
      preread.put(filePath, bytes);
    }),
  );
  return { names, preread };
}

/** The paths the load of this directory will read first thing, among `names`. */
function filesToPreread(dir: string, names: readonly string[], withIndexes: boolean): string[] {
  const present = new Set(names);
  const paths: string[] = [];
  if (present.has(LEADER_EPOCH_CHECKPOINT_FILE)) {
    paths.push(path.join(dir, LEADER_EPOCH_CHECKPOINT_FILE));
  }
  const snapshots = listSnapshotOffsets(dir, names);
  if (snapshots.length > 0) paths.push(snapshotPath(dir, snapshots[snapshots.length - 1]!));
  if (!withIndexes) return paths;
  let activeStem: string | null = null;
  for (const name of names) {
    const stem = logFileStem(name);
    // 20-digit zero-padded stems order as their offsets do.
    if (stem !== null && (activeStem === null || stem > activeStem)) activeStem = stem;
  }
  if (activeStem === null) return paths;
  for (const suffix of [INDEX_FILE_SUFFIX, TIME_INDEX_FILE_SUFFIX]) {
    if (present.has(activeStem + suffix)) paths.push(path.join(dir, activeStem + suffix));
  }
  return paths;
}

/**
 * The whole file if it is at most PREREAD_FILE_MAX_BYTES, else null; null on any error too (the
 * load reads it again and meets the error where it is handled). The size is asked first (on the
 * thread pool too) so that 64 directories in flight never hold large indexes at once.
 */
async function readSmallFile(filePath: string): Promise<Uint8Array | null> {
  try {
    if ((await fs.promises.stat(filePath)).size > PREREAD_FILE_MAX_BYTES) return null;
    const bytes = await Bun.file(filePath).bytes();
    return bytes.length > PREREAD_FILE_MAX_BYTES ? null : bytes;
  } catch {
    return null;
  }
}
