import { randomBytes } from "node:crypto";
import type { BrokerServices } from "../api/broker-services.ts";
import type { BrokerConfig } from "../config/broker-config.ts";
import { sslSettingsFor } from "../config/listener-config.ts";
import type { ListenerAddress } from "../config/listeners.ts";
import { type TlsServerConfig, tlsServerConfig } from "../security/tls-server-config.ts";
import { BrokerMetrics } from "../server/broker-metrics.ts";
import { EventLoopMonitor } from "../util/event-loop-monitor.ts";
import type { Logger } from "../util/logger.ts";
import type { ZooKeeperClient } from "../zookeeper/zookeeper-client.ts";
import { AdminAuthenticator } from "./admin-auth.ts";
import { type AdminServer, type AdminState, startAdminServer } from "./admin-server.ts";
import type { CleanupStack } from "./cleanup-stack.ts";
import { forUser } from "./console-context.ts";
import { ConsoleHistory } from "./console-history.ts";
import { consolePage } from "./console-pages.ts";
import { LeaderHighWatermarks } from "./leader-high-watermarks.ts";
import { scramCredentialStore } from "./sasl-setup.ts";

/** The admin listener's state, with what the start-up learns for it on the way. */
export interface AdminHandle {
  readonly state: AdminState;
  readonly bound: AdminServer["bound"];
  readonly history: ConsoleHistory;
  readonly leaders: LeaderHighWatermarks;
  readonly log: Logger;
  zooKeeper: ZooKeeperClient | null;
}

const AUTHENTICATION_TEXT = {
  none: "no login",
  scram: "HTTP basic against SCRAM users",
  mtls: "HTTPS, client certificates",
} as const;

/**
 * The TLS settings of an admin listener with admin.authentication=mtls: its
 * `listener.name.<name>.ssl.*` keys, else the broker's `ssl.*`. A certificate is asked for but
 * not demanded in the handshake (health checks need none); one that is presented must verify,
 * and every other path refuses a client without one.
 */
function adminTls(config: BrokerConfig, address: ListenerAddress): TlsServerConfig {
  const settings = { ...sslSettingsFor(config, address.listenerName) };
  settings["ssl.client.auth"] = "requested";
  return tlsServerConfig(settings, `${address.listenerName} (admin)`);
}

/**
 * Starts the admin HTTP listener first (when configured), so that health checks answer "live,
 * not ready" while logs recover; it is the last thing a stop closes.
 */
export function openAdmin(config: BrokerConfig, log: Logger, cleanups: CleanupStack): AdminHandle {
  const addresses = config["admin.listeners"];
  const eventLoop = addresses === null ? null : new EventLoopMonitor();
  const state: AdminState = {
    metrics: new BrokerMetrics(),
    eventLoop,
    ready: false,
    sources: null,
    authentication: config["admin.authentication"],
    authenticator: null,
    pages: null,
  };
  const history = new ConsoleHistory();
  const leaders = new LeaderHighWatermarks(log.child("Console"));
  if (addresses === null) return { state, bound: [], history, leaders, log, zooKeeper: null };
  cleanups.push("event-loop monitor, console history, leader high watermarks", () => {
    eventLoop?.stop();
    history.stop();
    leaders.stop();
  });
  const tls =
    state.authentication === "mtls"
      ? { configFor: (a: ListenerAddress) => adminTls(config, a), log }
      : null;
  const server = startAdminServer(addresses, state, tls);
  cleanups.push("admin listener", () => server.stop());
  const bound = server.bound.map((b) => `http://${b.host}:${b.port}`).join(", ");
  const auth = AUTHENTICATION_TEXT[state.authentication];
  log.info(
    `quill: admin listener on ${bound} (/console, /health/live, /health/ready, /metrics; ${auth})`,
  );
  return { state, bound: server.bound, history, leaders, log, zooKeeper: null };
}

/** The broker serves: metrics see its parts, logins its SCRAM users, and it reports ready. */
export function adminServes(
  admin: AdminHandle,
  services: BrokerServices,
  connectionCounts: () => { listenerName: string; count: number }[],
): void {
  const state = admin.state;
  // In a cluster, lag also covers committed partitions another broker holds.
  const leaders = admin.zooKeeper !== null && admin.bound.length > 0 ? admin.leaders : undefined;
  leaders?.start(services);
  const sources = { services, connectionCounts, zooKeeper: admin.zooKeeper };
  state.sources = leaders === undefined ? sources : { ...sources, leaderHighWatermarks: leaders };
  if (state.authentication === "scram") {
    const store =
      services.saslAuthenticator?.credentials ??
      scramCredentialStore(services.config, admin.zooKeeper);
    state.authenticator = new AdminAuthenticator(store);
  }
  if (admin.bound.length > 0) {
    const zk = admin.zooKeeper;
    const context = {
      services,
      history: admin.history,
      zooKeeperState: () => zk?.sessionState ?? "not used (embedded broker)",
      csrfKey: randomBytes(32),
      log: admin.log.child("Console"),
      ...(leaders === undefined ? {} : { leaderHighWatermarks: leaders }),
    };
    admin.history.start(services, state.metrics, leaders);
    state.pages = (request, url, principal, host) =>
      consolePage(request, url, () => forUser(context, principal, host));
  }
  state.ready = true;
}
