/**
 * The controller's connections to brokers (Kafka's ControllerChannelManager): one queue per
 * broker, so each broker applies the controller's requests in the order they were decided.
 * A request that fails (connection refused, broker restarting, timeout) is retried on a new
 * connection until it succeeds, the broker leaves the cluster, or this controller resigns;
 * a broker that rejoins gets the full state anew, so nothing is lost by dropping its queue.
 * Each request carries the recipient's broker epoch (KIP-380), so one meant for an earlier
 * incarnation of a broker that restarted on the same port is refused there.
 */

import {
  InterBrokerClient,
  InterBrokerError,
  type InterBrokerSecurity,
  PLAINTEXT_SECURITY,
} from "../network/inter-broker-client.ts";
import type { ApiKeyNumber, ApiMessages, Init } from "../protocol/generated/index.ts";
import type { Logger } from "../util/logger.ts";

/** Requests waiting for one broker; past this the broker is hopelessly behind and is reset. */
export const QUEUED_REQUESTS_MAX = 10_000;
const RETRY_DELAY_MS = 200;

interface Channel {
  host: string;
  port: number;
  /** The broker's epoch (its registration's czxid) that requests to it carry. */
  epoch: bigint;
  client: InterBrokerClient | null;
  queue: Promise<void>;
  queued: number;
  removed: boolean;
}

export class ControllerChannelManager {
  private readonly channels = new Map<number, Channel>();

  constructor(
    private readonly controllerId: number,
    private readonly requestTimeoutMs: number,
    private readonly log: Logger,
    private readonly security: InterBrokerSecurity = PLAINTEXT_SECURITY,
  ) {}

  /**
   * Adds a broker, or updates its endpoint and epoch (a restarted broker may listen elsewhere,
   * and has a new epoch).
   */
  addBroker(brokerId: number, host: string, port: number, epoch: bigint): void {
    const existing = this.channels.get(brokerId);
    const same = existing?.host === host && existing.port === port && existing.epoch === epoch;
    if (same) return;
    if (existing !== undefined) this.removeBroker(brokerId);
    this.channels.set(brokerId, {
      host,
      port,
      epoch,
      client: null,
      queue: Promise.resolve(),
      queued: 0,
      removed: false,
    });
  }

  /** Drops the broker's queue; requests still queued for it are abandoned. */
  removeBroker(brokerId: number): void {
    const channel = this.channels.get(brokerId);
    if (channel === undefined) return;
    channel.removed = true;
    channel.client?.close();
    this.channels.delete(brokerId);
  }

  /**
   * Queues a request to a broker; `onResponse` sees the answer. Resolves when it was answered
   * or abandoned (the broker left or the controller closed).
   */
  send<K extends ApiKeyNumber>(
    brokerId: number,
    apiKey: K,
    apiVersion: number,
    body: Init<ApiMessages[K]["request"]>,
    onResponse: (response: ApiMessages[K]["response"]) => void = () => {},
  ): Promise<void> {
    const channel = this.channels.get(brokerId);
    if (channel === undefined) return Promise.resolve();
    if (channel.queued >= QUEUED_REQUESTS_MAX) {
      this.log.warn(
        `controller dropped ${channel.queued} requests queued for broker ` +
          `${brokerId}; it gets the full state when it registers again`,
      );
      this.removeBroker(brokerId);
      return Promise.resolve();
    }
    channel.queued++;
    const done = channel.queue.then(async () => {
      try {
        await this.deliver(brokerId, channel, apiKey, apiVersion, body, onResponse);
      } finally {
        channel.queued--;
      }
    });
    channel.queue = done;
    return done;
  }

  /** Closes every connection; queued requests are abandoned. */
  close(): void {
    for (const id of [...this.channels.keys()]) this.removeBroker(id);
  }

  private async deliver<K extends ApiKeyNumber>(
    brokerId: number,
    channel: Channel,
    apiKey: K,
    apiVersion: number,
    body: Init<ApiMessages[K]["request"]>,
    onResponse: (response: ApiMessages[K]["response"]) => void,
  ): Promise<void> {
    for (let attempt = 1; !channel.removed; attempt++) {
      try {
        if (channel.client === null || channel.client.isClosed) {
          channel.client = await InterBrokerClient.connect(channel.host, channel.port, {
            ...this.security,
            clientId: `quill-controller-${this.controllerId}`,
            connectTimeoutMs: this.requestTimeoutMs,
          });
          if (channel.removed) {
            channel.client.close();
            return;
          }
        }
        const stamped = withBrokerEpoch(body, channel.epoch);
        const response = await channel.client.request(
          apiKey,
          apiVersion,
          stamped,
          this.requestTimeoutMs,
        );
        onResponse(response);
        return;
      } catch (error) {
        if (!(error instanceof InterBrokerError)) throw error;
        if (attempt === 1 || attempt % 25 === 0) {
          this.log.warn(
            `controller request (API key ${apiKey}) to broker ${brokerId} ` +
              `failed, retrying: ${error.message}`,
          );
        }
        await Bun.sleep(RETRY_DELAY_MS);
      }
    }
  }
}

/** LeaderAndIsr, UpdateMetadata and StopReplica carry the recipient's epoch; others as built. */
function withBrokerEpoch<T>(body: T, epoch: bigint): T {
  if (typeof body !== "object" || body === null || !("brokerEpoch" in body)) return body;
  return { ...body, brokerEpoch: epoch };
}
