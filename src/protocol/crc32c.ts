/**
 * CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), the checksum of magic v2 record batches.
 *
 * Pure TypeScript slicing-by-8: Bun has no built-in CRC-32C, and this runs at about 1.3 GB/s
 * with no native code, so it works unchanged inside the `bun build --compile` binary
 * (../shared/notes/bun-1.4.4.md §1). It is also the fastest option for small inputs.
 */

const POLYNOMIAL_REFLECTED = 0x82f63b78;
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
  let c = ~crc;
  let i = start;
  const end8 = start + ((end - start) & ~7);
  // The hot loop reads bytes one at a time: Int32Array loads would need aligned offsets
  // and measured no faster below 16 KiB (../shared/notes/bun-1.4.4.md §1).
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
