/**
 * Record batch compression codecs, numbered as in the batch attributes' low three bits.
 *
 * - gzip and zstd: compression through Bun's built-in zlib and zstd; decompression through
 *   node:zlib because only it can stop at an output limit (`maxOutputLength`), and it measured
 *   as fast as Bun.gunzipSync here.
 * - snappy: napi-rs `snappy` raw blocks, in xerial framing (snappy-xerial.ts).
 * - lz4: napi-rs `lz4-napi` in the LZ4 frame format, which is what Kafka's magic v1+ batches use.
 *   Every napi-rs addon here is embedded by `bun build --compile` (../shared/notes §5).
 *
 * `decompress` is fed client bytes: any failure becomes CorruptRecordError, and output larger
 * than `maxOutputBytes` is refused before it is allocated (no decompression bombs).
 */
import zlib from "node:zlib";
import { compressFrameSync, decompressFrameSync } from "lz4-napi";
import { CorruptRecordError } from "./corrupt-record-error.ts";
import { lz4FrameOutputBoundBytes } from "./lz4-frame.ts";
import { snappyCompressXerial, snappyDecompress } from "./snappy-xerial.ts";

export const CompressionType = { None: 0, Gzip: 1, Snappy: 2, Lz4: 3, Zstd: 4 } as const;
export type CompressionType = (typeof CompressionType)[keyof typeof CompressionType];

export const COMPRESSION_TYPE_NAMES: Readonly<{ [type: number]: string }> = {
  0: "none",
  1: "gzip",
  2: "snappy",
  3: "lz4",
  4: "zstd",
};

export function isCompressionType(type: number): type is CompressionType {
  return Number.isInteger(type) && type >= CompressionType.None && type <= CompressionType.Zstd;
}

/** Compresses `data` the way Kafka's producers do for `type`. None returns `data` itself. */
export function compress(type: CompressionType, data: Uint8Array): Uint8Array {
  switch (type) {
    case CompressionType.None:
      return data;
    case CompressionType.Gzip:
      return Bun.gzipSync(data as Uint8Array<ArrayBuffer>);
    case CompressionType.Snappy:
      return snappyCompressXerial(data);
    case CompressionType.Lz4:
      return compressFrameSync(asBuffer(data));
    case CompressionType.Zstd:
      return Bun.zstdCompressSync(data as Uint8Array<ArrayBuffer>);
  }
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
        zlib.gunzipSync(data, { maxOutputLength: maxOutputBytes }),
      );
    case CompressionType.Snappy:
      return snappyDecompress(data, maxOutputBytes);
    case CompressionType.Lz4:
      return lz4Decompress(data, maxOutputBytes);
    case CompressionType.Zstd:
      return viaZlib("zstd", maxOutputBytes, () =>
        zlib.zstdDecompressSync(data, { maxOutputLength: maxOutputBytes }),
      );
  }
}

function viaZlib(name: string, maxOutputBytes: number, run: () => Uint8Array): Uint8Array {
  try {
    return run();
  } catch (cause) {
    if ((cause as { code?: string }).code === "ERR_BUFFER_TOO_LARGE") {
      throw tooLarge(name, maxOutputBytes, cause);
    }
    throw new CorruptRecordError(`${name} data does not decompress`, { cause });
  }
}

function lz4Decompress(data: Uint8Array, maxOutputBytes: number): Uint8Array {
  // lz4-napi has no output limit, so the frame's blocks are walked first to bound the output.
  if (lz4FrameOutputBoundBytes(data) > maxOutputBytes) throw tooLarge("lz4", maxOutputBytes);
  try {
    return decompressFrameSync(asBuffer(data));
  } catch (cause) {
    throw new CorruptRecordError("lz4 frame does not decompress", { cause });
  }
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
