/**
 * The cleaner's Worker: a cleaning's reading, offset-map build, batch filtering and
 * recompression, and the writing of the cleaned log, off the event loop, so the broker's main
 * thread sleeps between requests while a log is cleaned, as Kafka's request threads do beside its
 * cleaner thread. The event loop lends the segments' fds, indexes what was written and swaps
 * segments (cleaner.ts, cleaner-thread.ts); it handles one reply per segment.
 *
 * This file is an entry point of its own: `bun build --compile` is given it beside main.ts
 * (scripts/build-info.ts, BUILD_ENTRY_POINTS), or the compiled binary could not start it.
 */
import { threadId } from "node:worker_threads";
import { lowerThreadPriority } from "../util/thread-priority.ts";
import { CleanedTransactionMetadata } from "./cleaned-transaction-metadata.ts";
import type { CleanerFilter } from "./cleaner-batch-filter.ts";
import { filterBatch } from "./cleaner-batch-filter.ts";
import type { MapBuild } from "./cleaner-map-builder.ts";
import { addChunkToMap, forEachBatch } from "./cleaner-map-builder.ts";
import { SegmentChunkReader } from "./cleaner-segment-reader.ts";
import type {
  CleanerWorkerReply,
  CleanerWorkerRequest,
  FilterBeginRequest,
  FilteredBatchInfo,
  FilterSegmentReply,
  FilterSegmentRequest,
  MapBeginRequest,
  MapSegmentReply,
  SegmentSource,
} from "./cleaner-worker-messages.ts";
import { writeFully } from "./durable-file.ts";
import { OffsetMap } from "./offset-map.ts";
import { Throttler } from "./throttler.ts";
import type { AbortedTxn } from "./transaction-index.ts";

declare const self: Worker;

/**
 * Kafka's request threads sleep between requests and so get a CPU before its busy cleaner
 * thread; a nice value of 10 gives the event loop that precedence over this Worker on shared
 * cores (docs/log-compaction.md has the runs).
 */
const CLEANER_NICE_INCREMENT = 10;
lowerThreadPriority(CLEANER_NICE_INCREMENT);

/**
 * Output is written once this many bytes of kept batches are buffered (and at a segment's end):
 * large sequential writes, and a buffer that stays small (a rebuilt batch can outgrow its chunk).
 */
const OUTPUT_FLUSH_BYTES = 512 * 1024;

let map: OffsetMap | null = null;
let mapSettings = "";
let build: MapBuild | null = null;
let filter: CleanerFilter | null = null;
/** One cleaning's read buffer and throttle (log.cleaner.io.max.bytes.per.second). */
let reader: SegmentChunkReader | null = null;
let throttler: Throttler | null = null;
/** The survivors of a filter-segment request, before they are written. */
let output = new Uint8Array(OUTPUT_FLUSH_BYTES);

function beginMap(request: MapBeginRequest): void {
  const settings = `${request.bufferBytes}/${request.loadFactor}`;
  if (map === null || settings !== mapSettings) {
    map = new OffsetMap(request.bufferBytes, request.loadFactor);
    mapSettings = settings;
  }
  map.clear(request.keysMax);
  // The clean section is in the map's reach even when nothing dirty is read, so tombstones past
  // their horizon go in a cleaning with no new records.
  map.latestOffset = request.start - 1;
  const transactions = new CleanedTransactionMetadata();
  transactions.addAbortedTransactions(request.abortedTxns);
  build = {
    map,
    start: request.start,
    end: request.end,
    transactions,
    mapRecords: 0,
    done: false,
  };
  filter = null;
  reader = new SegmentChunkReader(request.chunkBytes);
  // A new throttle per cleaning, so time idle between cleanings does not count as slow I/O.
  const rate = request.ioMaxBytesPerSecond;
  throttler = new Throttler(() => rate[0]);
}

/** Reads the segment's chunks, counting them and throttling reads plus `written()` bytes. */
async function* chunksOf(
  source: SegmentSource,
  work: { bytesRead: number; chunks: number },
  written: () => number,
): AsyncGenerator<Uint8Array> {
  if (reader === null || throttler === null) throw new Error("segment before map-begin");
  const throttle = throttler;
  yield* reader.chunks(source, async (bytes) => {
    work.bytesRead += bytes;
    work.chunks++;
    await throttle.maybeThrottle(bytes + written());
  });
}

async function mapSegment(source: SegmentSource): Promise<MapSegmentReply> {
  if (build === null || throttler === null) throw new Error("map-segment before map-begin");
  const current = build;
  const sleptBefore = throttler.sleptMs;
  const work = { bytesRead: 0, chunks: 0 };
  const before = current.mapRecords;
  if (!current.done) {
    for await (const chunk of chunksOf(source, work, () => 0)) {
      current.done = addChunkToMap(chunk, current);
      if (current.done) break;
    }
  }
  return {
    ...work,
    throttledMs: throttler.sleptMs - sleptBefore,
    done: current.done,
    latestOffset: current.map.latestOffset,
    mapRecords: current.mapRecords - before,
  };
}

