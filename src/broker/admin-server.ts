import type { ListenerAddress } from "../config/listeners.ts";
import type { BrokerMetrics } from "../server/broker-metrics.ts";
import type { EventLoopMonitor } from "../util/event-loop-monitor.ts";
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
}

export interface AdminServer {
  readonly bound: readonly { host: string; port: number }[];
  stop(): Promise<void>;
}

const TEXT = { "content-type": "text/plain; charset=utf-8" };

export function startAdminServer(
  addresses: readonly ListenerAddress[],
  state: AdminState,
): AdminServer {
  const servers: ReturnType<typeof Bun.serve>[] = [];
  try {
    for (const address of addresses) {
      servers.push(
        Bun.serve({
          // An empty host binds every interface, as for the Kafka listeners.
          hostname: address.host === "" ? "0.0.0.0" : address.host,
          port: address.port,
          fetch: (request) => answer(request, state),
        }),
      );
    }
  } catch (error) {
    // One address failing to bind (in use) must not leave the others bound.
    for (const s of servers) void s.stop(true);
    throw error;
  }
  return {
    bound: servers.map((s) => ({ host: s.hostname ?? "", port: s.port ?? 0 })),
    stop: async () => {
      await Promise.all(servers.map((s) => s.stop(true)));
    },
  };
}

function answer(request: Request, state: AdminState): Response {
  if (request.method !== "GET" && request.method !== "HEAD") {
    return new Response("method not allowed\n", { status: 405, headers: { allow: "GET, HEAD" } });
  }
  switch (new URL(request.url).pathname) {
    case "/health/live":
      return new Response("live\n", { headers: TEXT });
    case "/health/ready":
      return isReady(state)
        ? new Response("ready\n", { headers: TEXT })
        : new Response("not ready\n", { status: 503, headers: TEXT });
    case "/metrics": {
      const body = metricsText(state.metrics, state.sources, state.eventLoop);
      return new Response(body, { headers: { "content-type": PROMETHEUS_CONTENT_TYPE } });
    }
    default:
      return new Response("not found\n", { status: 404, headers: TEXT });
  }
}

function isReady(state: AdminState): boolean {
  return state.ready && state.sources?.services.metadataCache.isCaughtUp !== false;
}
