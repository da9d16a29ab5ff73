/**
 * Kafka's offset checkpoint files (`recovery-point-offset-checkpoint`,
 * `log-start-offset-checkpoint`, `replication-offset-checkpoint`, `cleaner-offset-checkpoint`),
 * one per log dir, in Kafka's text format so operators and
 * tools recognise them:
 *
 *   0                 <- format version
 *   2                 <- number of entries
 *   orders 0 1200     <- topic partition offset
 *   orders 1 877
 *
 * Written atomically (temporary file, fdatasync, rename, directory fsync): a crash leaves the
 * old or the new file, never a mix. A file that does not parse is reported and treated as
 * absent, which only makes recovery scan more.
 */

import type { Logger } from "../util/logger.ts";
import {
  readFileIfExists,
  writeFileAtomically,
  writeFileAtomicallyInBackground,
} from "./durable-file.ts";

export const RECOVERY_POINT_CHECKPOINT_FILE = "recovery-point-offset-checkpoint";
export const LOG_START_OFFSET_CHECKPOINT_FILE = "log-start-offset-checkpoint";
/** The LogCleaner's position per compacted log (its first dirty offset). */
export const CLEANER_OFFSET_CHECKPOINT_FILE = "cleaner-offset-checkpoint";
/** High watermarks, so a restarted replica does not expose what the ISR may not have had. */
export const HIGH_WATERMARK_CHECKPOINT_FILE = "replication-offset-checkpoint";
const CHECKPOINT_VERSION = 0;
/** Entries per file: one per partition in the log dir; far above any realistic broker. */
const CHECKPOINT_ENTRIES_MAX = 1_000_000;

export interface CheckpointEntry {
  readonly topic: string;
  readonly partition: number;
  readonly offset: bigint;
}

export function writeOffsetCheckpoint(filePath: string, entries: readonly CheckpointEntry[]): void {
  writeFileAtomically(filePath, formatOffsetCheckpoint(entries));
}

/**
 * writeOffsetCheckpoint with the file work on the thread pool; false when `stillCurrent` said a
 * newer write had happened and the file was left alone (durable-file.ts).
 */
export function writeOffsetCheckpointInBackground(
  filePath: string,
  entries: readonly CheckpointEntry[],
  stillCurrent?: () => boolean,
): Promise<boolean> {
  return writeFileAtomicallyInBackground(filePath, formatOffsetCheckpoint(entries), stillCurrent);
}

function formatOffsetCheckpoint(entries: readonly CheckpointEntry[]): Uint8Array {
  const lines = [String(CHECKPOINT_VERSION), String(entries.length)];
  for (const e of entries) lines.push(`${e.topic} ${e.partition} ${e.offset}`);
  return new TextEncoder().encode(lines.join("\n") + "\n");
}

/** Offsets by `<topic>-<partition>`; empty if the file is missing or malformed. */
export function readOffsetCheckpoint(filePath: string, logger: Logger): Map<string, bigint> {
  const bytes = readFileIfExists(filePath);
  const offsets = new Map<string, bigint>();
  if (bytes === null) return offsets;
  const lines = new TextDecoder()
    .decode(bytes)
    .split("\n")
    .filter((l) => l.length > 0);
  const count = Number(lines[1]);
  const wellFormed =
    lines[0] === String(CHECKPOINT_VERSION) &&
    Number.isInteger(count) &&
    count <= CHECKPOINT_ENTRIES_MAX &&
    lines.length === count + 2;
  if (!wellFormed) {
    logger.warn(`ignoring malformed checkpoint file ${filePath}`);
    return offsets;
  }
  for (const line of lines.slice(2)) {
    const match = /^(\S+) (\d+) (-?\d+)$/.exec(line);
    if (match === null) {
      logger.warn(`ignoring malformed checkpoint file ${filePath}: "${line}"`);
      return new Map();
    }
    offsets.set(`${match[1]}-${match[2]}`, BigInt(match[3]));
  }
  return offsets;
}
