/**
 * The broker's TCP listener on Bun.listen. It accepts connections up to `max.connections`, gives
 * each a Connection (framing, ordered pipelined responses, flow control), closes connections idle
 * for `connections.max.idle.ms`, and shuts down gracefully: stop accepting, let in-flight
 * requests finish and their responses flush, then close.
 *
 * It knows nothing of Kafka APIs; requests go to the RequestHandler it is given.
 */
import type { Socket, TCPSocketListener } from "bun";
import { peerCertificate } from "../security/peer-certificate.ts";
import type { TlsServerConfig } from "../security/tls-server-config.ts";
import { assert } from "../util/assert.ts";
import type { Logger } from "../util/logger.ts";
import { Connection, type ConnectionOptions, type ConnectionSocket } from "./connection.ts";
import { type NetworkLimits, resolveNetworkLimits } from "./network-limits.ts";
import type { RequestHandler } from "./request-handler.ts";
import { createMemoryPool, type RequestMemoryPool } from "./request-memory-pool.ts";
import { isSendfileAvailable } from "./sendfile.ts";

export interface SocketServerOptions {
  readonly host: string;
  /** 0 picks a free port; `start()` returns the one bound. */
  readonly port: number;
  /** The listener's name, given to every connection; PLAINTEXT unless set. */
  readonly listenerName?: string;
  /** The listener's protocol; SASL ones admit only SASL requests until authenticated. */
  readonly securityProtocol?: string;
  /** Speak TLS with this key material and client-certificate policy (SSL, SASL_SSL). */
  readonly tls?: TlsServerConfig;
  readonly handler: RequestHandler;
  readonly limits?: Partial<NetworkLimits>;
  readonly logger: Logger;
  /**
   * Send file ranges with sendfile(2) (default, when libc has it) or with pread + write through
   * a buffer (`false`; also when the environment sets QUILL_NETWORK_SENDFILE=false).
   */
  readonly sendfileEnabled?: boolean;
  /**
   * The queued.max.request.bytes pool shared with other listeners; undefined: one of this
   * server's own from `limits`, null: none (unlimited).
   */
  readonly memoryPool?: RequestMemoryPool | null;
}

type ServerSocket = Socket<Connection | undefined>;

/** Rejections of connections over max.connections are logged at most this often. */
const REJECTION_LOG_INTERVAL_MS = 1000;

export class SocketServer {
  readonly limits: NetworkLimits;
  readonly sendfileEnabled: boolean;
  readonly memoryPool: RequestMemoryPool | null;
  private listener: TCPSocketListener<undefined> | null = null;
  private readonly connections = new Set<Connection>();
  private nextConnectionId = 1;
  private idleTimer: ReturnType<typeof setInterval> | null = null;
  private drainWaiter: (() => void) | null = null;
  private rejectedSinceLogCount = 0;
  private rejectionLoggedAtMs = 0;
  private tls: TlsServerConfig | undefined;
  private readonly connectionOptions: ConnectionOptions;

  constructor(private readonly options: SocketServerOptions) {
    this.limits = resolveNetworkLimits(options.limits);
    this.memoryPool =
      options.memoryPool !== undefined ? options.memoryPool : createMemoryPool(this.limits);
    const wanted = options.sendfileEnabled ?? process.env.QUILL_NETWORK_SENDFILE !== "false";
    // sendfile would put file bytes on the wire unencrypted: TLS streams ranges through a buffer.
    this.sendfileEnabled = wanted && isSendfileAvailable() && options.tls === undefined;
    this.tls = options.tls;
    this.connectionOptions = {
      listenerName: options.listenerName ?? "PLAINTEXT",
      securityProtocol: options.securityProtocol ?? "PLAINTEXT",
      handler: options.handler,
      limits: this.limits,
      logger: options.logger,
      sendfileEnabled: this.sendfileEnabled,
      ...(this.memoryPool === null ? {} : { memoryPool: this.memoryPool }),
    };
  }

  get connectionCount(): number {
    return this.connections.size;
  }

  /** Binds and starts accepting; resolves with the address bound (port 0 picks one). */
  async start(): Promise<{ host: string; port: number }> {
    assert(this.listener === null, "SocketServer started twice");
    const listener = this.listen(this.options.port);
    this.listener = listener;
    const sweepMs = Math.max(10, Math.min(this.limits.connectionsMaxIdleMs / 4, 30000));
    this.idleTimer = setInterval(() => this.closeIdleConnections(), sweepMs);
    this.idleTimer.unref();
    return { host: listener.hostname, port: listener.port };
  }

  /**
   * New key material for connections accepted from now on (open ones keep theirs): Bun cannot
   * change a listener's TLS context, so the port is closed and bound again at once with the new
   * one. A connection attempt in between is refused and retried by the client.
   */
  reloadTls(tls: TlsServerConfig): void {
    const old = this.listener;
    assert(old !== null && this.tls !== undefined, "reloadTls on a plaintext or stopped server");
    const previous = this.tls;
    old.stop(false);
    this.tls = tls;
    try {
      this.listener = this.listen(old.port);
    } catch (error) {
      this.tls = previous;
      this.listener = this.listen(old.port);
      throw error;
    }
  }

