/**
 * What every UnifiedLog of one LogManager shares: the fd pool, the log line sink and the limits.
 */
import type { OpenFilePool } from "./open-file-pool.ts";

/** Receives one human-readable line per notable storage event (truncation, deletion, ...). */
export type StorageLogger = (line: string) => void;

export interface LogEnvironment {
  readonly pool: OpenFilePool;
  readonly logger: StorageLogger;
  /** A roll beyond this many segments fails with KAFKA_STORAGE_ERROR (retention is broken). */
  readonly maxSegmentsPerLog: number;
}
