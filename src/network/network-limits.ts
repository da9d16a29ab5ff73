/**
 * Per-server and per-connection limits of the network layer. Every queue the network layer keeps
 * grows with client behaviour, so each has an explicit bound here; when a connection reaches one,
 * the server stops reading from that socket until the connection is back under it.
 */
import { totalmem } from "node:os";
import { assert } from "../util/assert.ts";
import { defaultLimitBytes, minimumLimitBytes } from "./request-memory-pool.ts";

export interface NetworkLimits {
  /** `socket.request.max.bytes`: the largest request frame accepted, size prefix excluded. */
  socketRequestMaxBytes: number;
  /**
   * `max.in.flight.requests.per.connection`: requests handed to the handler whose responses are
   * not yet queued for writing. Reading pauses at this many (Kafka itself reads one at a time).
   */
  maxInFlightRequestsPerConnection: number;
  /**
   * `max.queued.response.bytes.per.connection`: response bytes (file ranges included) queued
   * but not yet accepted by the kernel. Reading pauses above this, so a slow consumer cannot
   * make the broker buffer without bound.
   */
  maxQueuedResponseBytesPerConnection: number;
  /** `max.connections`: connections beyond this are closed as soon as they are accepted. */
  maxConnections: number;
  /** `connections.max.idle.ms`: a connection with no traffic and nothing in flight is closed. */
  connectionsMaxIdleMs: number;
  /**
   * `queued.max.request.bytes`: bytes of requests partly received or not yet answered, over
   * every connection of every listener; reading stops at the limit. -1: unlimited (Kafka's
   * default). Unset: `defaultQueuedMaxRequestBytes`.
   */
  queuedMaxRequestBytes: number;
  /**
   * `connection.failed.authentication.delay.ms`: how long a connection whose SASL
   * authentication failed stays open after its error response (Kafka's KIP-306); 0: none.
   */
  failedAuthenticationDelayMs: number;
}

export const DEFAULT_NETWORK_LIMITS: Readonly<NetworkLimits> = Object.freeze({
  socketRequestMaxBytes: 104857600,
  maxInFlightRequestsPerConnection: 1000,
  maxQueuedResponseBytesPerConnection: 64 * 1024 * 1024,
  maxConnections: 2147483647,
  connectionsMaxIdleMs: 600000,
  queuedMaxRequestBytes: -1,
  failedAuthenticationDelayMs: 100,
});

/** The Kafka-style configuration key of each limit, for the config layer and log lines. */
export const NETWORK_LIMIT_KEYS: Readonly<Record<keyof NetworkLimits, string>> = Object.freeze({
  socketRequestMaxBytes: "socket.request.max.bytes",
  maxInFlightRequestsPerConnection: "max.in.flight.requests.per.connection",
  maxQueuedResponseBytesPerConnection: "max.queued.response.bytes.per.connection",
  maxConnections: "max.connections",
  connectionsMaxIdleMs: "connections.max.idle.ms",
  queuedMaxRequestBytes: "queued.max.request.bytes",
  failedAuthenticationDelayMs: "connection.failed.authentication.delay.ms",
});

/** Fills unset limits with defaults and checks each is a positive integer. */
export function resolveNetworkLimits(partial: Partial<NetworkLimits> = {}): NetworkLimits {
  const limits: NetworkLimits = { ...DEFAULT_NETWORK_LIMITS, ...partial };
  if (partial.queuedMaxRequestBytes === undefined) {
    limits.queuedMaxRequestBytes = defaultQueuedMaxRequestBytes(limits.socketRequestMaxBytes);
  }
  for (const key of Object.keys(NETWORK_LIMIT_KEYS) as (keyof NetworkLimits)[]) {
    const value = limits[key];
    assert(Number.isSafeInteger(value), `${NETWORK_LIMIT_KEYS[key]} must be an integer: ${value}`);
    const unlimited = key === "queuedMaxRequestBytes" && value === -1;
    const none = key === "failedAuthenticationDelayMs" && value === 0;
    assert(value > 0 || unlimited || none, `${NETWORK_LIMIT_KEYS[key]} must be positive: ${value}`);
  }
  // A frame is at most 2^31 - 1 bytes: its size prefix is a signed 32-bit integer.
  assert(limits.socketRequestMaxBytes <= 0x7fffffff, `socket.request.max.bytes too large`);
  const queued = limits.queuedMaxRequestBytes;
  const least = minimumLimitBytes(limits.socketRequestMaxBytes);
  assert(
    queued === -1 || queued >= least,
    `queued.max.request.bytes ${queued} must be -1 or at least ${least} ` +
      `(socket.request.max.bytes ${limits.socketRequestMaxBytes} plus room for small requests)`,
  );
  return limits;
}

/**
 * The memory the process may use: its cgroup limit when one is set, else the host's memory.
 */
export function processMemoryBytes(): number {
  const constrained = process.constrainedMemory?.() ?? 0;
  const host = totalmem();
  return constrained > 0 && constrained < host ? constrained : host;
}

/** Quill's default `queued.max.request.bytes`; see `defaultLimitBytes`. */
export function defaultQueuedMaxRequestBytes(socketRequestMaxBytes: number): number {
  return defaultLimitBytes(processMemoryBytes(), socketRequestMaxBytes);
}
