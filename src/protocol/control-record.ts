/**
 * Control batches (KIP-98): batches with the control bit set whose single record is a marker,
 * never handed to applications. The only kind Quill writes is the end-transaction marker
 * (COMMIT or ABORT) that WriteTxnMarkers appends to every partition of a finished transaction.
 *
 *   key   (ControlRecordType):     version int16 (0) | type int16 (0 ABORT, 1 COMMIT)
 *   value (EndTransactionMarker):  version int16 (0) | coordinatorEpoch int32
 *
 * The batch is transactional and control, carries the producer id and epoch of the
 * transaction, sequence -1, and is never compressed.
 */
import { buildRecordBatch, RECORD_BATCH_OVERHEAD } from "./record-batch.ts";
import { VarintReader } from "./varint.ts";

export const ControlRecordType = { ABORT: 0, COMMIT: 1 } as const;
export type ControlRecordType = (typeof ControlRecordType)[keyof typeof ControlRecordType];
/** A control record type Quill does not know (Kafka's UNKNOWN); such batches are skipped. */
export const UNKNOWN_CONTROL_TYPE = -1;

const CONTROL_KEY_BYTES = 4;
const MARKER_VALUE_BYTES = 6;

export interface EndTxnMarker {
  readonly producerId: bigint;
  readonly producerEpoch: number;
  readonly coordinatorEpoch: number;
  readonly commit: boolean;
}

/** One end-transaction marker batch at offset 0 (the log assigns the real offset). */
export function buildEndTxnMarkerBatch(marker: EndTxnMarker, timestampMs: number): Uint8Array {
  const key = new Uint8Array(CONTROL_KEY_BYTES);
  const keyView = new DataView(key.buffer);
  keyView.setInt16(0, 0);
  keyView.setInt16(2, marker.commit ? ControlRecordType.COMMIT : ControlRecordType.ABORT);
  const value = new Uint8Array(MARKER_VALUE_BYTES);
  const valueView = new DataView(value.buffer);
  valueView.setInt16(0, 0);
  valueView.setInt32(2, marker.coordinatorEpoch);
  return buildRecordBatch([{ key, value, timestampMs }], {
    producerId: marker.producerId,
    producerEpoch: marker.producerEpoch,
    baseSequence: -1,
    isTransactional: true,
    isControl: true,
    timestampMs,
  });
}

/** What the first record of the uncompressed control batch at `at` of `view` says. */
export interface ControlRecord {
  readonly type: number;
  /** The marker's coordinator epoch; -1 when the record is not an end-transaction marker. */
  readonly coordinatorEpoch: number;
}

/**
 * Reads the control record of the batch at byte `at` (whose bytes up to `end` must be in
 * `view`). Returns UNKNOWN_CONTROL_TYPE for anything it cannot parse, so a future control
 * type is skipped rather than taken for a marker.
 */
export function readControlRecord(view: DataView, at: number, end: number): ControlRecord {
  const bytes = new Uint8Array(view.buffer, view.byteOffset + at, end - at);
  const unknown = { type: UNKNOWN_CONTROL_TYPE, coordinatorEpoch: -1 };
  try {
    const r = new VarintReader(bytes, RECORD_BATCH_OVERHEAD, bytes.length);
    r.varint(); // record length
    r.pos += 1; // attributes
    r.varlong(); // timestamp delta
    r.varint(); // offset delta
    const keyLength = r.varint();
    if (keyLength < CONTROL_KEY_BYTES || r.pos + keyLength > bytes.length) return unknown;
    const keyAt = r.pos;
    const dv = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    const type = dv.getInt16(keyAt + 2);
    if (type !== ControlRecordType.ABORT && type !== ControlRecordType.COMMIT) return unknown;
    r.pos = keyAt + keyLength;
    const valueLength = r.varint();
    if (valueLength < MARKER_VALUE_BYTES || r.pos + valueLength > bytes.length) {
      return { type, coordinatorEpoch: -1 };
    }
    return { type, coordinatorEpoch: dv.getInt32(r.pos + 2) };
  } catch {
    return unknown;
  }
}
