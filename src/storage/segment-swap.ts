/**
 * Crash-safe replacement of segments by a cleaned one, Kafka's scheme (LocalLog.replaceSegments
 * and LogLoader's swap recovery):
 *
 * 1. The cleaner writes `<base>.log.cleaned` (+ `.index.cleaned`, `.timeindex.cleaned`) and
 *    fdatasyncs them. A crash now leaves `.cleaned` files, which the loader deletes: the old
 *    segments are intact.
 * 2. The `.cleaned` files are renamed to `.swap`, the log file last, so a `.log.swap` means the
 *    new segment is complete. From here on a restart finishes the swap.
 * 3. The old segments are renamed to `.deleted` (unlinked in the background; readers holding
 *    their fds keep reading the old bytes, which hold every offset the new one does).
 * 4. The `.swap` files are renamed to their final names (indexes first, the log last).
 *
 * Recovery (recoverInterruptedSwaps, called by the loader before it lists segments): for every
 * `.log.swap`, segment files whose base offset lies in [swap base, swap's next offset) are the
 * old segments of that swap and are deleted, then the `.swap` files are renamed. An old segment
 * of the group whose records were all removed lies past the swap's next offset and stays: it
 * only holds records that later ones supersede, so nothing is lost and the next cleaning takes
 * it (Kafka's loader has the same property).
 */
import * as fs from "node:fs";
import * as path from "node:path";
import type { Logger } from "../util/logger.ts";
import { fsyncDirectory } from "./durable-file.ts";
import { LOG_FILE_SUFFIX, segmentFilePaths, segmentFileStem } from "./log-segment.ts";
import { scanBatchHeaders } from "./segment-batch-reader.ts";
import { TXN_INDEX_FILE_SUFFIX } from "./transaction-index.ts";

export const CLEANED_FILE_SUFFIX = ".cleaned";
export const SWAP_FILE_SUFFIX = ".swap";
/** A live segment file (producer snapshots, also named by offset, are not touched). */
const SEGMENT_FILE = /^(\d{20})\.(log|index|timeindex|txnindex)$/;

/**
 * Step 2: `.cleaned` -> `.swap`, the log file last. The caller makes it durable (directory
 * fsync, fsyncDirectoryInBackground) before step 3.
 */
export async function markCleanedAsSwap(dir: string, baseOffset: bigint): Promise<void> {
  // On the thread pool, one at a time in renameSegmentFiles' order: a rename waited up to
  // 109 ms for the file system journal while other files were being synced. Nothing reads the
  // `.cleaned` files, so no request depends on when these renames happen.
  const [log, index, timeIndex] = segmentFilePaths(dir, baseOffset);
  const txnIndex = path.join(dir, segmentFileStem(baseOffset) + TXN_INDEX_FILE_SUFFIX);
  for (const p of [index, timeIndex, txnIndex, log]) {
    try {
      await fs.promises.rename(p + CLEANED_FILE_SUFFIX, p + SWAP_FILE_SUFFIX);
    } catch (error) {
      if ((error as { code?: string }).code !== "ENOENT" || p === log) throw error;
    }
  }
}

/**
 * Step 4: `.swap` -> final names, the log file last. Until a directory fsync makes the renames
 * durable a crash leaves the `.swap` files, which the loader finishes.
 */
export function finishSwap(dir: string, baseOffset: bigint): void {
  renameSegmentFiles(dir, baseOffset, SWAP_FILE_SUFFIX, "");
}

/**
 * Removes a cleaned output that will not be swapped in (an aborted cleaning), under `suffix`
 * `.cleaned` or `.swap`; the log file first, so a crash midway leaves only stray index files.
 */
export function deleteCleanedFiles(dir: string, baseOffset: bigint, suffix: string): void {
  const txnIndex = path.join(dir, segmentFileStem(baseOffset) + TXN_INDEX_FILE_SUFFIX + suffix);
  for (const p of [...segmentFilePaths(dir, baseOffset, suffix), txnIndex]) {
    fs.rmSync(p, { force: true });
  }
}

/**
 * Renames the index files (and the transaction index, present only when the segment has aborted
 * transactions) first and the `.log` last; a missing index file is skipped.
 */
function renameSegmentFiles(dir: string, baseOffset: bigint, from: string, to: string): void {
  const [log, index, timeIndex] = segmentFilePaths(dir, baseOffset);
  const txnIndex = path.join(dir, segmentFileStem(baseOffset) + TXN_INDEX_FILE_SUFFIX);
  for (const p of [index, timeIndex, txnIndex, log]) {
    try {
      fs.renameSync(p + from, p + to);
    } catch (error) {
      if ((error as { code?: string }).code !== "ENOENT" || p === log) throw error;
    }
  }
}

/**
 * Finishes swaps a crash interrupted (see the file comment). Returns the number finished.
 * Index `.swap` files without a `.log.swap` are left for the loader's stray-file cleanup.
 */
export function recoverInterruptedSwaps(
  dir: string,
  logger: Logger,
  listing: readonly string[] = fs.readdirSync(dir),
): number {
  const logSwaps = listing
    .filter((name) => name.endsWith(LOG_FILE_SUFFIX + SWAP_FILE_SUFFIX))
    .map((name) => BigInt(name.slice(0, 20)));
  for (const baseOffset of logSwaps) {
    const swapPath = segmentFilePaths(dir, baseOffset, SWAP_FILE_SUFFIX)[0];
    const nextOffset = nextOffsetOf(swapPath, baseOffset);
    // The old segment with the swap's own base is replaced even when the swap came out empty.
    const endOffset = nextOffset > baseOffset ? nextOffset : baseOffset + 1n;
    for (const name of fs.readdirSync(dir)) {
      const stem = SEGMENT_FILE.exec(name);
      if (stem === null) continue;
      const offset = BigInt(stem[1]);
      if (offset < baseOffset || offset >= endOffset) continue;
      logger.info(`${dir}: deleting ${name}, replaced by an interrupted cleaner swap`);
      fs.rmSync(path.join(dir, name), { force: true });
    }
    finishSwap(dir, baseOffset);
    fsyncDirectory(dir);
    logger.info(
      `${dir}: finished the interrupted swap of segment ${baseOffset}` +
        ` (offsets ${baseOffset}..${nextOffset - 1n})`,
    );
  }
  return logSwaps.length;
}

/** One past the last offset in a `.log.swap` file (its base when empty). */
function nextOffsetOf(filePath: string, baseOffset: bigint): bigint {
  const fd = fs.openSync(filePath, "r");
  try {
    let next = baseOffset;
    scanBatchHeaders(fd, 0, fs.fstatSync(fd).size, (entry) => {
      next = entry.lastOffset + 1n;
      return true;
    });
    return next;
  } finally {
    fs.closeSync(fd);
  }
}
