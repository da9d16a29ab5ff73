/**
 * The messages between the cleaner (event loop) and its Worker (cleaner-worker.ts). One request
 * is in flight at a time; each is answered by one reply with the same id. Chunk buffers are
 * transferred, not copied: the sender loses them until the reply hands them back.
 *
 * A cleaning is: `map-begin`, `map-chunk` per chunk of the dirty section until the reply says
 * `done`, then `filter-begin`, and per segment of every group `filter-txns` and `filter-chunk`
 * per chunk. The Worker keeps the offset map and both passes' transaction metadata between
 * requests; the event loop keeps the files.
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
}

/** Whole batches in `buffer[0, length)`, to put into the map. */
export interface MapChunkRequest {
  readonly type: "map-chunk";
  readonly buffer: ArrayBuffer;
  readonly length: number;
}

export interface FilterBeginRequest {
  readonly type: "filter-begin";
  readonly nowMs: number;
  readonly deleteRetentionMs: number;
  readonly lastOffsetOfProducer: ReadonlyMap<bigint, bigint>;
  readonly markerOnlyProducers: ReadonlyMap<bigint, number>;
}

/** The aborted transactions of the next segment to filter. */
export interface FilterTxnsRequest {
  readonly type: "filter-txns";
  readonly abortedTxns: readonly AbortedTxn[];
}

/** Whole batches in `input[0, length)` to filter into `output` (grown by the Worker if short). */
export interface FilterChunkRequest {
  readonly type: "filter-chunk";
  readonly input: ArrayBuffer;
  readonly length: number;
  readonly output: ArrayBuffer;
}

export type CleanerWorkerRequest =
  | MapBeginRequest
  | MapChunkRequest
  | FilterBeginRequest
  | FilterTxnsRequest
  | FilterChunkRequest;

export interface MapChunkReply {
  readonly buffer: ArrayBuffer;
  /** The map is full or the dirty section's end was reached: read no more. */
  readonly done: boolean;
  /** The last offset of the last batch wholly in the map (-1: none). */
  readonly latestOffset: number;
  readonly mapRecords: number;
}

/** One output batch: where it lies in the output buffer and what the indexes need. */
export interface FilteredBatchInfo {
  readonly relativePosition: number;
  readonly sizeBytes: number;
  readonly lastOffset: bigint;
  readonly maxTimestamp: bigint;
}

export interface FilterChunkReply {
  readonly input: ArrayBuffer;
  readonly output: ArrayBuffer;
  /** Bytes of `output` holding the kept batches, in offset order. */
  readonly outputBytes: number;
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
