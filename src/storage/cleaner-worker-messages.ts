/**
 * The messages between the cleaner (event loop) and its Worker (cleaner-worker.ts). The Worker
 * answers each request with one reply carrying the same id, one request at a time in the order
 * sent.
 *
 * A cleaning is: `map-begin`, `map-segment` per segment of the dirty section until a reply says
 * `done`, then `filter-begin`, and `filter-segment` per segment of every group. The Worker reads
 * each segment itself, chunk by chunk, through the fd the event loop lends it, and writes a
 * group's survivors into the `.cleaned` log through that file's fd; the event loop holds a
 * reference on every fd lent until the reply (or the Worker's exit), indexes what was written,
 * and swaps segments. The Worker keeps the offset map, both passes' transaction metadata and
 * the throttle between requests.
 */
import type { AbortedTxn } from "./transaction-index.ts";

export interface MapBeginRequest {
  readonly type: "map-begin";
  /** log.cleaner.dedupe.buffer.size and its load factor: the Worker's map is rebuilt on change. */
  readonly bufferBytes: number;
  readonly loadFactor: number;
  /** The dirty section's offset count: the most keys this cleaning can put. */
  readonly keysMax: number;
  /** First dirty offset and first uncleanable offset. */
  readonly start: number;
  readonly end: bigint;
  /** Aborted transactions of the dirty section, whose records stay out of the map. */
  readonly abortedTxns: readonly AbortedTxn[];
  /** log.cleaner.io.buffer.size: bytes read per chunk. */
  readonly chunkBytes: number;
  /**
   * log.cleaner.io.max.bytes.per.second (reads plus writes; Infinity: none) in element 0, over a
   * SharedArrayBuffer the event loop writes on a dynamic change: read at every throttle check.
   */
  readonly ioMaxBytesPerSecond: Float64Array;
}

/** A sealed segment's `.log`, read by the Worker over [0, sizeBytes) through `fd`. */
export interface SegmentSource {
  readonly fd: number;
  readonly sizeBytes: number;
  /** For error messages. */
  readonly filePath: string;
}

/** Puts the segment's keyed records into the map, until the map is full or the section ends. */
export interface MapSegmentRequest {
  readonly type: "map-segment";
  readonly source: SegmentSource;
}

export interface FilterBeginRequest {
  readonly type: "filter-begin";
  readonly nowMs: number;
  readonly deleteRetentionMs: number;
  readonly lastOffsetOfProducer: ReadonlyMap<bigint, bigint>;
  readonly markerOnlyProducers: ReadonlyMap<bigint, number>;
}

/**
 * Filters the segment's batches and writes the survivors to the cleaned log's fd from
 * `outputPosition` on (the cleaned segment's size so far).
 */
export interface FilterSegmentRequest {
  readonly type: "filter-segment";
  readonly source: SegmentSource;
  /** The segment's aborted transactions. */
  readonly abortedTxns: readonly AbortedTxn[];
  readonly outputFd: number;
  readonly outputPosition: number;
}

export type CleanerWorkerRequest =
  | MapBeginRequest
  | MapSegmentRequest
  | FilterBeginRequest
  | FilterSegmentRequest;

/** What every segment request reports besides its own result. */
export interface SegmentWork {
  readonly bytesRead: number;
  /** Chunks read (each one read, and mapped or filtered). */
  readonly chunks: number;
  /** Time slept by the throttle during this request. */
  readonly throttledMs: number;
}

export interface MapSegmentReply extends SegmentWork {
  /** The map is full or the dirty section's end was reached: read no more. */
  readonly done: boolean;
  /** The last offset of the last batch wholly in the map (-1: none). */
  readonly latestOffset: number;
  readonly mapRecords: number;
}

/** One output batch: where it lies from `outputPosition` on and what the indexes need. */
export interface FilteredBatchInfo {
  readonly relativePosition: number;
  readonly sizeBytes: number;
  readonly lastOffset: bigint;
  readonly maxTimestamp: bigint;
}

export interface FilterSegmentReply extends SegmentWork {
  /** Bytes written from `outputPosition` on: the kept batches, in offset order. */
  readonly bytesWritten: number;
  readonly batches: readonly FilteredBatchInfo[];
  readonly recordsRead: number;
  readonly recordsKept: number;
  /** The latest delete horizon a kept batch carries, or -1. */
  readonly deleteHorizonMs: number;
  /** Aborted transactions whose ABORT marker was kept: entries of the cleaned `.txnindex`. */
  readonly keptAbortedTxns: readonly AbortedTxn[];
}

/** Every reply carries the request's id and the Worker's thread id (it proves where work ran). */
export interface CleanerWorkerReply {
  readonly id: number;
  readonly threadId: number;
  readonly error?: string;
  readonly body?: unknown;
}
