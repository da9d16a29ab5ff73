import { ErrorCode } from "../protocol/errors.ts";
import { assert } from "../util/assert.ts";

/**
 * One partition as one share group consumes it (KIP-932, Kafka's SharePartition), kept by the
 * partition's leader. Records below the share-partition start offset (SPSO) are done; records
 * from the SPSO up to the end offset (SPEO) are in flight, each in one state:
 *
 *   AVAILABLE --acquire--> ACQUIRED --ACCEPT--> ACKNOWLEDGED
 *                          ACQUIRED --RELEASE or lock expiry--> AVAILABLE (ARCHIVED at the
 *                                     delivery count limit)
 *                          ACQUIRED --REJECT--> ARCHIVED
 *
 * Records at and above the SPEO have never been delivered. The SPSO moves up over a prefix of
 * ACKNOWLEDGED and ARCHIVED records. The in-flight window is bounded by
 * `group.share.partition.max.record.locks`: once full, no new records are acquired until the
 * start moves. State is kept per offset (Kafka keeps it per batch until a batch is split):
 * bounded by the window, so a fetch's work is at most the window, never the log.
 */

export const RecordState = { AVAILABLE: 0, ACQUIRED: 1, ACKNOWLEDGED: 2, ARCHIVED: 4 } as const;
/** RENEW (ShareFetch and ShareAcknowledge v2, KIP-1222) keeps the record and restarts its lock. */
export const AcknowledgeType = { GAP: 0, ACCEPT: 1, RELEASE: 2, REJECT: 3, RENEW: 4 } as const;

export interface SharePartitionSettings {
  /** `group.share.record.lock.duration.ms`. */
  readonly lockDurationMs: number;
  /** `group.share.delivery.count.limit`. */
  readonly deliveryCountLimit: number;
  /** `group.share.partition.max.record.locks`: the in-flight window. */
  readonly maxInFlightRecords: number;
}

/** Offsets acquired together with one delivery count (ShareFetch's AcquiredRecords). */
export interface AcquiredRecords {
  readonly firstOffset: bigint;
  readonly lastOffset: bigint;
  readonly deliveryCount: number;
}

/** A batch of the log read: the offsets it covers. */
export interface BatchSpan {
  readonly baseOffset: bigint;
  readonly lastOffset: bigint;
}

/** The durable part of the state: the start offset and every in-flight record's state. */
export interface SharePartitionSnapshot {
  readonly startOffset: bigint;
  /** From the start offset on, one entry per in-flight offset: [state, deliveryCount]. */
  readonly records: readonly (readonly [number, number])[];
}

export class SharePartition {
  private start: bigint;
  /** Index in the arrays of the start offset; the arrays are compacted now and then. */
  private head = 0;
  private readonly states: number[] = [];
  private readonly counts: number[] = [];
  private readonly owners: (string | null)[] = [];
  private readonly lockIds: number[] = [];
  private availableCount = 0;
  private nextLockId = 1;
  private readonly timers = new Set<ReturnType<typeof setTimeout>>();

  constructor(
    startOffset: bigint,
    private readonly settings: SharePartitionSettings,
    /**
     * Called when records may be acquired again (released, lock expired, or the start moved and
     * freed room in a full window): wakes waiting fetches.
     */
    private readonly onAvailable: () => void,
    /** Called after every change of state, for persistence. */
    private readonly onChange: () => void,
  ) {
    this.start = startOffset;
  }

  get startOffset(): bigint {
    return this.start;
  }

  get endOffset(): bigint {
    return this.start + BigInt(this.states.length - this.head);
  }

  /** In-flight records (ACQUIRED, AVAILABLE, or done but above an unfinished one). */
  get inFlightCount(): number {
    return this.states.length - this.head;
  }

  /** In-flight records already done (ACKNOWLEDGED or ARCHIVED above an unfinished one). */
  doneInFlightCount(): number {
    let n = 0;
    for (let i = this.head; i < this.states.length; i++) {
      const s = this.states[i];
      if (s === RecordState.ACKNOWLEDGED || s === RecordState.ARCHIVED) n++;
    }
    return n;
  }

  /** The members holding ACQUIRED records (one pass over the window). */
  holders(): Set<string> {
    const members = new Set<string>();
    for (let i = this.head; i < this.states.length; i++) {
      if (this.states[i] === RecordState.ACQUIRED) members.add(this.owners[i]!);
    }
    return members;
  }

  /** Where a fetch should read: the first AVAILABLE record, else the end; null when full. */
  nextFetchOffset(): bigint | null {
    if (this.availableCount > 0) {
      for (let i = this.head; i < this.states.length; i++) {
        if (this.states[i] === RecordState.AVAILABLE) return this.offsetAt(i);
      }
    }
    return this.inFlightCount < this.settings.maxInFlightRecords ? this.endOffset : null;
  }

