/**
 * Shared types for the `records` fields of Kafka messages. A records field is opaque to the
 * protocol layer: on decode it is a view of the request bytes, on encode it may also be a range
 * of a segment file that the network layer sends with sendfile without copying it through JS.
 */

/** A byte range of a segment file, sent with sendfile without passing through JS. */
export interface FileRange {
  readonly fd: number;
  readonly position: number;
  readonly sizeBytes: number;
  /**
   * Called exactly once by whoever consumes the range (after it is sent, or when the connection
   * dies). Storage must not close the fd while ranges are unreleased.
   */
  release(): void;
}

export type Records = Uint8Array | FileRange | readonly (Uint8Array | FileRange)[];

/** One piece of an encoded message: bytes in memory or a range of a file. */
export type RecordsChunk = Uint8Array | FileRange;

export const isFileRange = (c: RecordsChunk): c is FileRange => !(c instanceof Uint8Array);
