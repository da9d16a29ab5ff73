/**
 * The cleaner's key -> latest offset map (Kafka's SkimpyOffsetMap): an open-addressing hash
 * table in one fixed buffer of `log.cleaner.dedupe.buffer.size` bytes, so its memory is bounded
 * whatever the keys are. Keys are not stored, only a 96-bit hash of them (three of the four
 * words of MurmurHash3_x86_128, util/murmur3-128.ts, taken from the record's bytes in place), 12
 * bytes, the offset as a float64 (exact below 2^53) and a 4-byte generation: 24 bytes per slot,
 * as Kafka's MD5 entries. Two keys with the same 96-bit hash would be taken for one; at 10^8
 * keys that happens with probability about 10^-13.
 *
 * A slot is in use when its generation is the map's current one, so clear() is a counter bump:
 * wiping a 128 MiB table before every cleaning would stall the event loop for tens of ms. The
 * buffer is zero-filled by allocation (generation 0 is never current).
 *
 * The map accepts entries until `slots * loadFactor` (log.cleaner.io.buffer.load.factor) are
 * used; the cleaner then stops reading the dirty log there and cleans in several passes.
 */
import { assert } from "../util/assert.ts";
import { murmur3Words, murmur3x86128 } from "../util/murmur3-128.ts";

export const OFFSET_MAP_SLOT_BYTES = 24;
const SLOT_WORDS = OFFSET_MAP_SLOT_BYTES / 4;
const SEED = 0;
/**
 * A cleaning starts hashing into this many slots (384 KiB) and grows the table 4x each time half
 * of them are used, up to what its dirty section can need: 100,000 distinct keys among 1 million
 * offsets then probe a 3 MB table instead of a 27 MB one, and put+get of a 1 GB log's records
 * took 460-550 ms of CPU instead of 600-830 (load average 14).
 */
const FIRST_SLOTS = 1 << 14;
const GROWTH = 4;
const GROW_AT_LOAD = 0.5;

export class OffsetMap {
  readonly slots: number;
  /** Entries the map accepts before it counts as full (in the slots in use). */
  maxEntries: number;
  /** Slots this cleaning may use: all, or fewer when it can hold fewer keys (clear). */
  private capacitySlots: number;
  /** Slots hashed into now: grows toward capacitySlots as keys come (grow). */
  private slotsInUse: number;
  /** Entries at which the table grows. */
  private growAt = Infinity;
  private readonly loadFactor: number;
  /**
   * Slot i is words[6i] (generation), words[6i+1..6i+3] (the hash) and offsets[3i+2] (the same
   * buffer's last 8 bytes of the slot): one slot is one memory access. Three separate arrays
   * cost three cache misses per lookup, 39% of a cleaning's CPU time in a profile.
   */
  private readonly words: Uint32Array;
  private readonly offsets: Float64Array;
  private generation = 1;
  private entries = 0;
  /** The last offset of the last batch wholly read into the map; -1 when none. */
  latestOffset = -1;

  constructor(bufferBytes: number, loadFactor: number) {
    assert(loadFactor > 0 && loadFactor <= 1, `offset map load factor ${loadFactor}`);
    this.slots = Math.floor(bufferBytes / OFFSET_MAP_SLOT_BYTES);
    assert(this.slots >= 2, `dedupe buffer of ${bufferBytes} bytes holds no entry`);
    this.loadFactor = loadFactor;
    this.capacitySlots = this.slots;
    this.slotsInUse = this.slots;
    this.maxEntries = this.entriesFitting(this.slots);
    const buffer = new ArrayBuffer(this.slots * OFFSET_MAP_SLOT_BYTES);
    this.words = new Uint32Array(buffer);
    this.offsets = new Float64Array(buffer);
  }

  /** One slot always stays empty so a probe for a missing key ends. */
  private entriesFitting(slots: number): number {
    return Math.min(slots - 1, Math.floor(slots * this.loadFactor));
  }

  get size(): number {
    return this.entries;
  }

  get isFull(): boolean {
    return this.entries >= this.maxEntries;
  }

  /**
   * Empties the map for a cleaning that puts at most `keysMax` keys (the dirty section's offset
   * count). Only enough slots for them are ever hashed into: a fresh 128 MiB map touched at
   * random by 100,000 keys page-faults in all of it (most of a first cleaning's CPU time in a
   * profile), while 1 million offsets need 27 MB; and the table starts at FIRST_SLOTS and grows
   * with the keys, so lookups stay within fewer cache lines and TLB pages.
   */
  clear(keysMax = Infinity): void {
    const wanted = Math.ceil(keysMax / this.loadFactor) + 1;
    this.capacitySlots = Math.max(2, Math.min(this.slots, wanted));
    this.maxEntries = this.entriesFitting(this.capacitySlots);
    this.slotsInUse = Math.min(this.capacitySlots, FIRST_SLOTS);
    this.growAt = this.growthPoint();
    this.nextGeneration();
    this.entries = 0;
    this.latestOffset = -1;
  }

