/**
 * Record batch compression codecs, numbered as in the batch attributes' low three bits.
 *
 * - gzip: compression through Bun.gzipSync (zlib levels -1 and 1-9).
 * - zstd: compression through Bun.zstdCompressSync (levels 1-22), faster than node:zlib here
 *   (docs/bun.md); levels below 1, which Bun refuses and Kafka's compression.zstd.level allows
 *   (0: the default, negative: fast levels), go through node:zlib.
 * - gzip and zstd: decompression through node:zlib because only it can stop at an output limit
 *   (`maxOutputLength`), and it measured as fast as Bun.gunzipSync here.
 * - snappy: napi-rs `snappy` raw blocks, in xerial framing (snappy-xerial.ts).
 * - lz4: napi-rs `lz4-napi` in the LZ4 frame format, which is what Kafka's magic v1+ batches use.
 *   Every napi-rs addon here is embedded by `bun build --compile` (docs/bun.md, Compression
 *   codecs).
 *
 * `decompress` is fed client bytes: any failure becomes CorruptRecordError, and output larger
 * than `maxOutputBytes` is refused before it is allocated (no decompression bombs).
 */
import zlib from "node:zlib";
import { assert } from "../util/assert.ts";
import { lz4FrameOutputBound } from "./lz4-frame.ts";
import { CorruptRecordError } from "./record-errors.ts";
import { snappyCompressXerial, snappyDecompress } from "./snappy-xerial.ts";

export const CompressionType = { None: 0, Gzip: 1, Snappy: 2, Lz4: 3, Zstd: 4 } as const;
export type CompressionType = (typeof CompressionType)[keyof typeof CompressionType];

export function isCompressionType(type: number): type is CompressionType {
  return Number.isInteger(type) && type >= CompressionType.None && type <= CompressionType.Zstd;
}

/** zstd's own default level (ZSTD_CLEVEL_DEFAULT), Kafka's compression.zstd.level default. */
const ZSTD_DEFAULT_LEVEL = 3;

type Lz4 = typeof import("lz4-napi");
let lz4: Lz4 | null = null;

/** Loaded at the first lz4 batch, as snappy (snappy-xerial.ts): most brokers never need it. */
function loadLz4(): Lz4 {
  lz4 ??= require("lz4-napi") as Lz4;
  return lz4;
}

/**
 * Compresses `data` the way Kafka's producers do for `type`. None returns `data` itself.
 * `level` is the gzip level (-1: zlib's default) or the zstd level; snappy has none, and
 * lz4-napi's frame encoder takes none, so lz4 always compresses at its one level.
 */
export function compress(type: CompressionType, data: Uint8Array, level?: number): Uint8Array {
  switch (type) {
    case CompressionType.None:
      return data;
    case CompressionType.Gzip:
      return Bun.gzipSync(data as Uint8Array<ArrayBuffer>, { level: gzipLevel(level) });
    case CompressionType.Snappy:
      return snappyCompressXerial(data);
    case CompressionType.Lz4:
      return loadLz4().compressFrameSync(asBuffer(data));
    case CompressionType.Zstd:
      return zstdCompress(data, level ?? ZSTD_DEFAULT_LEVEL);
  }
}

function zstdCompress(data: Uint8Array, level: number): Uint8Array {
  if (level >= 1) return Bun.zstdCompressSync(data, { level });
  return zlib.zstdCompressSync(data, {
    params: { [zlib.constants.ZSTD_c_compressionLevel]: level },
  });
}

type GzipLevel = -1 | 1 | 2 | 3 | 4 | 5 | 6 | 7 | 8 | 9;

function gzipLevel(level: number | undefined): GzipLevel {
  if (level === undefined) return -1;
  assert(level === -1 || (Number.isInteger(level) && level >= 1 && level <= 9), "gzip level");
  return level as GzipLevel;
}

/**
 * Decompresses `data` compressed with `type`. Throws CorruptRecordError if `type` is unknown,
 * the data is malformed, or the output would exceed `maxOutputBytes`.
 */
export function decompress(type: number, data: Uint8Array, maxOutputBytes: number): Uint8Array {
  if (!isCompressionType(type)) throw new CorruptRecordError(`unknown compression type ${type}`);
  switch (type) {
    case CompressionType.None:
      if (data.length > maxOutputBytes) throw tooLarge("uncompressed", maxOutputBytes);
      return data;
    case CompressionType.Gzip:
      return viaZlib("gzip", maxOutputBytes, () =>
        zlib.gunzipSync(data, { maxOutputLength: zlibOutputLimit(maxOutputBytes) }),
      );
    case CompressionType.Snappy:
      return snappyDecompress(data, maxOutputBytes);
    case CompressionType.Lz4:
      return lz4Decompress(data, maxOutputBytes);
    case CompressionType.Zstd:
      return viaZlib("zstd", maxOutputBytes, () =>
        zlib.zstdDecompressSync(data, { maxOutputLength: zlibOutputLimit(maxOutputBytes) }),
      );
  }
}

/** node:zlib accepts limits of 1 byte to 4 GiB only; the exact limit is checked afterwards. */
const ZLIB_OUTPUT_LIMIT_MAX = 2 ** 32;

function zlibOutputLimit(maxOutputBytes: number): number {
  return Math.min(Math.max(maxOutputBytes, 1), ZLIB_OUTPUT_LIMIT_MAX);
}

function viaZlib(name: string, maxOutputBytes: number, run: () => Uint8Array): Uint8Array {
  let output: Uint8Array;
  try {
    output = run();
  } catch (cause) {
    if ((cause as { code?: string }).code === "ERR_BUFFER_TOO_LARGE") {
      throw tooLarge(name, maxOutputBytes, cause);
    }
    throw new CorruptRecordError(`${name} data does not decompress`, { cause });
  }
  if (output.length > maxOutputBytes) throw tooLarge(name, maxOutputBytes);
  return output;
}

function lz4Decompress(data: Uint8Array, maxOutputBytes: number): Uint8Array {
  // lz4-napi has no output limit, so the frame's blocks are walked first to bound the output.
  // The bound counts a partly filled block as full, so up to one block of slack is allowed and
  // the exact size is checked afterwards: at most 4 MiB more than the limit is ever allocated.
  const { boundBytes, maxBlockBytes } = lz4FrameOutputBound(data);
  if (boundBytes > maxOutputBytes + maxBlockBytes) throw tooLarge("lz4", maxOutputBytes);
  // Loaded outside the try: an addon that fails to load is this broker's fault, not the batch's.
  const { decompressFrameSync } = loadLz4();
  let output: Uint8Array;
  try {
    output = decompressFrameSync(asBuffer(data));
  } catch (cause) {
    throw new CorruptRecordError("lz4 frame does not decompress", { cause });
  }
  if (output.length > maxOutputBytes) throw tooLarge("lz4", maxOutputBytes);
  return output;
}

function tooLarge(name: string, maxOutputBytes: number, cause?: unknown): CorruptRecordError {
  return new CorruptRecordError(`${name} data expands past the ${maxOutputBytes}-byte limit`, {
    cause,
  });
}

/** lz4-napi's sync functions are typed for Buffer; a Buffer view shares the same memory. */
function asBuffer(data: Uint8Array): Buffer {
  return Buffer.isBuffer(data) ? data : Buffer.from(data.buffer, data.byteOffset, data.byteLength);
}
