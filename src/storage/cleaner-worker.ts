/**
 * The cleaner's Worker: the CPU work of a cleaning (offset-map build, batch filtering and
 * recompression) off the event loop, so the broker's main thread sleeps between requests while
 * a log is cleaned, as Kafka's request threads do beside its cleaner thread. The event loop
 * keeps every file: it reads chunks, hands them here (transferred, not copied), writes what
 * comes back and swaps segments (cleaner.ts, cleaner-thread.ts).
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
import type {
  CleanerWorkerReply,
  CleanerWorkerRequest,
  FilterBeginRequest,
  FilterChunkReply,
  FilterChunkRequest,
  FilteredBatchInfo,
  MapBeginRequest,
  MapChunkReply,
} from "./cleaner-worker-messages.ts";
import { OffsetMap } from "./offset-map.ts";
import type { AbortedTxn } from "./transaction-index.ts";

declare const self: Worker;

/**
 * Kafka's request threads sleep between requests and so get a CPU before its busy cleaner
 * thread; a nice value of 10 gives the event loop that precedence over this Worker on shared
 * cores (docs/log-compaction.md has the runs).
 */
const CLEANER_NICE_INCREMENT = 10;
lowerThreadPriority(CLEANER_NICE_INCREMENT);

let map: OffsetMap | null = null;
let mapSettings = "";
let build: MapBuild | null = null;
let filter: CleanerFilter | null = null;

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
}

function mapChunk(buffer: ArrayBuffer, length: number): MapChunkReply {
  if (build === null) throw new Error("map-chunk before map-begin");
  const before = build.mapRecords;
  // Chunks sent before the event loop learnt the build was done are answered unread.
  const done = build.done || addChunkToMap(new Uint8Array(buffer, 0, length), build);
  build.done = done;
  return {
    buffer,
    done,
    latestOffset: build.map.latestOffset,
    mapRecords: build.mapRecords - before,
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

function filterChunk(request: FilterChunkRequest): FilterChunkReply {
  if (filter === null) throw new Error("filter-chunk before filter-begin");
  const current = filter;
  let output = new Uint8Array(request.output);
  let outputBytes = 0;
  const batches: FilteredBatchInfo[] = [];
  const keptAbortedTxns: AbortedTxn[] = [];
  current.transactions.cleanedIndex = { append: (txn) => keptAbortedTxns.push(txn) };
  let recordsRead = 0;
  let recordsKept = 0;
  let deleteHorizonMs = -1;
  forEachBatch(new Uint8Array(request.input, 0, request.length), (batch, _base, lastOffset) => {
    const filtered = filterBatch(batch, current);
    recordsRead += filtered.recordsRead;
    recordsKept += filtered.recordsKept;
    if (filtered.deleteHorizonMs > deleteHorizonMs) deleteHorizonMs = filtered.deleteHorizonMs;
    const bytes = filtered.bytes;
    if (bytes === null) return true;
    if (outputBytes + bytes.length > output.length) {
      // A rebuilt batch can outgrow the original (a delete horizon widens timestamp deltas).
      const grown = new Uint8Array(Math.max(output.length * 2, outputBytes + bytes.length));
      grown.set(output.subarray(0, outputBytes));
      output = grown;
    }
    output.set(bytes, outputBytes);
    const { maxTimestamp } = filtered;
    batches.push({
      relativePosition: outputBytes,
      sizeBytes: bytes.length,
      lastOffset,
      maxTimestamp,
    });
    outputBytes += bytes.length;
    return true;
  });
  current.transactions.cleanedIndex = null;
  return {
    input: request.input,
    output: output.buffer as ArrayBuffer,
    outputBytes,
    batches,
    recordsRead,
    recordsKept,
    deleteHorizonMs,
    keptAbortedTxns,
  };
}

/** Runs one request; returns its reply body and the buffers to transfer back. */
function handle(request: CleanerWorkerRequest): [unknown, ArrayBuffer[]] {
  switch (request.type) {
    case "map-begin":
      beginMap(request);
      return [null, []];
    case "map-chunk": {
      const reply = mapChunk(request.buffer, request.length);
      return [reply, [reply.buffer]];
    }
    case "filter-begin":
      beginFilter(request);
      return [null, []];
    case "filter-txns":
      if (filter === null) throw new Error("filter-txns before filter-begin");
      filter.transactions.addAbortedTransactions(request.abortedTxns);
      return [null, []];
    case "filter-chunk": {
      const reply = filterChunk(request);
      return [reply, [reply.input, reply.output]];
    }
  }
}

self.onmessage = (event: MessageEvent<CleanerWorkerRequest & { id: number }>) => {
  const request = event.data;
  let reply: CleanerWorkerReply;
  let transfer: ArrayBuffer[] = [];
  try {
    const [body, buffers] = handle(request);
    reply = { id: request.id, threadId, body };
    transfer = buffers;
  } catch (error) {
    // The cleaning fails; its buffers (not sent back) die with it.
    reply = { id: request.id, threadId, error: String(error) };
  }
  self.postMessage(reply, transfer);
};
