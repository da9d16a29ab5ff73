/**
 * Rebuilds producer state from the log after the newest snapshot (or from the log start when
 * there is none), as Kafka's UnifiedLog.rebuildProducerState does. Only batch headers are read:
 * producer id, epoch, base sequence, offsets and max timestamp are all in the fixed 61-byte
 * prefix, so nothing is decompressed. The bytes were validated on append or by recovery, which
 * runs before this; a bad header here means the disk changed under us.
 */
import * as fs from "node:fs";
import { readControlRecord } from "../protocol/control-record.ts";
import { ErrorCode, KafkaError } from "../protocol/errors.ts";
import { LOG_OVERHEAD, RECORD_BATCH_OVERHEAD } from "../protocol/record-batch.ts";
import type { LogSegment } from "./log-segment.ts";
import type { ProducerBatch, ProducerStateManager } from "./producer-state-manager.ts";

const CHUNK_BYTES = 64 * 1024;
const chunk = new Uint8Array(CHUNK_BYTES);
const chunkView = new DataView(chunk.buffer);

/** Replays every batch from `fromOffset` to the end of `segments` into `state`. */
export function replayProducerState(
  state: ProducerStateManager,
  segments: readonly LogSegment[],
  fromOffset: bigint,
): number {
  let replayed = 0;
  // A clean stop leaves a snapshot at the log end: nothing to read (and no index to load).
  if (fromOffset >= segments[segments.length - 1]!.nextOffset) return 0;
  for (let i = 0; i < segments.length; i++) {
    const segment = segments[i];
    const next = segments[i + 1];
    if (next !== undefined && next.baseOffset <= fromOffset) continue;
    const start =
      fromOffset > segment.baseOffset
        ? (segment.translateOffset(fromOffset)?.position ?? segment.sizeBytes)
        : 0;
    const fd = segment.file.acquire();
    try {
      replayed += replaySegment(state, segment, fd, start, fromOffset);
    } finally {
      segment.file.release();
    }
  }
  return replayed;
}

function replaySegment(
  state: ProducerStateManager,
  segment: LogSegment,
  fd: number,
  startPosition: number,
  fromOffset: bigint,
): number {
  const endPosition = segment.sizeBytes;
  let replayed = 0;
  let chunkStart = 0;
  let chunkEnd = 0;
  let position = startPosition;
  // Every pass advances by a whole batch (at least RECORD_BATCH_OVERHEAD bytes) or throws.
  while (position < endPosition) {
    if (position + RECORD_BATCH_OVERHEAD > chunkEnd) {
      const want = Math.min(CHUNK_BYTES, endPosition - position);
      chunkStart = position;
      chunkEnd = position + fs.readSync(fd, chunk, 0, want, position);
      if (position + RECORD_BATCH_OVERHEAD > chunkEnd) corrupt(position, "truncated header");
    }
    const at = position - chunkStart;
    const sizeBytes = LOG_OVERHEAD + chunkView.getInt32(at + 8);
    if (sizeBytes < RECORD_BATCH_OVERHEAD || position + sizeBytes > endPosition) {
      corrupt(position, `bad batch size ${sizeBytes}`);
    }
    if (isControlAt(chunkView, at) && position + sizeBytes > chunkEnd) {
      // A marker is read whole (it is tiny): its record says COMMIT or ABORT.
      chunkStart = position;
      chunkEnd = position + fs.readSync(fd, chunk, 0, Math.min(CHUNK_BYTES, sizeBytes), position);
      if (position + sizeBytes > chunkEnd) corrupt(position, "truncated control batch");
      continue;
    }
    const batch = producerBatchAt(chunkView, at, at + sizeBytes);
    if (batch.lastOffset >= fromOffset) {
      for (const txn of state.replay(batch)) {
        if (txn.isAborted) segment.txnIndex.appendIfMissing(txn);
      }
      replayed++;
    }
    position += sizeBytes;
  }
  return replayed;
}

/** Attributes int16 at byte 21 of a v2 batch header; bit 5 marks a control batch. */
const ATTRIBUTES_AT = 21;
const TRANSACTIONAL_BIT = 0x10;
const CONTROL_BIT = 0x20;

function isControlAt(view: DataView, at: number): boolean {
  return (view.getInt16(at + ATTRIBUTES_AT) & CONTROL_BIT) !== 0;
}

/**
 * The producer fields of the v2 batch at byte `at` (layout in record-batch.ts). A control
 * batch's record is read too, so `view` must hold the whole batch up to `end` for those.
 */
export function producerBatchAt(view: DataView, at: number, end: number): ProducerBatch {
  const firstOffset = view.getBigInt64(at);
  const offsetDelta = view.getInt32(at + 23);
  const attributes = view.getInt16(at + ATTRIBUTES_AT);
  const control = (attributes & CONTROL_BIT) !== 0 ? readControlRecord(view, at, end) : null;
  return {
    firstOffset,
    lastOffset: firstOffset + BigInt(offsetDelta),
    offsetDelta,
    maxTimestampMs: view.getBigInt64(at + 35),
    producerId: view.getBigInt64(at + 43),
    producerEpoch: view.getInt16(at + 51),
    baseSequence: view.getInt32(at + 53),
    isTransactional: (attributes & TRANSACTIONAL_BIT) !== 0,
    controlType: control?.type ?? null,
    coordinatorEpoch: control?.coordinatorEpoch ?? -1,
  };
}

function corrupt(position: number, reason: string): never {
  throw new KafkaError(
    ErrorCode.KAFKA_STORAGE_ERROR,
    `segment data changed on disk while rebuilding producer state: ${reason} at ${position}`,
  );
}