  /**
   * Acquires for `memberId` the AVAILABLE and never-delivered records of `batches` (the
   * batches a read returned, in order), at most `maxRecords`. Returns the acquired ranges and
   * how many of the batches hold them (the rest need not be sent).
   */
  acquire(memberId: string, batches: readonly BatchSpan[], maxRecords: number) {
    const acquired: AcquiredRecords[] = [];
    const lockId = this.nextLockId++;
    let taken = 0;
    let batchesUsed = 0;
    let full = false;
    for (let b = 0; b < batches.length && taken < maxRecords && !full; b++) {
      const batch = batches[b]!;
      let o = batch.baseOffset > this.start ? batch.baseOffset : this.start;
      for (; o <= batch.lastOffset && taken < maxRecords; o++) {
        const i = this.indexOf(o);
        if (i >= this.states.length) {
          // Offsets missing from the log (compacted away) below this batch are done.
          const gap = i - this.states.length;
          if (this.inFlightCount + gap >= this.settings.maxInFlightRecords) {
            full = true;
            break;
          }
          for (let g = 0; g < gap; g++) this.pushNew(RecordState.ARCHIVED);
          this.pushNew(RecordState.ACQUIRED);
        } else if (this.states[i] !== RecordState.AVAILABLE) {
          continue;
        } else {
          this.availableCount--;
        }
        this.states[i] = RecordState.ACQUIRED;
        this.counts[i]!++;
        this.owners[i] = memberId;
        this.lockIds[i] = lockId;
        addTo(acquired, o, this.counts[i]!);
        taken++;
        batchesUsed = b + 1;
      }
    }
    if (taken > 0) {
      this.armLock(lockId);
      this.advanceStart();
      this.onChange();
    }
    return { acquired, batchesUsed };
  }

  /**
   * Applies one acknowledgement batch of `memberId`: every offset must be ACQUIRED by it (else
   * INVALID_RECORD_STATE and nothing changes). `types` holds one type for the whole batch or
   * one per offset; RENEW only when `allowRenew` (a v2 request flagged IsRenewAck), else
   * INVALID_REQUEST. Returns the error code.
   */
  acknowledge(
    memberId: string,
    first: bigint,
    last: bigint,
    types: readonly number[],
    allowRenew = false,
  ): number {
    const n = Number(last - first) + 1;
    if (last < first || (types.length !== 1 && types.length !== n) || types.length === 0) {
      return ErrorCode.INVALID_REQUEST;
    }
    const maxType = allowRenew ? AcknowledgeType.RENEW : AcknowledgeType.REJECT;
    if (types.some((t) => t < AcknowledgeType.GAP || t > maxType)) return ErrorCode.INVALID_REQUEST;
    if (first < this.start || last >= this.endOffset) return ErrorCode.INVALID_RECORD_STATE;
    const base = this.indexOf(first);
    for (let i = base; i < base + n; i++) {
      if (this.states[i] !== RecordState.ACQUIRED || this.owners[i] !== memberId) {
        return ErrorCode.INVALID_RECORD_STATE;
      }
    }
    let released = false;
    let renewLockId = 0;
    for (let k = 0; k < n; k++) {
      const type = types.length === 1 ? types[0]! : types[k]!;
      const i = base + k;
      if (type === AcknowledgeType.RENEW) {
        // Still the member's, under a new lock of the full duration; the old lock's timer
        // finds no record of its own left when it fires.
        if (renewLockId === 0) renewLockId = this.nextLockId++;
        this.lockIds[i] = renewLockId;
      } else if (type === AcknowledgeType.RELEASE) released = this.release(i) || released;
      else this.finish(i, type === AcknowledgeType.ACCEPT);
    }
    if (renewLockId !== 0) this.armLock(renewLockId);
    const moved = this.advanceStart();
    this.onChange();
    if (released || moved) this.onAvailable();
    return ErrorCode.NONE;
  }

  /** Releases every record `memberId` holds (its share session closed). */
  releaseMember(memberId: string): void {
    let released = false;
    for (let i = this.head; i < this.states.length; i++) {
      if (this.states[i] === RecordState.ACQUIRED && this.owners[i] === memberId) {
        released = this.release(i) || released;
      }
    }
    const moved = this.advanceStart();
    this.onChange();
    if (released || moved) this.onAvailable();
  }

