/**
 * One client connection: decodes frames, hands each to the handler at once (handlers may finish
 * out of order, e.g. a long-poll fetch), and writes responses strictly in request order.
 *
 * Flow control: reading stops (socket.pause) while the connection has too many requests in
 * flight or too many response bytes queued, and resumes when it is back under both limits.
 * Received bytes not yet decoded stay in the FrameDecoder meanwhile. Bun 1.4.4 sockets from
 * Bun.listen have pause()/resume() (not in older docs; checked: a paused socket gets no more
 * `data` events, the client's writes back up in the kernel, and resume() delivers the rest).
 * A data event already in progress when pause() is called may still arrive; it is buffered.
 *
 * Memory: with a `RequestMemoryPool` (queued.max.request.bytes), every received byte is counted
 * in it until the request it belongs to is answered, a frame assembled from several reads waits
 * for the pool to grant its size, and reading also stops while the pool says so.
 *
 * Batching: responses made ready by one `data` event, by one `drain`, or by one microtask turn
 * of async completions are flushed together, so they share write calls.
 *
 * This class is not thread-safe; it runs on the JS thread like everything in Bun.listen.
 */

import type { RecordsChunk } from "../protocol/records.ts";
import { assert } from "../util/assert.ts";
import type { Logger } from "../util/logger.ts";
import { type FrameAllocator, FrameDecoder } from "./frame-decoder.ts";
import type { NetworkLimits } from "./network-limits.ts";
import type { ConnectionContext, RequestHandler, Response } from "./request-handler.ts";
import type { PoolMember, RequestMemoryPool } from "./request-memory-pool.ts";
import {
  ConnectionIoError,
  type OutputSocket,
  type ResponseSentListener,
  ResponseWriter,
} from "./response-writer.ts";

/** The Bun socket operations a connection uses. */
export interface ConnectionSocket extends OutputSocket {
  pause(): void;
  resume(): void;
  end(): void;
}

/** Who is on the other end: given to the constructor, kept as the connection's own fields. */
export interface ConnectionPeer {
  readonly id: number;
  readonly remoteAddress: string;
  readonly remotePort: number;
}

/** What every connection of one listener shares: one object per listener, not per connection. */
export interface ConnectionOptions {
  readonly listenerName: string;
  readonly securityProtocol: string;
  readonly handler: RequestHandler;
  readonly limits: NetworkLimits;
  readonly logger: Logger;
  readonly sendfileEnabled: boolean;
  /** The broker-wide budget for request bytes; none: only the per-connection limits apply. */
  readonly memoryPool?: RequestMemoryPool;
}

/** A response slot, in request order, for a request whose handler has not finished yet. */
interface PendingResponse {
  completed: boolean;
  response: Response;
}

/**
 * Memory: an idle connection is kept small (5,000 of them idle is a scale workload): no closures
 * of its own (it is its decoder's allocator and passes the handler as the writer's listener), and
 * its state map and close listeners are made when first used.
 */
export class Connection implements ConnectionContext, PoolMember, FrameAllocator {
  readonly id: number;
  readonly remoteAddress: string;
  readonly remotePort: number;
  readonly listenerName: string;
  /** Kafka's principal: `User:ANONYMOUS` until TLS or SASL names the client. */
  principal = "User:ANONYMOUS";
  readonly securityProtocol: string;
  authenticated: boolean;
  sessionExpiresMs = 0;
  private stateMap: Map<string, unknown> | null = null;
  clientSoftware: string | null = null;
  closed = false;
  /** Date.now() of the last bytes read or written, for connections.max.idle.ms. */
  lastActiveMs = Date.now();

  private readonly decoder: FrameDecoder;
  private readonly writer: ResponseWriter;
  /** Responses awaited in request order; the head is `pending[pendingHead]`. */
  private pending: PendingResponse[] = [];
  private pendingHead = 0;
  private readingPaused = false;
  /** Set by a "close" response or a server drain: read no more requests, end when idle. */
  private endWhenIdle = false;
  /** Set by a "close" response: later responses are discarded, not written. */
  private discardResponses = false;
  private serviceScheduled = false;
  private closeListeners: (() => void)[] | null = null;
  private readonly pool: RequestMemoryPool | null;
  /** Received bytes of this connection counted as loose in the pool. */
  private looseCountedBytes = 0;
  /** Memory reserved in the pool for the frame under assembly (its size plus one read). */
  private partialReservedBytes = 0;
  /** Set by the decoder when the frame it returns was assembled in reserved memory. */
  private lastFrameReserved = false;
  /** While set, a quota throttle mutes the connection: no request is read (KIP-219). */
  private unmuteTimer: ReturnType<typeof setTimeout> | null = null;
  /** The close after a failed authentication waits until then (see `endDelayed`). */
  private endNotBeforeMs = 0;
  private endTimer: ReturnType<typeof setTimeout> | null = null;
  private mutedUntilMs = 0;

