/**
 * This broker's ephemeral `/brokers/ids/<id>` znode: how other brokers, a controller and
 * Kafka's tools learn that it is alive and where it listens. The znode lives as long as the
 * broker's ZooKeeper session, so a broker that dies disappears once its session expires.
 *
 * When the id is already registered by another session, the holder is either a live broker
 * (a configuration mistake: refuse to start) or this broker's own predecessor, killed before
 * its session ended (wait for the session to expire, so that a supervisor's restart loop just
 * works). They are told apart by the holder's advertised endpoint: if it is this broker's own
 * endpoint, the old process cannot be listening there any more (this one holds the port); if
 * it is another endpoint that accepts a TCP connection, a live broker holds the id.
 */

import { connect } from "node:net";
import type { Listener } from "../config/listeners.ts";
import { assert } from "../util/assert.ts";
import type { Logger } from "../util/logger.ts";
import type { ZooKeeperClient } from "../zookeeper/zookeeper-client.ts";
import {
  ConnectionLossError,
  NodeExistsError,
  NoNodeError,
  ZooKeeperUnavailableError,
} from "../zookeeper/zookeeper-errors.ts";
import {
  type BrokerRegistrationInfo,
  brokerIdPath,
  decodeBrokerRegistration,
  encodeBrokerRegistration,
} from "./kafka-znodes.ts";
import { ClusterStartupError } from "./zookeeper-connection.ts";

export interface BrokerRegistrationOptions {
  readonly brokerId: number;
  /** The advertised listener, what Kafka clients and other brokers connect to. */
  readonly host: string;
  readonly port: number;
  /** Every advertised listener, written to the registration as Kafka's `endpoints`. */
  readonly endpoints?: readonly Listener[];
  readonly rack: string | null;
  /**
   * Longest wait for a crashed predecessor's session to expire. The old session's timeout is
   * not visible to other clients, so this should exceed any session timeout the cluster uses.
   */
  readonly expiryWaitMs: number;
  readonly log: Logger;
  /**
   * Told the broker epoch (KIP-380: the registration znode's czxid) after each registration,
   * the first and every one after a session expiry.
   */
  readonly onRegistered?: (brokerEpoch: bigint) => void;
}

/** Who holds the registration znode: its session, its czxid and what it says. */
interface Holder {
  readonly owner: bigint;
  readonly czxid: bigint;
  readonly info: BrokerRegistrationInfo;
}

/** Another live broker holds this broker's id, or the old registration never expired. */
export class BrokerIdConflictError extends ClusterStartupError {
  override readonly name = "BrokerIdConflictError";
}

/** How long a TCP connect to the holder's endpoint may take before it counts as dead. */
const PROBE_TIMEOUT_MS = 1_000;
/** How often the znode is checked while waiting for an old session to expire. */
const EXPIRY_POLL_MS = 100;
/** Pause before retrying a re-registration that failed because ZooKeeper was unavailable. */
const RETRY_DELAY_MS = 500;

export class BrokerRegistration {
  private closed = false;
  private readonly unsubscribe: () => void;
  private retryTimer: ReturnType<typeof setTimeout> | null = null;

  private constructor(
    private readonly zk: ZooKeeperClient,
    private readonly options: BrokerRegistrationOptions,
  ) {
    this.unsubscribe = zk.onSessionEvent((event) => {
      if (event === "session-recreated") this.reregister();
    });
  }

  /**
   * Registers the broker, waiting out a crashed predecessor's session if needed. Rejects with
   * BrokerIdConflictError when a live broker holds the id, and with ZooKeeperUnavailableError
   * when ZooKeeper does not answer in time.
   */
  static async register(
    zk: ZooKeeperClient,
    options: BrokerRegistrationOptions,
  ): Promise<BrokerRegistration> {
    assert(options.expiryWaitMs > 0, `expiryWaitMs ${options.expiryWaitMs} must be > 0`);
    assert(options.brokerId >= 0, `broker id ${options.brokerId} must be >= 0`);
    const registration = new BrokerRegistration(zk, options);
    let brokerEpoch: bigint;
    try {
      brokerEpoch = await registration.claim();
    } catch (error) {
      registration.stop();
      throw error;
    }
    options.onRegistered?.(brokerEpoch);
    options.log.info(
      `registered broker ${options.brokerId} at ${brokerIdPath(options.brokerId)} ` +
        `(ZooKeeper session ${hexSessionId(zk.sessionId)}, broker epoch ${brokerEpoch})`,
    );
    return registration;
  }

  get path(): string {
    return brokerIdPath(this.options.brokerId);
  }

  /**
   * Removes the registration now (rather than when the session closes) and stops registering
   * again; a broker waiting for this id can start at once.
   */
  async deregister(): Promise<void> {
    if (this.closed) return;
    this.stop();
    try {
      const { stat } = await this.zk.getData(this.path, { timeoutMs: PROBE_TIMEOUT_MS });
      if (stat.ephemeralOwner !== this.zk.sessionId) return;
      await this.zk.delete(this.path, { version: stat.version, timeoutMs: PROBE_TIMEOUT_MS });
    } catch (error) {
      // Closing the session removes the znode anyway; this was only to be quicker.
      if (!(error instanceof NoNodeError) && !(error instanceof ZooKeeperUnavailableError)) {
        throw error;
      }
    }
  }

  private stop(): void {
    this.closed = true;
    this.unsubscribe();
    if (this.retryTimer !== null) clearTimeout(this.retryTimer);
  }

