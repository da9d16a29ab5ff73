/**
 * Snappy as Kafka clients put it in record batches. The Java client writes the xerial
 * snappy-java stream framing (SnappyOutputStream):
 *
 *   magic "\x82SNAPPY\0" (8 bytes), version int32 (1), compatible version int32 (1),
 *   then blocks of [compressed length int32 big-endian][raw snappy block], each block holding
 *   at most 32 KiB of input.
 *
 * librdkafka may send one raw snappy block with no framing instead; snappy-java's reader accepts
 * both, and so does `snappyDecompress`. Compression writes xerial, like the Java client.
 *
 * The npm `snappy` package (napi-rs) only does raw blocks, which is why the framing is here.
 */
import { CorruptRecordError } from "./record-errors.ts";

type Snappy = typeof import("snappy");
let snappy: Snappy | null = null;

/**
 * The addon, loaded at the first snappy batch: loading it maps its code, copies it out of the
 * compiled binary and starts its runtime, about 3 MB of a broker's memory that topics without
 * snappy never need. A static require, so the bundler embeds it in the compiled binary.
 */
function loadSnappy(): Snappy {
  snappy ??= require("snappy") as Snappy;
  return snappy;
}

const XERIAL_MAGIC = Uint8Array.of(0x82, 0x53, 0x4e, 0x41, 0x50, 0x50, 0x59, 0x00);
const XERIAL_HEADER_BYTES = 16;
const XERIAL_VERSION = 1;
const XERIAL_COMPATIBLE_VERSION = 1;
/** snappy-java's default block size, which Kafka's Java producer uses. */
const XERIAL_BLOCK_BYTES = 32 * 1024;
/** A raw block starts with its uncompressed length as an unsigned varint of at most 5 bytes. */
const PREAMBLE_MAX_BYTES = 5;

export function isXerialFramed(data: Uint8Array): boolean {
  if (data.length < XERIAL_HEADER_BYTES) return false;
  for (let i = 0; i < XERIAL_MAGIC.length; i++) if (data[i] !== XERIAL_MAGIC[i]) return false;
  return true;
}

/** Compresses `data` into xerial framing, 32 KiB of input per block. */
export function snappyCompressXerial(data: Uint8Array): Uint8Array {
  const blocks: Uint8Array[] = [];
  let totalBytes = XERIAL_HEADER_BYTES;
  for (let at = 0; at < data.length; at += XERIAL_BLOCK_BYTES) {
    const block = loadSnappy().compressSync(data.subarray(at, at + XERIAL_BLOCK_BYTES));
    blocks.push(block);
    totalBytes += 4 + block.length;
  }
  const out = new Uint8Array(totalBytes);
  const dv = new DataView(out.buffer);
  out.set(XERIAL_MAGIC, 0);
  dv.setInt32(8, XERIAL_VERSION);
  dv.setInt32(12, XERIAL_COMPATIBLE_VERSION);
  let pos = XERIAL_HEADER_BYTES;
  for (const block of blocks) {
    dv.setInt32(pos, block.length);
    out.set(block, pos + 4);
    pos += 4 + block.length;
  }
  return out;
}

/**
 * Decompresses xerial-framed or raw snappy. Every block's declared uncompressed length is read
 * first and the total checked against `maxOutputBytes`, so nothing larger is ever allocated.
 */
export function snappyDecompress(data: Uint8Array, maxOutputBytes: number): Uint8Array {
  if (!isXerialFramed(data)) return rawBlocksToBytes([data], maxOutputBytes);
  const dv = new DataView(data.buffer, data.byteOffset, data.byteLength);
  const blocks: Uint8Array[] = [];
  let pos = XERIAL_HEADER_BYTES;
  while (pos < data.length) {
    if (data.length - pos < 4) throw new CorruptRecordError("xerial snappy block length truncated");
    const blockBytes = dv.getInt32(pos);
    if (blockBytes < 0 || blockBytes > data.length - pos - 4) {
      throw new CorruptRecordError(`xerial snappy block of ${blockBytes} bytes at ${pos} invalid`);
    }
    blocks.push(data.subarray(pos + 4, pos + 4 + blockBytes));
    pos += 4 + blockBytes;
  }
  return rawBlocksToBytes(blocks, maxOutputBytes);
}

function rawBlocksToBytes(blocks: Uint8Array[], maxOutputBytes: number): Uint8Array {
  let totalBytes = 0;
  for (const block of blocks) {
    totalBytes += uncompressedLength(block);
    if (totalBytes > maxOutputBytes) {
      throw new CorruptRecordError(`snappy data expands past the ${maxOutputBytes}-byte limit`);
    }
  }
  // One block (librdkafka's raw form, or a small xerial stream) needs no concatenation copy.
  if (blocks.length === 1) return uncompressBlock(blocks[0]);
  const out = new Uint8Array(totalBytes);
  let pos = 0;
  for (const block of blocks) {
    const plain = uncompressBlock(block);
    if (plain.length > totalBytes - pos) {
      throw new CorruptRecordError("snappy block longer than its length preamble");
    }
    out.set(plain, pos);
    pos += plain.length;
  }
  return out;
}

/** The raw block's preamble: its uncompressed length, which the decoder enforces. */
function uncompressedLength(block: Uint8Array): number {
  let lengthBytes = 0;
  for (let i = 0; i < PREAMBLE_MAX_BYTES && i < block.length; i++) {
    lengthBytes += (block[i] & 0x7f) * 2 ** (7 * i);
    if ((block[i] & 0x80) === 0) return lengthBytes;
  }
  throw new CorruptRecordError("snappy block has no valid length preamble");
}

function uncompressBlock(block: Uint8Array): Uint8Array {
  // Loaded outside the try: an addon that fails to load is this broker's fault, not the batch's.
  const { uncompressSync } = loadSnappy();
  try {
    return uncompressSync(block, { asBuffer: true }) as Uint8Array;
  } catch (cause) {
    throw new CorruptRecordError("snappy block does not decompress", { cause });
  }
}
