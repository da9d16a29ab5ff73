/**
 * Kafka's `queued.max.request.bytes` memory pool (KIP-72): one budget, shared by every
 * connection of every listener, for the bytes of requests that are partly received or read and
 * not yet answered. When it runs low the network stops reading from sockets (Bun's
 * `socket.pause()`, see docs/faults.md) until handlers finish and give memory back, so a burst of
 * large requests cannot grow the process without bound.
 *
 * What is counted, per connection:
 * - loose bytes: received and not yet part of a frame with memory of its own (the decoder's
 *   input, a size prefix, the start of a frame still waiting for a reservation);
 * - reserved bytes: a frame being assembled from several reads (its whole size, reserved when
 *   its size prefix arrives, as Kafka allocates a request's buffer from the pool), and every
 *   frame handed to a handler, until its response is ready.
 *
 * Bun cannot be asked to read fewer bytes: one `data` event carries up to `readChunkMaxBytes`
 * (512 KiB measured on Linux), already read when the callback runs. The bound therefore works
 * one event ahead:
 * - a connection without a reservation may read only while `used <= limit - readChunkMaxBytes`,
 *   so the event it gets cannot take `used` past the limit; pausing every such socket takes
 *   effect before the next event (measured: a socket paused in another socket's callback gets no
 *   event from the same poll round);
 * - a reservation adds `readChunkMaxBytes` of slack to the frame, which covers the bytes a
 *   read brings beyond the end of the frame;
 * - a reservation must leave `smallRequestReserveBytes` free, so small requests (one read, no
 *   reservation) keep flowing while large ones wait;
 * - loose bytes stay below `limit - frameMaxBytes - smallRequestReserveBytes - 2 reads`, so once
 *   the requests in progress are answered a frame of the largest size can always be reserved:
 *   waiting connections cannot together hold the memory a waiting frame needs.
 *
 * Not thread-safe; it runs on the JS thread like the sockets.
 */
import { assert } from "../util/assert.ts";

/** The largest `data` event Bun 1.4.4 delivers on Linux (its receive buffer), in bytes. */
export const READ_CHUNK_MAX_BYTES = 512 * 1024;

/** A connection as the pool sees it. */
export interface PoolMember {
  /** Reading was opened or closed for connections without a reservation. */
  onReadingChanged(): void;
  /** Enough memory for the reservation this member waits for may be free: try again. */
  onMemoryAvailable(): void;
}

export interface RequestMemoryPoolOptions {
  readonly limitBytes: number;
  /** `socket.request.max.bytes`: the largest reservation ever asked for. */
  readonly frameMaxBytes: number;
  readonly readChunkMaxBytes?: number;
}

export class RequestMemoryPool {
  readonly limitBytes: number;
  readonly readChunkMaxBytes: number;
  /** Free memory a reservation must leave for requests that arrive in one read. */
  readonly smallRequestReserveBytes: number;
  /** Loose bytes above which reading stops, so the largest frame can always be reserved. */
  readonly looseMaxBytes: number;
  private looseBytes = 0;
  private reservedBytes = 0;
  /** The highest `usedBytes` seen, for tests and metrics. */
  peakUsedBytes = 0;
  /** Reading by connections without a reservation is allowed. */
  private open = true;
  private readonly members = new Set<PoolMember>();
  /** Members waiting for a reservation, oldest first, with the bytes each needs. */
  private readonly waiters = new Map<PoolMember, number>();
  private waitersScheduled = false;

  constructor(options: RequestMemoryPoolOptions) {
    this.limitBytes = options.limitBytes;
    this.readChunkMaxBytes = options.readChunkMaxBytes ?? READ_CHUNK_MAX_BYTES;
    this.smallRequestReserveBytes = Math.max(
      4 * this.readChunkMaxBytes,
      Math.floor(this.limitBytes / 8),
    );
    this.looseMaxBytes =
      this.limitBytes -
      options.frameMaxBytes -
      this.smallRequestReserveBytes -
      2 * this.readChunkMaxBytes;
    assert(
      this.looseMaxBytes >= this.readChunkMaxBytes,
      `queued.max.request.bytes ${this.limitBytes} is too small for socket.request.max.bytes ` +
        `${options.frameMaxBytes}: at least ${minimumLimitBytes(options.frameMaxBytes)} needed`,
    );
  }

  get usedBytes(): number {
    return this.looseBytes + this.reservedBytes;
  }

  get waitingCount(): number {
    return this.waiters.size;
  }

  /** Connections without a reservation may read now. */
  get readingOpen(): boolean {
    return this.open;
  }