  /**
   * Creates the znode; on a conflict, decides between refusing and waiting, then tries again.
   * Resolves with the broker epoch: the czxid of the znode this session holds.
   */
  private async claim(): Promise<bigint> {
    const deadlineMs = Date.now() + this.options.expiryWaitMs;
    for (;;) {
      const info: BrokerRegistrationInfo = { ...this.options, timestampMs: Date.now() };
      try {
        await this.zk.create(this.path, encodeBrokerRegistration(info), { mode: "ephemeral" });
        const stat = await this.zk.exists(this.path);
        if (stat?.ephemeralOwner === this.zk.sessionId) return stat.czxid;
        continue;
      } catch (error) {
        // A create lost with its connection may have been applied: the holder check below
        // finds this session's own znode then, as Kafka's checked ephemeral create does.
        if (error instanceof ConnectionLossError && Date.now() < deadlineMs) {
          await Bun.sleep(EXPIRY_POLL_MS);
          continue;
        }
        if (!(error instanceof NodeExistsError)) throw error;
      }
      const holder = await this.readHolder();
      if (holder === null) continue;
      if (holder.owner === this.zk.sessionId) return holder.czxid;
      await this.checkHolderIsGone(holder, deadlineMs);
      await this.waitForRelease(holder.owner, deadlineMs);
    }
  }

  private async readHolder(): Promise<Holder | null> {
    try {
      const { data, stat } = await this.zk.getData(this.path);
      const info = decodeBrokerRegistration(this.options.brokerId, data);
      return { owner: stat.ephemeralOwner, czxid: stat.czxid, info };
    } catch (error) {
      if (error instanceof NoNodeError) return null;
      throw error;
    }
  }

  /** Throws BrokerIdConflictError unless the holder is this broker's own dead predecessor. */
  private async checkHolderIsGone(holder: Holder, deadlineMs: number): Promise<void> {
    const { brokerId, host, port, log } = this.options;
    const where = `${holder.info.host}:${holder.info.port}`;
    const session = hexSessionId(holder.owner);
    if (holder.owner === 0n) {
      throw new BrokerIdConflictError(
        `${this.path} is a persistent znode, not a broker ` +
          "registration; remove it or choose another --broker-id",
      );
    }
    const ownEndpoint = holder.info.host === host && holder.info.port === port;
    if (!ownEndpoint && (await endpointAnswers(holder.info.host, holder.info.port))) {
      throw new BrokerIdConflictError(
        `broker id ${brokerId} is registered by a live broker at ` +
          `${where} (ZooKeeper session ${session}); give this broker another --broker-id or ` +
          "stop that one",
      );
    }
    const why = ownEndpoint ? "this broker's own endpoint" : "which does not answer";
    log.warn(
      `broker id ${brokerId} is still registered by ZooKeeper session ${session} ` +
        `(${where}, ${why}), probably this broker before a crash; waiting up to ` +
        `${Math.max(0, deadlineMs - Date.now())} ms for that session to expire`,
    );
  }

  /** Resolves once the znode is gone or owned by another session; throws at the deadline. */
  private async waitForRelease(owner: bigint, deadlineMs: number): Promise<void> {
    const startedMs = Date.now();
    while (Date.now() < deadlineMs) {
      const stat = await this.zk.exists(this.path);
      if (stat === null || stat.ephemeralOwner !== owner) {
        this.options.log.info(
          `ZooKeeper session ${hexSessionId(owner)} released ` +
            `${this.path} after ${Date.now() - startedMs} ms`,
        );
        return;
      }
      await Bun.sleep(EXPIRY_POLL_MS);
    }
    throw new BrokerIdConflictError(
      `broker id ${this.options.brokerId} is still registered by ` +
        `ZooKeeper session ${hexSessionId(owner)} after ${this.options.expiryWaitMs} ms; ` +
        "another broker may be using this id",
    );
  }

  /**
   * A new session has no ephemeral znodes: register again, retrying while ZooKeeper is
   * unavailable. Losing the id to another broker meanwhile is logged; this broker keeps serving
   * its clients but is no longer visible to the cluster.
   */
  private reregister(): void {
    if (this.closed || this.retryTimer !== null) return;
    this.claim().then(
      (brokerEpoch) => {
        this.options.onRegistered?.(brokerEpoch);
        this.options.log.info(
          `registered broker ${this.options.brokerId} again after the ZooKeeper session ` +
            `expired (new session ${hexSessionId(this.zk.sessionId)}, broker epoch ${brokerEpoch})`,
        );
      },
      (error: unknown) => {
        if (this.closed) return;
        if (error instanceof ZooKeeperUnavailableError) {
          this.retryTimer = setTimeout(() => {
            this.retryTimer = null;
            this.reregister();
          }, RETRY_DELAY_MS);
          return;
        }
        this.options.log.error(
          `could not register broker ${this.options.brokerId} ` +
            `again after the ZooKeeper session expired: ${String(error)}`,
        );
      },
    );
  }
}

/** ZooKeeper prints session ids as unsigned hex. */
export function hexSessionId(sessionId: bigint): string {
  return `0x${BigInt.asUintN(64, sessionId).toString(16)}`;
}

/** Whether something accepts TCP connections at host:port within PROBE_TIMEOUT_MS. */
function endpointAnswers(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    const done = (answers: boolean) => {
      socket.destroy();
      resolve(answers);
    };
    socket.setTimeout(PROBE_TIMEOUT_MS, () => done(false));
    socket.once("connect", () => done(true));
    socket.once("error", () => done(false));
  });
}