  private listen(port: number): TCPSocketListener<undefined> {
    const listener = Bun.listen<Connection | undefined>({
      hostname: this.options.host,
      port,
      data: undefined,
      ...(this.tls === undefined ? {} : { tls: this.tls.options }),
      socket: {
        open: (socket) => this.onOpen(socket),
        handshake: (socket, success, error) => this.onHandshake(socket, success, error),
        data: (socket, data) => socket.data?.onData(data),
        drain: (socket) => socket.data?.onDrain(),
        close: (socket) => this.onSocketClose(socket),
        error: (socket, error) => socket.data?.destroy(`socket error: ${error.message}`),
      },
    });
    return listener as unknown as TCPSocketListener<undefined>;
  }

  /**
   * Applies ssl.client.auth once the TLS handshake is done: a certificate that is required and
   * missing, or presented and not trusted, closes the connection; a trusted one names the
   * connection's principal through ssl.principal.mapping.rules (as Kafka's
   * DefaultKafkaPrincipalBuilder).
   */
  private onHandshake(socket: ServerSocket, success: boolean, error: Error | null): void {
    const connection = socket.data;
    const tls = this.tls;
    if (connection === undefined || tls === undefined) return;
    if (!success) {
      connection.destroy(`TLS handshake failed: ${error?.message ?? "unknown reason"}`);
      return;
    }
    if (tls.clientAuth === "none") return;
    const certificate = socket.getPeerCertificate() as { raw?: Uint8Array } | undefined;
    const peer = peerCertificate(certificate?.raw, error, tls.principalMapper);
    if (peer.kind === "absent") {
      if (tls.clientAuth === "required") connection.destroy("no client certificate (required)");
    } else if (peer.kind === "refused") {
      connection.destroy(peer.reason);
    } else {
      connection.principal = peer.principal;
    }
  }

  /** Stops accepting new connections; existing ones carry on. */
  stopAccepting(): void {
    this.listener?.stop(false);
  }

  /**
   * Stops accepting, stops reading requests, waits until every request already handed to the
   * handler has its response written, then closes each connection. Connections still busy after
   * `timeoutMs` are closed anyway.
   */
  async drainAndClose(timeoutMs: number): Promise<void> {
    this.stopAccepting();
    if (this.idleTimer !== null) clearInterval(this.idleTimer);
    this.idleTimer = null;
    const drained = new Promise<void>((resolve) => (this.drainWaiter = resolve));
    for (const connection of [...this.connections]) connection.beginDrain();
    this.resolveDrainIfDone();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timedOut = new Promise<void>((resolve) => (timer = setTimeout(resolve, timeoutMs)));
    await Promise.race([drained, timedOut]);
    clearTimeout(timer);
    for (const connection of [...this.connections]) {
      connection.destroy(`still busy ${timeoutMs} ms after shutdown began`);
    }
    this.connections.clear();
    this.drainWaiter = null;
  }

  private onOpen(socket: ServerSocket): void {
    if (this.connections.size >= this.limits.maxConnections || this.drainWaiter !== null) {
      this.logRejection(socket);
      socket.end();
      return;
    }
    socket.setNoDelay(true);
    const peer = {
      id: this.nextConnectionId++,
      remoteAddress: socket.remoteAddress,
      remotePort: socket.remotePort,
    };
    const connection = new Connection(
      socket as unknown as ConnectionSocket,
      peer,
      this.connectionOptions,
    );
    socket.data = connection;
    this.connections.add(connection);
  }

  private onSocketClose(socket: ServerSocket): void {
    const connection = socket.data;
    if (connection === undefined) return;
    connection.onClosed();
    this.connections.delete(connection);
    this.resolveDrainIfDone();
  }

  private resolveDrainIfDone(): void {
    if (this.drainWaiter !== null && this.connections.size === 0) this.drainWaiter();
  }

  private closeIdleConnections(): void {
    const idleBeforeMs = Date.now() - this.limits.connectionsMaxIdleMs;
    for (const connection of [...this.connections]) {
      if (connection.isIdle && connection.lastActiveMs < idleBeforeMs) connection.destroy();
    }
  }

  private logRejection(socket: ServerSocket): void {
    this.rejectedSinceLogCount++;
    const nowMs = Date.now();
    if (nowMs - this.rejectionLoggedAtMs < REJECTION_LOG_INTERVAL_MS) return;
    this.options.logger.warn(
      `Refusing connection from ${socket.remoteAddress}:${socket.remotePort}: ` +
        `max.connections ${this.limits.maxConnections} reached ` +
        `(${this.rejectedSinceLogCount} refused since the last such line)`,
    );
    this.rejectedSinceLogCount = 0;
    this.rejectionLoggedAtMs = nowMs;
  }
}
