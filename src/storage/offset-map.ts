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

export class OffsetMap {
  readonly slots: number;
  /** Entries the map accepts before it counts as full (in the slots in use). */
  maxEntries: number;
  /** Slots this cleaning hashes into: all, or fewer when it can hold fewer keys (clear). */
  private slotsInUse: number;
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
   * count). Only enough slots for them are hashed into: a fresh 128 MiB map touched at random by
   * 100,000 keys page-faults in all of it (most of a first cleaning's CPU time in a profile),
   * while 1 million offsets need 27 MB; lookups stay within fewer cache lines and TLB pages too.
   */
  clear(keysMax = Infinity): void {
    const wanted = Math.ceil(keysMax / this.loadFactor) + 1;
    this.slotsInUse = Math.max(2, Math.min(this.slots, wanted));
    this.maxEntries = this.entriesFitting(this.slotsInUse);
    this.generation++;
    if (this.generation === 0xffffffff) {
      // Four billion cleanings later: start the generations over.
      for (let slot = 0; slot < this.slots; slot++) this.words[slot * SLOT_WORDS] = 0;
      this.generation = 1;
    }
    this.entries = 0;
    this.latestOffset = -1;
  }

  /**
   * Records `offset` as the latest for the key at `bytes[keyStart, keyStart + keyLength)`. The
   * caller checks isFull first.
   */
  put(bytes: Uint8Array, keyStart: number, keyLength: number, offset: number): void {
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
    const a = murmur3Words[0];
    const b = murmur3Words[1];
    const c = murmur3Words[2];
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