  constructor(
    private readonly socket: ConnectionSocket,
    peer: ConnectionPeer,
    private readonly options: ConnectionOptions,
  ) {
    this.id = peer.id;
    this.remoteAddress = peer.remoteAddress;
    this.remotePort = peer.remotePort;
    this.listenerName = options.listenerName;
    this.securityProtocol = options.securityProtocol;
    this.authenticated = !options.securityProtocol.startsWith("SASL_");
    this.pool = options.memoryPool ?? null;
    this.decoder = new FrameDecoder(options.limits.socketRequestMaxBytes, undefined, this);
    const handler = options.handler;
    const timesSends = handler.responseSent !== undefined;
    const listener = timesSends ? (handler as ResponseSentListener) : null;
    this.writer = new ResponseWriter(socket, options.sendfileEnabled, listener);
    this.pool?.join(this);
  }

  get state(): Map<string, unknown> {
    this.stateMap ??= new Map();
    return this.stateMap;
  }

  /** FrameAllocator: the decoder needs memory for a frame spanning several reads. */
  tryReserve(frameBytes: number): boolean {
    return this.reserveFrame(frameBytes);
  }

  /** FrameAllocator: the frame reserved last is complete. */
  onAssembled(): void {
    this.frameAssembled();
  }

  /** PoolMember: the pool opened or closed reading for connections without a reservation. */
  onReadingChanged(): void {
    if (!this.closed) this.updateReading();
  }

  /** PoolMember: memory for the frame this connection waits for may be free. */
  onMemoryAvailable(): void {
    if (!this.closed) this.service();
  }

  /** Requests handed to the handler whose responses are not yet queued for writing. */
  get inFlightRequests(): number {
    return this.pending.length - this.pendingHead;
  }

  get queuedResponseBytes(): number {
    return this.writer.queuedBytes;
  }

  /** True when nothing is in flight or queued, so closing loses no response. */
  get isIdle(): boolean {
    return this.inFlightRequests === 0 && this.writer.isEmpty;
  }

  onClose(listener: () => void): () => void {
    if (this.closed) {
      listener();
      return () => {};
    }
    this.closeListeners ??= [];
    this.closeListeners.push(listener);
    return () => {
      const index = this.closeListeners?.indexOf(listener) ?? -1;
      if (index >= 0) this.closeListeners!.splice(index, 1);
    };
  }

  authenticate(principal: string): void {
    this.principal = principal;
    this.authenticated = true;
  }

  /** Bun `data` event: the buffer is fresh per event, so the decoder may keep views of it. */
  onData(data: Uint8Array): void {
    if (this.closed || this.endWhenIdle) return;
    this.lastActiveMs = Date.now();
    this.decoder.push(data);
    this.countLoose();
    this.service();
  }

  /** Bun `drain` event: the socket took fewer bytes than offered earlier and has room again. */
  onDrain(): void {
    this.lastActiveMs = Date.now();
    this.service();
  }

  /** Stops reading requests; the connection ends once every in-flight response is written. */
  beginDrain(): void {
    this.endWhenIdle = true;
    this.service();
  }

  /** Closes at once, discarding queued responses; `reason` is logged if given. */
  destroy(reason?: string): void {
    if (this.closed) return;
    if (reason !== undefined) {
      const peer = this.describePeer();
      this.options.logger.warn(`Closing connection ${this.id} from ${peer}: ${reason}`);
    }
    this.socket.end();
    this.onClosed();
  }

  /** Bun `close` event, or our own close: releases everything the connection holds. */
  onClosed(): void {
    if (this.closed) return;
    this.closed = true;
    if (this.unmuteTimer !== null) clearTimeout(this.unmuteTimer);
    if (this.endTimer !== null) clearTimeout(this.endTimer);
    this.writer.releaseAll();
    if (this.pool !== null) {
      this.pool.leave(this);
      if (this.looseCountedBytes > 0) this.pool.addLoose(-this.looseCountedBytes);
      if (this.partialReservedBytes > 0) this.pool.release(this.partialReservedBytes);
      this.looseCountedBytes = 0;
      this.partialReservedBytes = 0;
    }
    for (let i = this.pendingHead; i < this.pending.length; i++) {
      const slot = this.pending[i]!;
      if (slot.completed) releaseResponse(slot.response);
    }
    this.pending = [];
    this.pendingHead = 0;
    const listeners = this.closeListeners;
    this.closeListeners = null;
    for (const listener of listeners ?? []) listener();
  }

