/**
 * Structure checks for the LZ4 frame format (lz4 Frame_format.md v1.6), used to bound how large
 * a frame can decompress before handing it to lz4-napi, which has no output limit:
 *
 *   magic 0x184D2204 (LE), FLG, BD, [content size u64], [dictionary id u32], header checksum,
 *   blocks of [size u32 LE, high bit = stored uncompressed][data][block checksum u32]?,
 *   end mark 0 (u32), [content checksum u32].
 */
import { CorruptRecordError } from "./record-errors.ts";

const FRAME_MAGIC = 0x184d2204;
const FLG_VERSION_MASK = 0xc0;
const FLG_VERSION_01 = 0x40;
const FLG_BLOCK_CHECKSUM = 0x10;
const FLG_CONTENT_SIZE = 0x08;
const FLG_CONTENT_CHECKSUM = 0x04;
const FLG_DICTIONARY_ID = 0x01;
const BLOCK_UNCOMPRESSED_BIT = 0x80000000;
/**
 * LZ4 cannot expand input more than 255 times: the longest match costs one extra length byte
 * per 255 bytes it produces. The constant covers the short sequences at the end of a block.
 */
const LZ4_MAX_RATIO = 255;
const LZ4_BLOCK_SLACK_BYTES = 64;

/** Block maximum sizes by the BD byte's bits 4-6 (values 4..7). */
function blockMaxBytes(bd: number): number {
  const code = (bd >> 4) & 0x07;
  if (code < 4 || (bd & 0x8f) !== 0) {
    throw new CorruptRecordError(`lz4 frame BD byte ${bd} invalid`);
  }
  return 1 << (8 + 2 * code);
}

/**
 * Walks one LZ4 frame and returns an upper bound of its decompressed size (the sum over blocks
 * of min(block maximum, 255 × compressed size)) and the frame's block maximum. Throws
 * CorruptRecordError on a malformed header, a block running past the data, or bytes after the
 * frame.
 */
export function lz4FrameOutputBound(data: Uint8Array): {
  boundBytes: number;
  maxBlockBytes: number;
} {
  const dv = new DataView(data.buffer, data.byteOffset, data.byteLength);
  if (data.length < 7 || dv.getUint32(0, true) !== FRAME_MAGIC) {
    throw new CorruptRecordError("lz4 data is not an LZ4 frame");
  }
  const flg = data[4];
  if ((flg & FLG_VERSION_MASK) !== FLG_VERSION_01) {
    throw new CorruptRecordError(`lz4 frame version bits ${flg >> 6} unsupported`);
  }
  const maxBlockBytes = blockMaxBytes(data[5]);
  const blockChecksumBytes = flg & FLG_BLOCK_CHECKSUM ? 4 : 0;
  let pos = 6 + (flg & FLG_CONTENT_SIZE ? 8 : 0) + (flg & FLG_DICTIONARY_ID ? 4 : 0) + 1;
  let boundBytes = 0;
  for (;;) {
    if (data.length - pos < 4) throw new CorruptRecordError("lz4 frame truncated at a block");
    const word = dv.getUint32(pos, true);
    pos += 4;
    if (word === 0) break;
    const storedBytes = word & ~BLOCK_UNCOMPRESSED_BIT;
    if (storedBytes > maxBlockBytes || storedBytes > data.length - pos - blockChecksumBytes) {
      throw new CorruptRecordError(`lz4 block of ${storedBytes} bytes at ${pos - 4} invalid`);
    }
    const uncompressed = (word & BLOCK_UNCOMPRESSED_BIT) !== 0;
    boundBytes += uncompressed
      ? storedBytes
      : Math.min(maxBlockBytes, storedBytes * LZ4_MAX_RATIO + LZ4_BLOCK_SLACK_BYTES);
    pos += storedBytes + blockChecksumBytes;
  }
  pos += flg & FLG_CONTENT_CHECKSUM ? 4 : 0;
  if (pos !== data.length) {
    throw new CorruptRecordError(`lz4 frame ends at ${pos} but data has ${data.length} bytes`);
  }
  return { boundBytes, maxBlockBytes };
}