  join(member: PoolMember): void {
    this.members.add(member);
  }

  leave(member: PoolMember): void {
    this.members.delete(member);
    this.waiters.delete(member);
  }

  /** Received bytes entered (positive) or left (negative) a member's loose bytes. */
  addLoose(deltaBytes: number): void {
    this.looseBytes += deltaBytes;
    assert(this.looseBytes >= 0, `loose bytes went negative: ${this.looseBytes}`);
    this.changed(deltaBytes < 0);
  }

  /** Counts a whole frame taken from loose bytes (already received, so never refused). */
  addFrame(frameBytes: number): void {
    this.reservedBytes += frameBytes;
    this.changed(false);
  }

  /**
   * Reserves memory for a frame to be assembled; false (and `member` queued to be called back)
   * when it does not fit now. Waiting members are served oldest first.
   */
  tryReserve(member: PoolMember, bytes: number): boolean {
    const head = this.waiters.keys().next();
    const first = head.done === true || head.value === member;
    if (first && this.usedBytes + bytes <= this.limitBytes - this.smallRequestReserveBytes) {
      this.waiters.delete(member);
      this.reservedBytes += bytes;
      this.changed(false);
      return true;
    }
    if (!this.waiters.has(member)) this.waiters.set(member, bytes);
    return false;
  }

  /** Gives back reserved bytes: a frame answered, a reservation's slack, a closed connection. */
  release(bytes: number): void {
    this.reservedBytes -= bytes;
    assert(this.reservedBytes >= 0, `reserved bytes went negative: ${this.reservedBytes}`);
    this.changed(true);
  }

  private changed(released: boolean): void {
    const used = this.usedBytes;
    if (used > this.peakUsedBytes) this.peakUsedBytes = used;
    const closeAt = this.limitBytes - this.readChunkMaxBytes;
    // Reopen only some way below the threshold, so the pause and resume of every socket does not
    // repeat at each small change.
    const margin = this.open ? 0 : Math.floor(this.smallRequestReserveBytes / 4);
    const open = used <= closeAt - margin && this.looseBytes <= this.looseMaxBytes - margin;
    if (open !== this.open) {
      this.open = open;
      for (const member of [...this.members]) member.onReadingChanged();
    }
    if (released && this.waiters.size > 0) this.scheduleWaiters();
  }

  /** Calls back waiting members, oldest first, while the oldest one's reservation fits. */
  private scheduleWaiters(): void {
    if (this.waitersScheduled) return;
    this.waitersScheduled = true;
    queueMicrotask(() => {
      this.waitersScheduled = false;
      const room = this.limitBytes - this.smallRequestReserveBytes;
      for (const [member, bytes] of this.waiters) {
        if (this.usedBytes + bytes > room) return;
        member.onMemoryAvailable();
        if (this.waiters.has(member)) return;
      }
    });
  }
}

/** The smallest `queued.max.request.bytes` that works with frames of `frameMaxBytes`. */
export function minimumLimitBytes(
  frameMaxBytes: number,
  readChunkMaxBytes = READ_CHUNK_MAX_BYTES,
): number {
  // limit - frame - max(4 reads, limit / 8) - 2 reads >= 1 read
  const byEighth = Math.ceil(((frameMaxBytes + 3 * readChunkMaxBytes) * 8) / 7);
  return Math.max(byEighth, frameMaxBytes + 7 * readChunkMaxBytes);
}

/**
 * Quill's default for `queued.max.request.bytes` (Kafka's is -1, unlimited): a sixteenth of the
 * memory the process may use (its cgroup limit, else the host's), between 256 MiB and 1 GiB, and
 * never below what `frameMaxBytes` needs.
 */
export function defaultLimitBytes(memoryBytes: number, frameMaxBytes: number): number {
  const share = Math.floor(memoryBytes / 16);
  const clamped = Math.min(1024 * 1024 * 1024, Math.max(256 * 1024 * 1024, share));
  return Math.max(clamped, minimumLimitBytes(frameMaxBytes));
}

/** The pool for `queued.max.request.bytes` (-1: none, unlimited). */
export function createMemoryPool(limits: {
  readonly queuedMaxRequestBytes: number;
  readonly socketRequestMaxBytes: number;
}): RequestMemoryPool | null {
  if (limits.queuedMaxRequestBytes === -1) return null;
  return new RequestMemoryPool({
    limitBytes: limits.queuedMaxRequestBytes,
    frameMaxBytes: limits.socketRequestMaxBytes,
  });
}
