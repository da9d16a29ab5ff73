import type { ListenerAddress } from "../config/listeners.ts";
import type { BrokerMetrics } from "../server/broker-metrics.ts";
import { metricsText, PROMETHEUS_CONTENT_TYPE } from "./metrics-text.ts";

/**
 * The admin HTTP listener (`admin.listeners`, `--admin`), served with Bun.serve beside the Kafka
 * listeners and off unless configured:
 *
 * - `/health/live`: 200 while the process serves HTTP at all (a hung event loop answers nothing).
 * - `/health/ready`: 200 once the broker serves Kafka requests (logs recovered, listeners bound,
 *   registered in ZooKeeper in a cluster) and until it starts stopping; 503 before and after.
 * - `/metrics`: the counters in Prometheus' text format.
 *
 * It starts first, so a supervisor sees "live, not ready" during a long log recovery.
 */
export interface AdminState {
  readonly metrics: BrokerMetrics;
  /** Whether Kafka clients are being served; see the ready rule above. */
  ready: boolean;
  /** Whether a topic still exists, so a deleted topic's counters go; null before metadata. */
  topicExists: ((topic: string) => boolean) | null;
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
      return state.ready
        ? new Response("ready\n", { headers: TEXT })
        : new Response("not ready\n", { status: 503, headers: TEXT });
    case "/metrics": {
      const body = metricsText(state.metrics, state.topicExists ?? (() => true));
      return new Response(body, { headers: { "content-type": PROMETHEUS_CONTENT_TYPE } });
    }
    default:
      return new Response("not found\n", { status: 404, headers: TEXT });
  }
}
