/**
 * The cleaner's key -> latest offset map (Kafka's SkimpyOffsetMap): an open-addressing hash
 * table in one fixed buffer of `log.cleaner.dedupe.buffer.size` bytes, so its memory is bounded
 * whatever the keys are. Keys are not stored, only a 96-bit hash of them (two xxHash32 with
 * different seeds and a murmur3-32), 12 bytes, the offset as a float64 (exact below 2^53) and a
 * 4-byte generation: 24 bytes per slot, as Kafka's MD5 entries. Two keys with the same 96-bit
 * hash would be taken for one; at 10^8 keys that happens with probability about 10^-13.
 *
 * A slot is in use when its generation is the map's current one, so clear() is a counter bump:
 * wiping a 128 MiB table before every cleaning would stall the event loop for tens of ms. The
 * arrays are zero-filled by allocation (generation 0 is never current).
 *
 * The map accepts entries until `slots * loadFactor` (log.cleaner.io.buffer.load.factor) are
 * used; the cleaner then stops reading the dirty log there and cleans in several passes.
 */
import { assert } from "../util/assert.ts";

export const OFFSET_MAP_SLOT_BYTES = 24;
const SEED_A = 0;
const SEED_B = 0x9e3779b9;

export class OffsetMap {
  readonly slots: number;
  /** Entries the map accepts before it counts as full. */
  readonly maxEntries: number;
  private readonly hashes: Uint32Array;
  private readonly offsets: Float64Array;
  private readonly generations: Uint32Array;
  private generation = 1;
  private entries = 0;
  /** The last offset of the last batch wholly read into the map; -1 when none. */
  latestOffset = -1;

  constructor(bufferBytes: number, loadFactor: number) {
    assert(loadFactor > 0 && loadFactor <= 1, `offset map load factor ${loadFactor}`);
    this.slots = Math.floor(bufferBytes / OFFSET_MAP_SLOT_BYTES);
    assert(this.slots >= 2, `dedupe buffer of ${bufferBytes} bytes holds no entry`);
    // One slot always stays empty so a probe for a missing key ends.
    this.maxEntries = Math.min(this.slots - 1, Math.floor(this.slots * loadFactor));
    this.hashes = new Uint32Array(this.slots * 3);
    this.offsets = new Float64Array(this.slots);
    this.generations = new Uint32Array(this.slots);
  }

  get size(): number {
    return this.entries;
  }

  get isFull(): boolean {
    return this.entries >= this.maxEntries;
  }

  clear(): void {
    this.generation++;
    if (this.generation === 0xffffffff) {
      // Four billion cleanings later: start the generations over.
      this.generations.fill(0);
      this.generation = 1;
    }
    this.entries = 0;
    this.latestOffset = -1;
  }

  /** Records `offset` as the latest for `key`. The caller checks isFull first. */
  put(key: Uint8Array, offset: number): void {
    const slot = this.find(key);
    if (this.generations[slot] !== this.generation) {
      if (this.isFull) assert(false, "put into a full offset map");
      this.generations[slot] = this.generation;
      this.entries++;
    }
    this.offsets[slot] = offset;
  }

  /** The latest offset recorded for `key`, or -1. */
  get(key: Uint8Array): number {
    const slot = this.find(key);
    return this.generations[slot] === this.generation ? this.offsets[slot] : -1;
  }

  /**
   * The slot holding `key`'s hash, or the empty slot where it would go (linear probing; the
   * load factor keeps an empty slot in every probe sequence).
   */
  private find(key: Uint8Array): number {
    const a = Bun.hash.xxHash32(key, SEED_A);
    const b = Bun.hash.xxHash32(key, SEED_B);
    const c = Bun.hash.murmur32v3(key, SEED_A);
    const hashes = this.hashes;
    let slot = (a ^ Math.imul(b, 0x85ebca6b)) >>> 0;
    slot %= this.slots;
    // At most `slots` probes: the table always has an empty slot (entries < slots).
    for (let probes = 0; probes < this.slots; probes++) {
      if (this.generations[slot] !== this.generation) {
        hashes[slot * 3] = a;
        hashes[slot * 3 + 1] = b;
        hashes[slot * 3 + 2] = c;
        return slot;
      }
      const at = slot * 3;
      if (hashes[at] === a && hashes[at + 1] === b && hashes[at + 2] === c) return slot;
      slot = slot + 1 === this.slots ? 0 : slot + 1;
    }
    assert(false, "offset map has no empty slot");
  }
}