function beginFilter(request: FilterBeginRequest): void {
  if (build === null) throw new Error("filter-begin before map-begin");
  filter = {
    map: build.map,
    nowMs: request.nowMs,
    deleteRetentionMs: request.deleteRetentionMs,
    lastOffsetOfProducer: request.lastOffsetOfProducer,
    markerOnlyProducers: request.markerOnlyProducers,
    transactions: new CleanedTransactionMetadata(),
  };
}

/**
 * The survivors of one filter-segment request: buffered, written at the cleaned log's end once
 * the buffer is full and at the end, and listed for the indexes.
 */
class CleanedOutput {
  bytesWritten = 0;
  readonly batches: FilteredBatchInfo[] = [];
  private buffered = 0;
  private unthrottledBytes = 0;

  constructor(
    private readonly fd: number,
    private readonly position: number,
  ) {}

  add(bytes: Uint8Array, lastOffset: bigint, maxTimestamp: bigint): void {
    if (this.buffered > 0 && this.buffered + bytes.length > output.length) this.flush();
    // A rebuilt batch can be larger than the buffer (a delete horizon widens timestamp deltas).
    if (bytes.length > output.length) output = new Uint8Array(bytes.length);
    output.set(bytes, this.buffered);
    this.batches.push({
      relativePosition: this.bytesWritten + this.buffered,
      sizeBytes: bytes.length,
      lastOffset,
      maxTimestamp,
    });
    this.buffered += bytes.length;
  }

  flush(): void {
    if (this.buffered === 0) return;
    writeFully(this.fd, output.subarray(0, this.buffered), this.position + this.bytesWritten);
    this.bytesWritten += this.buffered;
    this.unthrottledBytes += this.buffered;
    this.buffered = 0;
  }

  /** Bytes written since the last call, for the throttle. */
  takeUnthrottledBytes(): number {
    const bytes = this.unthrottledBytes;
    this.unthrottledBytes = 0;
    return bytes;
  }
}

async function filterSegment(request: FilterSegmentRequest): Promise<FilterSegmentReply> {
  if (filter === null || throttler === null) throw new Error("filter-segment before filter-begin");
  const current = filter;
  const sleptBefore = throttler.sleptMs;
  current.transactions.addAbortedTransactions(request.abortedTxns);
  const keptAbortedTxns: AbortedTxn[] = [];
  current.transactions.cleanedIndex = { append: (txn) => keptAbortedTxns.push(txn) };
  const out = new CleanedOutput(request.outputFd, request.outputPosition);
  const work = { bytesRead: 0, chunks: 0 };
  let recordsRead = 0;
  let recordsKept = 0;
  let deleteHorizonMs = -1;
  try {
    for await (const chunk of chunksOf(request.source, work, () => out.takeUnthrottledBytes())) {
      forEachBatch(chunk, (batch, _base, lastOffset) => {
        const filtered = filterBatch(batch, current);
        recordsRead += filtered.recordsRead;
        recordsKept += filtered.recordsKept;
        if (filtered.deleteHorizonMs > deleteHorizonMs) deleteHorizonMs = filtered.deleteHorizonMs;
        if (filtered.bytes !== null) out.add(filtered.bytes, lastOffset, filtered.maxTimestamp);
        return true;
      });
    }
    out.flush();
  } finally {
    current.transactions.cleanedIndex = null;
  }
  // The bytes written after the last read.
  await throttler.maybeThrottle(out.takeUnthrottledBytes());
  return {
    ...work,
    throttledMs: throttler.sleptMs - sleptBefore,
    bytesWritten: out.bytesWritten,
    batches: out.batches,
    recordsRead,
    recordsKept,
    deleteHorizonMs,
    keptAbortedTxns,
  };
}

/** Runs one request; returns its reply body. */
async function handle(request: CleanerWorkerRequest): Promise<unknown> {
  switch (request.type) {
    case "map-begin":
      beginMap(request);
      return null;
    case "map-segment":
      return await mapSegment(request.source);
    case "filter-begin":
      beginFilter(request);
      return null;
    case "filter-segment":
      return await filterSegment(request);
  }
}

/**
 * Requests run one after another in the order sent, though a request awaits its throttle's
 * sleeps: each waits for the one before.
 */
let queue: Promise<void> = Promise.resolve();

self.onmessage = (event: MessageEvent<CleanerWorkerRequest & { id: number }>) => {
  const request = event.data;
  queue = queue.then(async () => {
    let reply: CleanerWorkerReply;
    try {
      reply = { id: request.id, threadId, body: await handle(request) };
    } catch (error) {
      reply = { id: request.id, threadId, error: String(error) };
    }
    self.postMessage(reply);
  });
};