  /** Every slot becomes free. */
  private nextGeneration(): void {
    this.generation++;
    if (this.generation === 0xffffffff) {
      // Billions of cleanings later: start the generations over.
      for (let slot = 0; slot < this.slots; slot++) this.words[slot * SLOT_WORDS] = 0;
      this.generation = 1;
    }
  }

  private growthPoint(): number {
    if (this.slotsInUse >= this.capacitySlots) return Infinity;
    return Math.floor(this.slotsInUse * GROW_AT_LOAD);
  }

  /**
   * Rehashes the entries into GROWTH times as many slots. They are first copied out compactly
   * (20 bytes each, at most half the slots of the old table: under a tenth of the dedupe buffer
   * for the last growth), then the generation is bumped and each goes back by its stored hash.
   */
  private grow(): void {
    const words = this.words;
    const count = this.entries;
    const hashes = new Uint32Array(count * 3);
    const offsets = new Float64Array(count);
    let kept = 0;
    for (let slot = 0; slot < this.slotsInUse; slot++) {
      const at = slot * SLOT_WORDS;
      if (words[at] !== this.generation) continue;
      hashes[kept * 3] = words[at + 1];
      hashes[kept * 3 + 1] = words[at + 2];
      hashes[kept * 3 + 2] = words[at + 3];
      offsets[kept++] = this.offsets[slot * 3 + 2];
    }
    assert(kept === count, `offset map holds ${kept} entries, counted ${count}`);
    this.slotsInUse = Math.min(this.capacitySlots, this.slotsInUse * GROWTH);
    this.growAt = this.growthPoint();
    this.nextGeneration();
    for (let i = 0; i < count; i++) {
      const slot = this.findHash(hashes[i * 3], hashes[i * 3 + 1], hashes[i * 3 + 2]);
      words[slot * SLOT_WORDS] = this.generation;
      this.offsets[slot * 3 + 2] = offsets[i];
    }
  }

  /**
   * Records `offset` as the latest for the key at `bytes[keyStart, keyStart + keyLength)`. The
   * caller checks isFull first.
   */
  put(bytes: Uint8Array, keyStart: number, keyLength: number, offset: number): void {
    if (this.entries >= this.growAt) this.grow();
    const slot = this.find(bytes, keyStart, keyLength);
    if (this.words[slot * SLOT_WORDS] !== this.generation) {
      if (this.isFull) assert(false, "put into a full offset map");
      this.words[slot * SLOT_WORDS] = this.generation;
      this.entries++;
    }
    this.offsets[slot * 3 + 2] = offset;
  }

  /** The latest offset recorded for the key at `bytes[keyStart, keyStart + keyLength)`, or -1. */
  get(bytes: Uint8Array, keyStart: number, keyLength: number): number {
    const slot = this.find(bytes, keyStart, keyLength);
    return this.words[slot * SLOT_WORDS] === this.generation ? this.offsets[slot * 3 + 2] : -1;
  }

  /**
   * The slot holding `key`'s hash, or the empty slot where it would go (linear probing; the
   * load factor keeps an empty slot in every probe sequence).
   */
  private find(bytes: Uint8Array, keyStart: number, keyLength: number): number {
    murmur3x86128(bytes, keyStart, keyLength, SEED);
    return this.findHash(murmur3Words[0], murmur3Words[1], murmur3Words[2]);
  }

  /** find for a key's hash words. */
  private findHash(a: number, b: number, c: number): number {
    const words = this.words;
    let slot = (a ^ Math.imul(b, 0x85ebca6b)) >>> 0;
    const slots = this.slotsInUse;
    slot %= slots;
    // At most `slots` probes: the table always has an empty slot (entries < slots).
    for (let probes = 0; probes < slots; probes++) {
      const at = slot * SLOT_WORDS;
      if (words[at] !== this.generation) {
        words[at + 1] = a;
        words[at + 2] = b;
        words[at + 3] = c;
        return slot;
      }
      if (words[at + 1] === a && words[at + 2] === b && words[at + 3] === c) return slot;
      slot = slot + 1 === slots ? 0 : slot + 1;
    }
    assert(false, "offset map has no empty slot");
  }
}
