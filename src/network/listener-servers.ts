/**
 * One SocketServer per configured listener (Kafka's `listeners`), each telling its connections
 * which listener they came through, so Metadata can answer with that listener's endpoints.
 */
import type { Listener } from "../config/listeners.ts";
import type { TlsServerConfig } from "../security/tls-server-config.ts";
import type { Logger } from "../util/logger.ts";
import { type NetworkLimits, resolveNetworkLimits } from "./network-limits.ts";
import type { RequestHandler } from "./request-handler.ts";
import { createMemoryPool, type RequestMemoryPool } from "./request-memory-pool.ts";
import { SocketServer } from "./socket-server.ts";

export interface BoundListener extends Listener {
  /** The port bound: the configured one, or the one picked for port 0. */
  readonly port: number;
}

export type TlsFor = (listener: Listener) => TlsServerConfig;

const usesTls = (l: Listener) => l.securityProtocol === "SSL" || l.securityProtocol === "SASL_SSL";

export class ListenerServers {
  private constructor(
    private readonly servers: readonly SocketServer[],
    readonly bound: readonly BoundListener[],
    private readonly tlsFor: TlsFor,
    /** queued.max.request.bytes, shared by every listener; null when unlimited. */
    readonly memoryPool: RequestMemoryPool | null,
  ) {}

  /**
   * Binds every listener in order; if one cannot bind, those already bound are closed.
   * `tlsFor` gives the TLS settings of a listener that speaks TLS (SSL, SASL_SSL).
   */
  static async start(
    listeners: readonly Listener[],
    handler: RequestHandler,
    limits: Partial<NetworkLimits>,
    logger: Logger,
    tlsFor: TlsFor,
  ): Promise<ListenerServers> {
    const servers: SocketServer[] = [];
    const bound: BoundListener[] = [];
    // One pool for every listener, as Kafka's SocketServer shares one MemoryPool.
    const memoryPool = createMemoryPool(resolveNetworkLimits(limits));
    try {
      for (const listener of listeners) {
        const server = new SocketServer({
          host: listener.host,
          port: listener.port,
          listenerName: listener.listenerName,
          securityProtocol: listener.securityProtocol,
          handler,
          limits,
          logger,
          memoryPool,
          ...(usesTls(listener) ? { tls: tlsFor(listener) } : {}),
        });
        const address = await server.start();
        servers.push(server);
        bound.push({ ...listener, port: address.port });
      }
    } catch (error) {
      for (const server of servers) await server.drainAndClose(0);
      throw error;
    }
    return new ListenerServers(servers, bound, tlsFor, memoryPool);
  }

  /**
   * Reads every TLS listener's key material again and serves new connections with it (SIGHUP).
   * All material is read before any listener changes, so a bad file changes nothing.
   */
  reloadTls(): string[] {
    const reloads = this.bound.flatMap((l, i) =>
      usesTls(l) ? [{ l, i, tls: this.tlsFor(l) }] : [],
    );
    for (const { i, tls } of reloads) this.servers[i]!.reloadTls(tls);
    return reloads.map(({ l }) => l.listenerName);
  }

  /** Open connections per listener, in the configured order. */
  connectionCounts(): { listenerName: string; count: number }[] {
    return this.bound.map((l, i) => ({
      listenerName: l.listenerName,
      count: this.servers[i]!.connectionCount,
    }));
  }

  get connectionCount(): number {
    return this.servers.reduce((sum, s) => sum + s.connectionCount, 0);
  }

  stopAccepting(): void {
    for (const server of this.servers) server.stopAccepting();
  }

  /** Drains every listener at once, each within `timeoutMs`. */
  async drainAndClose(timeoutMs: number): Promise<void> {
    await Promise.all(this.servers.map((s) => s.drainAndClose(timeoutMs)));
  }
}
