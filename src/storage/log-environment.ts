/**
 * What every UnifiedLog of one LogManager shares: the fd pool, the log line sink and the limits.
 */
import type { Logger } from "../util/logger.ts";
import type { OpenFilePool } from "./open-file-pool.ts";

export interface LogEnvironment {
  readonly pool: OpenFilePool;
  readonly logger: Logger;
  /** A roll beyond this many segments fails with KAFKA_STORAGE_ERROR (retention is broken). */
  readonly maxSegmentsPerLog: number;
}