  /**
   * Moves the start offset (an offset reset, or records deleted below it): everything in
   * flight below it is dropped; above it, in-flight state is kept.
   */
  moveStartTo(offset: bigint): void {
    while (this.head < this.states.length && this.start < offset) this.dropHead();
    if (this.start < offset) this.start = offset;
    this.compact();
    this.onChange();
  }

  /** Clears every in-flight record and starts at `offset` (AlterShareGroupOffsets). */
  resetTo(offset: bigint): void {
    this.states.length = this.counts.length = this.owners.length = this.lockIds.length = 0;
    this.head = 0;
    this.availableCount = 0;
    this.start = offset;
    this.onChange();
  }

  snapshot(): SharePartitionSnapshot {
    const records: [number, number][] = [];
    for (let i = this.head; i < this.states.length; i++) {
      // An acquired record's lock does not survive a restart: it is AVAILABLE again.
      const state =
        this.states[i] === RecordState.ACQUIRED ? RecordState.AVAILABLE : this.states[i]!;
      records.push([state, this.counts[i]!]);
    }
    return { startOffset: this.start, records };
  }

  /** Restores a snapshot's records (the start offset was given to the constructor). */
  restore(snapshot: SharePartitionSnapshot): void {
    assert(this.states.length === 0, "restore into a used share partition");
    for (const [state, count] of snapshot.records) {
      this.pushNew(state);
      this.counts[this.states.length - 1] = count;
      if (state === RecordState.AVAILABLE) this.availableCount++;
    }
    this.advanceStart();
  }

  /** Stops the lock timers (the partition is unloaded). */
  close(): void {
    for (const t of this.timers) clearTimeout(t);
    this.timers.clear();
  }

  /** The state of one offset, for tests and descriptions. */
  stateOf(offset: bigint): { state: number; deliveryCount: number } | null {
    if (offset < this.start || offset >= this.endOffset) return null;
    const i = this.indexOf(offset);
    return { state: this.states[i]!, deliveryCount: this.counts[i]! };
  }

  private armLock(lockId: number): void {
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      this.expireLock(lockId);
    }, this.settings.lockDurationMs);
    timer.unref();
    this.timers.add(timer);
  }

  private expireLock(lockId: number): void {
    let changed = false;
    let released = false;
    for (let i = this.head; i < this.states.length; i++) {
      if (this.states[i] !== RecordState.ACQUIRED || this.lockIds[i] !== lockId) continue;
      changed = true;
      released = this.release(i) || released;
    }
    if (!changed) return;
    const moved = this.advanceStart();
    this.onChange();
    if (released || moved) this.onAvailable();
  }

  /** ACQUIRED to AVAILABLE, or ARCHIVED at the delivery limit. True when it became AVAILABLE. */
  private release(i: number): boolean {
    this.owners[i] = null;
    if (this.counts[i]! >= this.settings.deliveryCountLimit) {
      this.states[i] = RecordState.ARCHIVED;
      return false;
    }
    this.states[i] = RecordState.AVAILABLE;
    this.availableCount++;
    return true;
  }

  private finish(i: number, accepted: boolean): void {
    this.states[i] = accepted ? RecordState.ACKNOWLEDGED : RecordState.ARCHIVED;
    this.owners[i] = null;
  }

  /** Moves the start over finished records; true when it moved (the window has room). */
  private advanceStart(): boolean {
    const before = this.start;
    while (this.head < this.states.length) {
      const s = this.states[this.head];
      if (s !== RecordState.ACKNOWLEDGED && s !== RecordState.ARCHIVED) break;
      this.dropHead();
    }
    this.compact();
    return this.start !== before;
  }

  private dropHead(): void {
    if (this.states[this.head] === RecordState.AVAILABLE) this.availableCount--;
    this.head++;
    this.start++;
  }

  private compact(): void {
    if (this.head === 0 || this.head < this.states.length / 2) return;
    for (const a of [this.states, this.counts, this.owners, this.lockIds]) a.splice(0, this.head);
    this.head = 0;
  }

  private pushNew(state: number): void {
    this.states.push(state);
    this.counts.push(0);
    this.owners.push(null);
    this.lockIds.push(0);
  }

  private indexOf(offset: bigint): number {
    return this.head + Number(offset - this.start);
  }

  private offsetAt(i: number): bigint {
    return this.start + BigInt(i - this.head);
  }
}

function addTo(ranges: AcquiredRecords[], offset: bigint, deliveryCount: number): void {
  const last = ranges.at(-1);
  if (
    last !== undefined &&
    last.lastOffset + 1n === offset &&
    last.deliveryCount === deliveryCount
  ) {
    ranges[ranges.length - 1] = { ...last, lastOffset: offset };
  } else {
    ranges.push({ firstOffset: offset, lastOffset: offset, deliveryCount });
  }
}
