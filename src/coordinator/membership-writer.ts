import { ErrorCode, KafkaError } from "../protocol/errors.ts";
import { assert } from "../util/assert.ts";
import type { Logger } from "../util/logger.ts";
import type { OffsetStore } from "./offset-store.ts";

/** What to write for a group: its record, null to delete it, or "skip" (not ours any more). */
export type MembershipSnapshot = Uint8Array | null | "skip";

/** Bigger records are not stored (the group's members rejoin after a failover instead). */
export const MEMBERSHIP_RECORD_BYTES_MAX = 900 * 1024;

interface GroupWrites {
  /** The write running now, if any. */
  running: Promise<number | null> | null;
  /** The write that will run after it, reading the group's state when it starts. */
  queued: Promise<number | null> | null;
}

/**
 * Writes groups' membership records to the offset store, one write per group at a time.
 * Changes made while a write runs are covered by one more write, which reads the group's state
 * when it starts; so a burst of heartbeats costs at most two writes, and `settled` tells a
 * request when the state it produced is stored (as Kafka answers a heartbeat once its records
 * are committed).
 */
export class MembershipWriter {
  private readonly groups = new Map<string, GroupWrites>();

  constructor(
    private readonly store: OffsetStore,
    private readonly snapshot: (groupId: string) => MembershipSnapshot,
    private readonly log: Logger,
  ) {}

  /** The group changed: store its state (now, or after the write already running). */
  schedule(groupId: string): void {
    let writes = this.groups.get(groupId);
    if (writes === undefined) this.groups.set(groupId, (writes = { running: null, queued: null }));
    if (writes.queued !== null) return;
    if (writes.running === null) {
      writes.running = this.write(groupId, writes);
      return;
    }
    const entry = writes;
    writes.queued = writes.running.then(() => {
      entry.running = entry.queued;
      entry.queued = null;
      return this.write(groupId, entry, false);
    });
  }

  /** Resolves once the group's state as of now is stored: null, or the store's error code. */
  settled(groupId: string): Promise<number | null> {
    const writes = this.groups.get(groupId);
    return writes?.queued ?? writes?.running ?? Promise.resolve(null);
  }

  private async write(groupId: string, writes: GroupWrites, first = true): Promise<number | null> {
    // The first write starts on the next turn, so changes made by the same request coalesce.
    if (first) await Promise.resolve();
    try {
      const snapshot = this.snapshot(groupId);
      if (snapshot === "skip") return null;
      let bytes = snapshot;
      if (bytes !== null && bytes.length > MEMBERSHIP_RECORD_BYTES_MAX) {
        this.log.warn(`group ${groupId}: membership record of ${bytes.length} bytes not stored`);
        bytes = null;
      }
      await this.store.storeMembership(groupId, bytes);
      return null;
    } catch (error) {
      // A failed write (ZooKeeper away, a full disk) must not take the broker down: the
      // request hears a retriable error (as Kafka's coordinator maps storage errors), and the
      // group's next change writes the whole record again.
      this.log.warn(`group ${groupId}: membership not stored: ${String(error)}`);
      if (!(error instanceof KafkaError)) return ErrorCode.COORDINATOR_NOT_AVAILABLE;
      return error.code === ErrorCode.NONE ? ErrorCode.UNKNOWN_SERVER_ERROR : error.code;
    } finally {
      if (writes.queued === null) {
        assert(this.groups.get(groupId) === writes, `membership writes of ${groupId} replaced`);
        this.groups.delete(groupId);
      }
    }
  }
}
