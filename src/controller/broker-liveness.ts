/**
 * Notices a dead broker sooner than its ZooKeeper session does. A broker killed with kill -9
 * leaves its registration in `/brokers/ids` for a whole `zookeeper.session.timeout.ms`, but its
 * listening port closes at once: connections are reset and new ones refused. So each watched
 * broker gets a small ApiVersions request every `probeIntervalMs` on a connection of its own,
 * and a broker whose port refused `refusalsToSuspect` connections in a row is suspected dead.
 *
 * Only refusals count. A timeout, an unreachable host or a slow answer proves nothing (a
 * SIGSTOPped or partitioned broker, a loaded machine) and is left to the ZooKeeper session, so
 * a broker that is merely slow is never suspected. A suspect that answers again is cleared
 * (`onReturn`): it was restarted, or its port was briefly closed.
 *
 * Being suspected only makes the controller elect new leaders earlier; safety never rests on the
 * suspicion being right (docs/faults.md, "Failover").
 */
import { CLIENT_SOFTWARE_NAME, CLIENT_SOFTWARE_VERSION } from "../client/cluster-client.ts";
import {
  InterBrokerClient,
  InterBrokerError,
  type InterBrokerSecurity,
} from "../network/inter-broker-client.ts";
import { ApiKey } from "../protocol/generated/index.ts";
import type { Logger } from "../util/logger.ts";

export interface BrokerLivenessOptions {
  readonly clientId: string;
  /** TLS and SASL of the inter-broker listener the probes connect to. */
  readonly security: InterBrokerSecurity;
  readonly probeIntervalMs: number;
  /** Refused connections in a row that make a broker suspected. */
  readonly refusalsToSuspect: number;
  /** Deadline of one probe (connect or answer). */
  readonly probeTimeoutMs: number;
  readonly log: Logger;
  readonly onSuspect: (brokerId: number) => void;
  readonly onReturn: (brokerId: number) => void;
}

const PROBE_API_VERSION = 3;
const PROBE_BODY = {
  clientSoftwareName: CLIENT_SOFTWARE_NAME,
  clientSoftwareVersion: CLIENT_SOFTWARE_VERSION,
};

/** Pause before reconnecting after an open connection closed. */
const CLOSED_RETRY_MS = 20;

interface Target {
  readonly host: string;
  readonly port: number;
  client: InterBrokerClient | null;
  refusals: number;
  suspected: boolean;
  stopped: boolean;
}

export class BrokerLiveness {
  private readonly targets = new Map<number, Target>();

  constructor(private readonly options: BrokerLivenessOptions) {}

  /** Starts probing a broker at this endpoint (a new endpoint restarts the probe). */
  watch(brokerId: number, host: string, port: number): void {
    const existing = this.targets.get(brokerId);
    if (existing !== undefined && existing.host === host && existing.port === port) return;
    this.unwatch(brokerId);
    const target: Target = {
      host,
      port,
      client: null,
      refusals: 0,
      suspected: false,
      stopped: false,
    };
    this.targets.set(brokerId, target);
    void this.run(brokerId, target);
  }

  unwatch(brokerId: number): void {
    const target = this.targets.get(brokerId);
    if (target === undefined) return;
    target.stopped = true;
    target.client?.close();
    this.targets.delete(brokerId);
  }

  isSuspected(brokerId: number): boolean {
    return this.targets.get(brokerId)?.suspected === true;
  }

  get suspects(): number[] {
    return [...this.targets].filter(([, t]) => t.suspected).map(([id]) => id);
  }

  close(): void {
    for (const id of [...this.targets.keys()]) this.unwatch(id);
  }

  private async run(brokerId: number, target: Target): Promise<void> {
    while (!target.stopped) {
      const outcome = await this.probe(target);
      if (target.stopped) return;
      if (outcome === "answered") {
        target.refusals = 0;
        if (target.suspected) {
          target.suspected = false;
          this.options.log.info(`broker ${brokerId} answers again; no longer suspected`);
          this.options.onReturn(brokerId);
        }
      } else if (outcome === "refused") {
        target.refusals++;
        if (!target.suspected && target.refusals >= this.options.refusalsToSuspect) {
          target.suspected = true;
          this.options.log.warn(
            `broker ${brokerId} refused ${target.refusals} connections in a row at ` +
              `${target.host}:${target.port}: suspected dead before its session ends`,
          );
          this.options.onSuspect(brokerId);
        }
      }
      // A connection that just closed is retried soon: a refusal then follows quickly.
      await Bun.sleep(outcome === "closed" ? CLOSED_RETRY_MS : this.options.probeIntervalMs);
    }
  }

  private async probe(target: Target): Promise<"answered" | "refused" | "closed" | "failed"> {
    const { clientId, probeTimeoutMs } = this.options;
    try {
      if (target.client === null || target.client.isClosed) {
        target.client = await InterBrokerClient.connect(target.host, target.port, {
          ...this.options.security,
          clientId,
          connectTimeoutMs: probeTimeoutMs,
        });
        if (target.stopped) target.client.close();
      }
      // v3 with the software's name, as every client of these brokers sends it (KIP-511): the
      // probed broker's logs then name the controller's probe, not an anonymous v0 client.
      await target.client.request(
        ApiKey.ApiVersions,
        PROBE_API_VERSION,
        PROBE_BODY,
        probeTimeoutMs,
      );
      return "answered";
    } catch (error) {
      if (!(error instanceof InterBrokerError)) throw error;
      if (error.refused) return "refused";
      return target.client?.isClosed === true && target.refusals === 0 ? "closed" : "failed";
    }
  }
}
