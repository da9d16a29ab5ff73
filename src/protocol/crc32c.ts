/**
 * CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), the checksum of magic v2 record batches.
 *
 * Bun has no built-in CRC-32C. Large inputs go to the SSE4.2 code of `@node-rs/crc32`; small
 * ones, and everything when that addon is missing, to a pure TypeScript slicing-by-8 that runs at
 * about 1.3-1.8 GB/s with no native code (docs/bun.md, CRC-32C).
 */

const POLYNOMIAL_REFLECTED = 0x82f63b78;

/**
 * The SSE4.2 CRC-32C of `@node-rs/crc32` (napi-rs, embedded by `bun build --compile`) runs at
 * about 6 GB/s from 16 KiB here against 1.8 GB/s for the table code below, but its call overhead
 * makes it slower under about 1 KiB (measured: 1.2 vs 1.6 GB/s at 256 B, 3.0 vs 1.8 at 1 KiB).
 * Append verifies every batch's CRC, so this decides how close appends get to raw write speed.
 * If the addon cannot load (an unsupported platform), the table code does everything.
 */
const NATIVE_MIN_BYTES = 1024;
const NATIVE = loadNativeCrc32c();

function loadNativeCrc32c(): ((input: Buffer, initial?: number) => number) | null {
  try {
    // A static require, so the bundler embeds the addon in the compiled binary.
    return (require("@node-rs/crc32") as typeof import("@node-rs/crc32")).crc32c;
  } catch {
    return null;
  }
}
const TABLE_SIZE = 256;
const SLICES = 8;

/** T[k][b]: the CRC of byte b followed by k zero bytes, stored flat as T[k * 256 + b]. */
const TABLES = buildTables();
const T0 = TABLES.subarray(0 * TABLE_SIZE, 1 * TABLE_SIZE);
const T1 = TABLES.subarray(1 * TABLE_SIZE, 2 * TABLE_SIZE);
const T2 = TABLES.subarray(2 * TABLE_SIZE, 3 * TABLE_SIZE);
const T3 = TABLES.subarray(3 * TABLE_SIZE, 4 * TABLE_SIZE);
const T4 = TABLES.subarray(4 * TABLE_SIZE, 5 * TABLE_SIZE);
const T5 = TABLES.subarray(5 * TABLE_SIZE, 6 * TABLE_SIZE);
const T6 = TABLES.subarray(6 * TABLE_SIZE, 7 * TABLE_SIZE);
const T7 = TABLES.subarray(7 * TABLE_SIZE, 8 * TABLE_SIZE);

function buildTables(): Int32Array {
  const tables = new Int32Array(TABLE_SIZE * SLICES);
  for (let b = 0; b < TABLE_SIZE; b++) {
    let crc = b;
    for (let bit = 0; bit < 8; bit++) {
      crc = crc & 1 ? (crc >>> 1) ^ POLYNOMIAL_REFLECTED : crc >>> 1;
    }
    tables[b] = crc;
  }
  for (let b = 0; b < TABLE_SIZE; b++) {
    let crc = tables[b];
    for (let k = 1; k < SLICES; k++) {
      crc = tables[crc & 0xff] ^ (crc >>> 8);
      tables[k * TABLE_SIZE + b] = crc;
    }
  }
  return tables;
}

/**
 * Returns the unsigned CRC-32C of `data`. Pass the result of a previous call as `crc` to
 * continue a checksum over data split into several pieces.
 *
 * @example crc32c(new TextEncoder().encode("123456789")) === 0xe3069283
 */
export function crc32c(data: Uint8Array, crc = 0): number {
  return crc32cRange(data, 0, data.length, crc);
}

/** Like `crc32c`, over `data[start, end)`, without creating a subarray. */
export function crc32cRange(data: Uint8Array, start: number, end: number, crc = 0): number {
  if (start < 0 || end > data.length || start > end) {
    throw new RangeError(`crc32c range [${start}, ${end}) outside 0..${data.length}`);
  }
  if (NATIVE !== null && end - start >= NATIVE_MIN_BYTES) {
    // A Buffer view over the same memory: no copy, one small wrapper object per call.
    return NATIVE(Buffer.from(data.buffer, data.byteOffset + start, end - start), crc) >>> 0;
  }
  return tableCrc32cRange(data, start, end, crc);
}

/** The pure TypeScript path, exported so tests can hold the native path to it. */
export function tableCrc32cRange(data: Uint8Array, start: number, end: number, crc = 0): number {
  let c = ~crc;
  let i = start;
  const end8 = start + ((end - start) & ~7);
  // The hot loop reads bytes one at a time: Int32Array loads would need aligned offsets
  // and measured no faster below 16 KiB (docs/bun.md, CRC-32C).
  for (; i < end8; i += 8) {
    const a = (data[i] | (data[i + 1] << 8) | (data[i + 2] << 16) | (data[i + 3] << 24)) ^ c;
    c =
      T7[a & 0xff] ^
      T6[(a >>> 8) & 0xff] ^
      T5[(a >>> 16) & 0xff] ^
      T4[a >>> 24] ^
      T3[data[i + 4]] ^
      T2[data[i + 5]] ^
      T1[data[i + 6]] ^
      T0[data[i + 7]];
  }
  for (; i < end; i++) c = T0[(c ^ data[i]) & 0xff] ^ (c >>> 8);
  return ~c >>> 0;
}
