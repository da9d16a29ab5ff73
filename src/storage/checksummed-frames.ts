import { crc32c } from "../protocol/crc32c.ts";
import { assert } from "../util/assert.ts";

/**
 * The frames of Quill's own small logs (the embedded offset store's `commits.log` and snapshot,
 * the share-group state log):
 *
 *   payloadLength uint32 BE | crc32c(payload) uint32 BE | payload (never empty)
 *
 * A frame is written whole by one write, so after a crash only the log's tail can be torn:
 * short, failing its CRC, or zeros (a crash that stored the file's new size but not its data).
 * Zeros would pass as a frame (length 0, and the CRC of nothing is 0), so an empty payload is
 * never written and ends the valid prefix when read.
 */
const FRAME_HEADER_BYTES = 8;

/** `payload` framed. */
export function encodeFrame(payload: Uint8Array): Uint8Array {
  assert(payload.length > 0, "a frame's payload is never empty");
  const frame = new Uint8Array(FRAME_HEADER_BYTES + payload.length);
  const view = new DataView(frame.buffer);
  view.setUint32(0, payload.length);
  view.setUint32(4, crc32c(payload));
  frame.set(payload, FRAME_HEADER_BYTES);
  return frame;
}

/**
 * Hands each frame's payload (a view into `bytes`) and its position to `onPayload`, from the
 * start until the end or the first frame that is torn: incomplete, empty, longer than
 * `payloadBytesMax` (a corrupt length), or failing its CRC. Returns where the valid prefix ends.
 */
export function readFrames(
  bytes: Uint8Array,
  payloadBytesMax: number,
  onPayload: (payload: Uint8Array, position: number) => void,
): number {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let position = 0;
  while (bytes.length - position >= FRAME_HEADER_BYTES) {
    const payloadBytes = view.getUint32(position);
    if (payloadBytes === 0 || payloadBytes > payloadBytesMax) break;
    const end = position + FRAME_HEADER_BYTES + payloadBytes;
    if (end > bytes.length) break;
    const payload = bytes.subarray(position + FRAME_HEADER_BYTES, end);
    if (crc32c(payload) !== view.getUint32(position + 4)) break;
    onPayload(payload, position);
    position = end;
  }
  return position;
}

/** The chunks in one array (the chunk itself when there is one), for a single write. */
export function concatFrames(chunks: readonly Uint8Array[]): Uint8Array {
  if (chunks.length === 1) return chunks[0]!;
  let total = 0;
  for (const c of chunks) total += c.length;
  const out = new Uint8Array(total);
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.length;
  }
  return out;
}
