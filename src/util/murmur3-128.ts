/**
 * MurmurHash3_x86_128 (Austin Appleby's public-domain SMHasher reference) over a range of a
 * byte array, in plain TypeScript: the log cleaner's offset map hashes every key of a cleaning
 * twice (map build and filtering), and one pass of this over the record's bytes in place cost
 * about a third of three native Bun.hash calls on a subarray made per key
 * (docs/log-compaction.md has the figures). Checked against SMHasher's verification value in
 * test/util/murmur3-128.test.ts.
 *
 * The four 32-bit words of the hash are left in `murmur3Words` (unsigned), so a call allocates
 * nothing; read them before the next call.
 */
const C1 = 0x239b961b;
const C2 = 0xab0e9789;
const C3 = 0x38b34ae5;
const C4 = 0xa1e38b93;

export const murmur3Words = new Uint32Array(4);

function rotl(x: number, r: number): number {
  return (x << r) | (x >>> (32 - r));
}

function fmix(h: number): number {
  let x = h ^ (h >>> 16);
  x = Math.imul(x, 0x85ebca6b);
  x ^= x >>> 13;
  x = Math.imul(x, 0xc2b2ae35);
  return x ^ (x >>> 16);
}

function word(d: Uint8Array, i: number): number {
  return d[i] | (d[i + 1] << 8) | (d[i + 2] << 16) | (d[i + 3] << 24);
}

function mix1(k: number): number {
  return Math.imul(rotl(Math.imul(k, C1), 15), C2);
}
function mix2(k: number): number {
  return Math.imul(rotl(Math.imul(k, C2), 16), C3);
}
function mix3(k: number): number {
  return Math.imul(rotl(Math.imul(k, C3), 17), C4);
}
function mix4(k: number): number {
  return Math.imul(rotl(Math.imul(k, C4), 18), C1);
}

/** The little-endian value of the `n` (0-4) bytes at `i`. */
function tailWord(d: Uint8Array, i: number, n: number): number {
  let k = 0;
  for (let j = n - 1; j >= 0; j--) k = (k << 8) | d[i + j];
  return k;
}

/** Hashes `d[start, start + length)` with `seed`; the result is in `murmur3Words`. */
export function murmur3x86128(d: Uint8Array, start: number, length: number, seed: number): void {
  let h1 = seed | 0;
  let h2 = h1;
  let h3 = h1;
  let h4 = h1;
  const blocksEnd = start + (length & ~15);
  let i = start;
  for (; i < blocksEnd; i += 16) {
    h1 ^= mix1(word(d, i));
    h1 = (Math.imul((rotl(h1, 19) + h2) | 0, 5) + 0x561ccd1b) | 0;
    h2 ^= mix2(word(d, i + 4));
    h2 = (Math.imul((rotl(h2, 17) + h3) | 0, 5) + 0x0bcaa747) | 0;
    h3 ^= mix3(word(d, i + 8));
    h3 = (Math.imul((rotl(h3, 15) + h4) | 0, 5) + 0x96cd1c35) | 0;
    h4 ^= mix4(word(d, i + 12));
    h4 = (Math.imul((rotl(h4, 13) + h1) | 0, 5) + 0x32ac3b17) | 0;
  }
  const tail = length & 15;
  if (tail > 12) h4 ^= mix4(tailWord(d, i + 12, tail - 12));
  if (tail > 8) h3 ^= mix3(tailWord(d, i + 8, Math.min(4, tail - 8)));
  if (tail > 4) h2 ^= mix2(tailWord(d, i + 4, Math.min(4, tail - 4)));
  if (tail > 0) h1 ^= mix1(tailWord(d, i, Math.min(4, tail)));
  h1 ^= length;
  h2 ^= length;
  h3 ^= length;
  h4 ^= length;
  h1 = (h1 + h2 + h3 + h4) | 0;
  h2 = (h2 + h1) | 0;
  h3 = (h3 + h1) | 0;
  h4 = (h4 + h1) | 0;
  h1 = fmix(h1);
  h2 = fmix(h2);
  h3 = fmix(h3);
  h4 = fmix(h4);
  h1 = (h1 + h2 + h3 + h4) | 0;
  murmur3Words[0] = h1;
  murmur3Words[1] = h2 + h1;
  murmur3Words[2] = h3 + h1;
  murmur3Words[3] = h4 + h1;
}
