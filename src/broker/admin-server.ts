import type { ListenerAddress } from "../config/listeners.ts";
import type { TlsServerConfig } from "../security/tls-server-config.ts";
import type { BrokerMetrics } from "../server/broker-metrics.ts";
import type { EventLoopMonitor } from "../util/event-loop-monitor.ts";
import type { Logger } from "../util/logger.ts";
import type { AdminAuthenticator } from "./admin-auth.ts";
import { startTlsFront, type TlsFront } from "./admin-tls-front.ts";
import { CONFIG_FORM_BYTES_MAX } from "./console-config-alter.ts";
import { type MetricsSources, metricsText } from "./metrics-collector.ts";
import { PROMETHEUS_CONTENT_TYPE } from "./metrics-text.ts";

/**
 * The admin HTTP listener (`admin.listeners`, `--admin`), served with Bun.serve beside the Kafka
 * listeners and off unless configured:
 *
 * - `/health/live`: 200 while the process serves HTTP at all (a hung event loop answers nothing).
 * - `/health/ready`: 200 once the broker serves Kafka requests (every local log loaded,
 *   listeners bound, in a cluster registered in ZooKeeper and caught up on metadata: the
 *   controller has listed it as live) and until it starts stopping; 503 before and after.
 * - `/metrics`: Prometheus' text format (metrics-collector.ts, docs/observability.md).
 *
 * - everything else (metrics, the console) needs a login when `admin.authentication=scram`:
 *   HTTP basic against the SCRAM users (admin-auth.ts); 401 without one, 503 until the broker
 *   has opened its credential store.
 *
 * It starts first, so a supervisor sees "live, not ready" during a long log recovery.
 */
export interface AdminState {
  readonly metrics: BrokerMetrics;
  /** Started with the admin listener (null without one: nobody would read it). */
  readonly eventLoop: EventLoopMonitor | null;
  /** Whether Kafka clients are being served; see the ready rule above. */
  ready: boolean;
  /** The running broker's parts; null until it serves. */
  sources: MetricsSources | null;
  /**
   * admin.authentication: "scram" (HTTP basic) or "mtls" (a client certificate, through
   * admin-tls-front.ts) guards every path but the health checks.
   */
  readonly authentication: "none" | "scram" | "mtls";
  /** Checks logins once the broker has its credential store; null before (or without auth). */
  authenticator: AdminAuthenticator | null;
  /** Serves the paths the listener does not (the console); null: 404 for them. */
  pages: Pages | null;
}

/** The console: answers a request of `principal` from the client address `host`. */
export type Pages = (
  request: Request,
  url: URL,
  principal: string,
  host: string,
) => Promise<Response>;

export interface AdminServer {
  readonly bound: readonly { host: string; port: number }[];
  stop(): Promise<void>;
}

const TEXT = { "content-type": "text/plain; charset=utf-8" };

/** Who sent a request: its address, and the principal of its certificate with mTLS. */
interface Caller {
  readonly host: string;
  /** With mTLS: `User:…` from the certificate, null without one; undefined without mTLS. */
  readonly certificatePrincipal?: string | null;
}

/** `tls` (with admin.authentication=mtls) puts a TLS front on each address (admin-tls-front.ts). */
export function startAdminServer(
  addresses: readonly ListenerAddress[],
  state: AdminState,
  tls: { configFor: (address: ListenerAddress) => TlsServerConfig; log: Logger } | null = null,
): AdminServer {
  const servers: ReturnType<typeof Bun.serve>[] = [];
  const fronts: TlsFront[] = [];
  try {
    for (const address of addresses) {
      let front: TlsFront | null = null;
      const server = Bun.serve({
        // An empty host binds every interface, as for the Kafka listeners.
        hostname: tls !== null ? "127.0.0.1" : address.host === "" ? "0.0.0.0" : address.host,
        port: tls !== null ? 0 : address.port,
        fetch: (request, server) => {
          const ip = server.requestIP(request);
          if (front === null) return answer(request, state, { host: ip?.address ?? "" });
          const peer = ip === null ? undefined : front.peerOf(ip.port);
          // Only connections forwarded by the front may use the loopback port.
          if (peer === undefined) return new Response("forbidden\n", { status: 403 });
          return answer(request, state, { host: peer.host, certificatePrincipal: peer.principal });
        },
        // A scrape of a large broker and a record browser page take a while to compute.
        idleTimeout: 60,
        // The only bodies are the console's config forms (one key and value each).
        maxRequestBodySize: CONFIG_FORM_BYTES_MAX,
      });
      servers.push(server);
      if (tls !== null) {
        const host = address.host === "" ? "0.0.0.0" : address.host;
        const config = tls.configFor(address);
        front = startTlsFront({ host, port: address.port }, config, server.port!, tls.log);
        fronts.push(front);
      }
    }
  } catch (error) {
    // One address failing to bind (in use) must not leave the others bound.
    for (const f of fronts) f.stop();
    for (const s of servers) void s.stop(true);
    throw error;
  }
  const bound = tls !== null ? fronts : servers;
  return {
    bound: bound.map((s) => ({ host: s.hostname ?? "", port: s.port ?? 0 })),
    stop: async () => {
      for (const f of fronts) f.stop();
      await Promise.all(servers.map((s) => s.stop(true)));
    },
  };
}

async function answer(request: Request, state: AdminState, caller: Caller): Promise<Response> {
  const url = new URL(request.url);
  const isRead = request.method === "GET" || request.method === "HEAD";
  if (isRead && url.pathname === "/health/live") return new Response("live\n", { headers: TEXT });
  if (isRead && url.pathname === "/health/ready") {
    return isReady(state)
      ? new Response("ready\n", { headers: TEXT })
      : new Response("not ready\n", { status: 503, headers: TEXT });
  }
  let principal = "User:ANONYMOUS";
  if (state.authentication === "mtls") {
    if (!caller.certificatePrincipal) {
      return new Response("client certificate required\n", { status: 403, headers: TEXT });
    }
    principal = caller.certificatePrincipal;
  } else if (state.authentication === "scram") {
    if (state.authenticator === null) {
      return new Response("starting\n", { status: 503, headers: TEXT });
    }
    const login = await state.authenticator.login(request);
    if (!login.ok) return refusedLogin(login.status);
    principal = login.principal;
  }
  if (url.pathname === "/metrics") {
    if (!isRead) return notAllowed();
    const body = metricsText(state.metrics, state.sources, state.eventLoop);
    return new Response(body, { headers: { "content-type": PROMETHEUS_CONTENT_TYPE } });
  }
  if (state.pages !== null) return await state.pages(request, url, principal, caller.host);
  if (!isRead) return notAllowed();
  return new Response("not found\n", { status: 404, headers: TEXT });
}

function notAllowed(): Response {
  return new Response("method not allowed\n", { status: 405, headers: { allow: "GET, HEAD" } });
}

function refusedLogin(status: 401 | 429): Response {
  if (status === 429) {
    return new Response("too many logins in progress\n", {
      status,
      headers: { ...TEXT, "retry-after": "1" },
    });
  }
  return new Response("authentication required\n", {
    status,
    headers: { ...TEXT, "www-authenticate": 'Basic realm="quill", charset="UTF-8"' },
  });
}

function isReady(state: AdminState): boolean {
  return state.ready && state.sources?.services.metadataCache.isCaughtUp !== false;
}
