/**
 * The contract between the network layer and whatever answers requests. The network layer knows
 * nothing of Kafka APIs: it hands each request frame to a RequestHandler and writes back what the
 * handler returns, in request order.
 */
import type { RecordsChunk } from "../protocol/records.ts";

/**
 * What a handler answers for one request.
 * - `{ chunks }`: the response bytes WITHOUT the 4-byte size prefix (the network layer adds it).
 *   Chunks are memory views or file ranges; file ranges are sent with sendfile and released by
 *   the network layer exactly once. The network layer keeps the views, not copies, until the
 *   kernel has taken them, which for a slow client is long after `handle` returns: memory
 *   handed over here must never be reused or overwritten (a pooled Writer must not be reset
 *   onto the same buffer while its output may still be queued).
 * - `null`: no response at all (produce with acks=0); the next response keeps its order.
 * - `"close"`: close the connection once every earlier response has been written.
 * - `closeAfter`: write this response, then close (a failed SASL authentication).
 * - `throttleMs`: once this response is queued, read no more requests for that long (KIP-219:
 *   a client over its quota is answered first, then muted). With no chunks nothing is written
 *   (a throttled produce with acks=0).
 */
export type Response =
  | {
      readonly chunks: readonly RecordsChunk[];
      readonly closeAfter?: boolean;
      readonly throttleMs?: number;
      /** The request's API key, handed back with the response's send time (responseSent). */
      readonly apiKey?: number;
    }
  | null
  | "close";

/** What a handler may know and keep about the connection a request arrived on. */
export interface ConnectionContext {
  /** Unique per SocketServer, increasing from 1. */
  readonly id: number;
  /** The peer's IP address, e.g. "127.0.0.1". */
  readonly remoteAddress: string;
  readonly remotePort: number;
  /** The listener the connection came through (`PLAINTEXT`, `SSL`, ...), upper-cased. */
  readonly listenerName: string;
  /** Kafka's principal (`User:alice`), `User:ANONYMOUS` until TLS or SASL names the client. */
  readonly principal: string;
  /**
   * "name/version" the client sent in ApiVersions v3+ (KIP-511), e.g. "librdkafka/2.3.0"; null
   * until then. Connection-level log lines name it, as Kafka's request log and metrics do.
   */
  clientSoftware: string | null;
  /** The listener's protocol: PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL. */
  readonly securityProtocol: string;
  /** SASL listeners: true once SaslAuthenticate succeeded; other listeners: always true. */
  readonly authenticated: boolean;
  /** Marks a SASL connection authenticated as `principal`. */
  authenticate(principal: string): void;
  /**
   * Date.now() after which the SASL session has expired (connections.max.reauth.ms, KIP-368)
   * and the connection must re-authenticate before any other request; 0: never.
   */
  sessionExpiresMs: number;
  /** Per-connection values owned by the layers above (e.g. SASL state, fetch sessions). */
  readonly state: Map<string, unknown>;
  /** True once the connection is closed: responses produced from now on are discarded. */
  readonly closed: boolean;
  /**
   * Calls `listener` once when the connection closes (at once if it is already closed), so a
   * parked request such as a long-poll fetch can give up early. Returns an unsubscribe function.
   * A peer that disconnects while reading is paused (a connection at its in-flight or queued
   * bytes limit) is noticed only when the server next writes or reads, as in Kafka, where a
   * muted channel is not polled either; parked requests must therefore still have a timeout.
   */
  onClose(listener: () => void): () => void;
}

export interface RequestHandler {
  /**
   * `frame` is the request after the 4-byte size prefix. It is a view that stays valid for as
   * long as the handler keeps it (the network layer never reuses request memory). A throw or a
   * rejected promise means a bug or an unparseable request: the connection is closed.
   */
  handle(frame: Uint8Array, conn: ConnectionContext): Promise<Response> | Response;
  /**
   * A response tagged with `apiKey` was written whole: `sendSeconds` from its being queued on
   * the socket to its last byte taken by the kernel, waits for `drain` included.
   */
  responseSent?(apiKey: number, sendSeconds: number): void;
}