  private describePeer(): string {
    const peer = `${this.remoteAddress}:${this.remotePort}`;
    return this.clientSoftware === null ? peer : `${peer} (${this.clientSoftware})`;
  }

  /** Dispatches what may be read, writes what is ready, and adjusts reading; never throws. */
  private service(): void {
    for (let round = 0; !this.closed; round++) {
      assert(round < 1_000_000, "connection service loop did not settle");
      const dispatchedCount = this.dispatchFrames();
      if (this.closed) return;
      let outcome: ReturnType<typeof this.writer.flush>;
      try {
        outcome = this.writer.flush();
      } catch (error) {
        if (!(error instanceof ConnectionIoError)) throw error;
        this.destroy(error.peerGone ? undefined : error.message);
        return;
      }
      if (outcome === "drained" || this.writer.queuedBytes > 0) this.lastActiveMs = Date.now();
      const moreToRead = this.decoder.hasBufferedInput && this.canDispatch();
      if (outcome === "blocked" || dispatchedCount === 0 || !moreToRead) break;
    }
    if (this.closed) return;
    // After a "close" response, later requests are not waited for: their responses are dropped.
    const idle = this.writer.isEmpty && (this.discardResponses || this.inFlightRequests === 0);
    if (this.endWhenIdle && idle && !this.endDelayed()) {
      this.socket.end();
      this.onClosed();
      return;
    }
    this.updateReading();
  }

  /**
   * Whether the close waits: as Kafka (KIP-306), a connection whose authentication failed is
   * closed a moment after its error response, not with it. A client that reads the response and
   * the end of the stream in one read may drop the response and see only a lost connection
   * (kafka-python 3.0 does), instead of the authentication error.
   */
  private endDelayed(): boolean {
    const waitMs = this.endNotBeforeMs - Date.now();
    if (waitMs <= 0) return false;
    this.endTimer ??= setTimeout(() => {
      this.endTimer = null;
      this.endNotBeforeMs = 0;
      if (!this.closed) this.service();
    }, waitMs);
    return true;
  }

  private canDispatch(): boolean {
    const limits = this.options.limits;
    return (
      !this.endWhenIdle &&
      this.unmuteTimer === null &&
      this.inFlightRequests < limits.maxInFlightRequestsPerConnection &&
      this.writer.queuedBytes < limits.maxQueuedResponseBytesPerConnection
    );
  }

  /** Pauses the socket while a limit is reached or undecoded bytes wait, resumes otherwise. */
  private updateReading(): void {
    const shouldRead =
      this.canDispatch() && !this.decoder.hasBufferedInput && this.memoryAllowsReading();
    if (shouldRead === !this.readingPaused) return;
    this.readingPaused = !shouldRead;
    if (shouldRead) this.socket.resume();
    else this.socket.pause();
  }

  /** A frame under assembly reads on into its reserved memory; others wait for the pool. */
  private memoryAllowsReading(): boolean {
    return this.pool === null || this.pool.readingOpen || this.decoder.partialRemainingBytes > 0;
  }

  /** Brings the pool's count of this connection's received, unframed bytes up to date. */
  private countLoose(): void {
    if (this.pool === null) return;
    // Bytes for the frame under assembly, and one read beyond it, are in its reservation.
    const covered =
      this.partialReservedBytes > 0
        ? this.decoder.partialRemainingBytes + this.pool.readChunkMaxBytes
        : 0;
    const looseBytes = Math.max(0, this.decoder.bufferedBytes - covered);
    if (looseBytes === this.looseCountedBytes) return;
    const deltaBytes = looseBytes - this.looseCountedBytes;
    this.looseCountedBytes = looseBytes;
    this.pool.addLoose(deltaBytes);
  }

  /** The decoder needs memory for a frame spanning several reads: the frame plus one read. */
  private reserveFrame(frameBytes: number): boolean {
    if (this.pool === null) return true;
    const bytes = frameBytes + this.pool.readChunkMaxBytes;
    if (!this.pool.tryReserve(this, bytes)) return false;
    this.partialReservedBytes = bytes;
    return true;
  }

  /** The assembled frame keeps its size reserved until answered; the read's slack goes back. */
  private frameAssembled(): void {
    this.lastFrameReserved = true;
    if (this.pool === null) return;
    this.pool.release(this.pool.readChunkMaxBytes);
    this.partialReservedBytes = 0;
  }

  /** Hands decoded frames to the handler while the limits allow; returns how many. */
  private dispatchFrames(): number {
    let count = 0;
    while (this.canDispatch()) {
      this.lastFrameReserved = false;
      const frame = this.decoder.next();
      this.countLoose();
      if (frame === null) break;
      if (!(frame instanceof Uint8Array)) {
        this.destroy(`request size ${frame.sizeBytes} is ${frame.reason}`);
        break;
      }
      count++;
      this.dispatch(frame);
      if (this.closed) break;
    }
    return count;
  }

  private dispatch(frame: Uint8Array): void {
    // The frame's bytes stay counted until its handler is done with them.
    const pool = this.pool;
    if (pool !== null && !this.lastFrameReserved) pool.addFrame(frame.length);
    const frameBytes = pool === null ? 0 : frame.length;
    let result: Promise<Response> | Response;
    try {
      result = this.options.handler.handle(frame, this);
    } catch (error) {
      pool?.release(frameBytes);
      this.failHandler(error);
      return;
    }
    this.compactPending();
    if (result instanceof Promise) {
      const slot: PendingResponse = { completed: false, response: null };
      this.pending.push(slot);
      result.then(
        (response) => {
          pool?.release(frameBytes);
          this.complete(slot, response);
        },
        (error) => {
          pool?.release(frameBytes);
          this.failHandler(error);
        },
      );
      return;
    }
    pool?.release(frameBytes);
    if (this.inFlightRequests === 0) {
      this.apply(result);
    } else {
      this.pending.push({ completed: true, response: result });
    }
  }

  /** Drops promoted slots when they are the larger part of an order that never empties. */
  private compactPending(): void {
    if (this.pendingHead < 1024 || this.pendingHead * 2 < this.pending.length) return;
    this.pending.splice(0, this.pendingHead);
    this.pendingHead = 0;
  }

  private complete(slot: PendingResponse, response: Response): void {
    if (this.closed) {
      releaseResponse(response);
      return;
    }
    assert(!slot.completed, "a response slot completed twice");
    slot.completed = true;
    slot.response = response;
    this.promote();
    this.scheduleService();
  }

  /** Moves completed responses at the head of the order into the write queue. */
  private promote(): void {
    while (this.pendingHead < this.pending.length) {
      const slot = this.pending[this.pendingHead]!;
      if (!slot.completed) return;
      this.pendingHead++;
      this.apply(slot.response);
    }
    this.pending = [];
    this.pendingHead = 0;
  }

  /** Queues one response whose turn it is. */
  private apply(response: Response): void {
    if (response === null) return;
    if (this.discardResponses) {
      releaseResponse(response);
    } else if (response === "close") {
      this.discardResponses = true;
      this.endWhenIdle = true;
    } else {
      if (response.chunks.length > 0) this.writer.enqueue(response.chunks, response.apiKey);
      if (response.closeAfter === true) {
        this.discardResponses = true;
        this.endWhenIdle = true;
        this.endNotBeforeMs = Date.now() + this.options.limits.failedAuthenticationDelayMs;
      }
      if (response.throttleMs !== undefined && response.throttleMs > 0) {
        this.mute(response.throttleMs);
      }
    }
  }

  /** Reads no request for `throttleMs` (or longer, if already muted for longer). */
  private mute(throttleMs: number): void {
    const untilMs = Date.now() + throttleMs;
    if (untilMs <= this.mutedUntilMs) return;
    this.mutedUntilMs = untilMs;
    if (this.unmuteTimer !== null) clearTimeout(this.unmuteTimer);
    this.unmuteTimer = setTimeout(() => {
      this.unmuteTimer = null;
      this.mutedUntilMs = 0;
      if (!this.closed) this.service();
    }, throttleMs);
  }

  private failHandler(error: unknown): void {
    const message = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
    this.destroy(`request handler failed: ${message}`);
  }

  /** Async completions of one microtask turn share one flush. */
  private scheduleService(): void {
    if (this.serviceScheduled) return;
    this.serviceScheduled = true;
    queueMicrotask(() => {
      this.serviceScheduled = false;
      this.service();
    });
  }
}

/** Releases the file ranges of a response that will never be written. */
function releaseResponse(response: Response): void {
  if (response === null || response === "close") return;
  for (const chunk of response.chunks as readonly RecordsChunk[]) {
    if (!(chunk instanceof Uint8Array)) chunk.release();
  }
}
