/**
 * A small Kafka client for broker-to-broker traffic: the controller's LeaderAndIsr,
 * UpdateMetadata and StopReplica, a broker's ControlledShutdown and AlterPartition, and
 * followers' fetches. One TCP connection (Bun.connect), requests encoded with the generated
 * codecs, pipelined, and answered in order, as Kafka's protocol guarantees per connection.
 *
 * Bun's socket.write sends what it can and returns the count without buffering the rest
 * (docs/bun.md, Sockets), so unsent bytes wait here and go out on `drain`. A request that
 * times out closes the connection: later responses could no longer be matched to requests
 * without reading the skipped one, and the peer may be gone.
 *
 * A SASL session with a lifetime (SaslAuthenticate v1+, the broker's connections.max.reauth.ms)
 * is renewed on the same connection before it ends (KIP-368, as Kafka's client): once 85-95 %
 * of the lifetime has passed, the next request waits while the requests in flight are answered
 * and the handshake and authentication run again, then goes out with the others held meanwhile,
 * in the order they were made.
 */
import type { Socket } from "bun";
import {
  type ApiKeyNumber,
  type ApiMessages,
  decodeResponse,
  decodeResponseHeader,
  encodeRequest,
  encodeRequestHeader,
  type Init,
} from "../protocol/generated/index.ts";
import { Reader } from "../protocol/reader.ts";
import { Writer } from "../protocol/writer.ts";

/** Largest response accepted (a follower's fetch answer is bounded by replica.fetch.max.bytes). */
export const RESPONSE_BYTES_MAX = 256 * 1024 * 1024;
/** Requests in flight on one connection. */
export const IN_FLIGHT_MAX = 1_000;

/** The connection failed or closed, or a request timed out; the caller may reconnect and retry. */
export class InterBrokerError extends Error {
  override readonly name = "InterBrokerError";

  /** Nothing listens at the address (ECONNREFUSED): the broker's process is gone or not up. */
  get refused(): boolean {
    return (this.cause as { code?: unknown } | undefined)?.code === "ECONNREFUSED";
  }
}

/** TLS for a client connection (the `quill` client commands, and brokers on a TLS listener). */
export interface ClientTlsOptions {
  /** PEM certificates to trust; absent: the system's roots. */
  readonly ca?: string;
  /** PEM certificate chain and key for client authentication (mTLS). */
  readonly cert?: string;
  readonly key?: string;
  readonly passphrase?: string;
  /** Check the certificate names the host (ssl.endpoint.identification.algorithm=https). */
  readonly verifyHostname: boolean;
}

/** What a SASL exchange needs of a connection: requests sent at once, never held. */
export interface SaslChannel {
  request: InterBrokerClient["request"];
}

/**
 * Runs a SASL exchange on `channel`; resolves with the session lifetime the broker answered
 * (ms, 0: the session never expires), rejects when the peer refuses the credentials.
 */
export type SaslExchangeRunner = (channel: SaslChannel, timeoutMs: number) => Promise<number>;

/**
 * How a broker's connections to other brokers protect themselves, from the inter-broker
 * listener's protocol: TLS, and a SASL exchange run on each new connection before it is used
 * (and again before its session ends).
 */
export interface InterBrokerSecurity {
  readonly tls?: ClientTlsOptions;
  readonly authenticate?: SaslExchangeRunner;
}

/** Plain TCP, no authentication: the PLAINTEXT protocol. */
export const PLAINTEXT_SECURITY: InterBrokerSecurity = {};

export interface InterBrokerClientOptions extends InterBrokerSecurity {
  /** The client id in request headers, e.g. "quill-controller-3". */
  readonly clientId: string;
  readonly connectTimeoutMs: number;
}

interface Pending {
  readonly apiKey: number;
  readonly apiVersion: number;
  readonly correlationId: number;
  readonly resolve: (body: unknown) => void;
  readonly reject: (error: Error) => void;
  readonly timer: ReturnType<typeof setTimeout>;
}

export class InterBrokerClient {
  private readonly pending: Pending[] = [];
  private readonly unsent: Uint8Array[] = [];
  private chunks: Uint8Array[] = [];
  private bufferedBytes = 0;
  private nextCorrelationId = 1;
  private closedError: InterBrokerError | null = null;
  private socket: Socket<undefined> | null = null;
  /** The SASL session's renewal: when it is due (Date.now() ms) and how it is run. */
  private session: { renewAtMs: number; exchange: SaslExchangeRunner; timeoutMs: number } | null =
    null;
  /** Set while the session is being renewed: requests made meanwhile, in order. */
  private held: (() => void)[] | null = null;
  private idleWaiters: (() => void)[] = [];
  private readonly channel: SaslChannel = {
    request: (apiKey, apiVersion, body, timeoutMs) =>
      this.send(apiKey, apiVersion, body, timeoutMs),
  };

  private constructor(
    readonly host: string,
    readonly port: number,
    private readonly options: InterBrokerClientOptions,
  ) {}

  /**
   * Connects and authenticates; rejects with InterBrokerError when the broker does not accept
   * in time or refuses the credentials (the caller retries as after any connection failure).
   */
  static async connect(
    host: string,
    port: number,
    options: InterBrokerClientOptions,
  ): Promise<InterBrokerClient> {
    const client = await InterBrokerClient.open(host, port, options);
    if (options.authenticate === undefined) return client;
    try {
      await client.authenticate(options.authenticate, options.connectTimeoutMs);
    } catch (error) {
      client.close();
      if (error instanceof InterBrokerError) throw error;
      throw new InterBrokerError(`authenticating to ${host}:${port} failed: ${String(error)}`, {
        cause: error,
      });
    }
    return client;
  }

  private static async open(
    host: string,
    port: number,
    options: InterBrokerClientOptions,
  ): Promise<InterBrokerClient> {
    const client = new InterBrokerClient(host, port, options);
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () =>
          reject(
            new InterBrokerError(
              `connecting to ${host}:${port} took over ${options.connectTimeoutMs} ms`,
            ),
          ),
        options.connectTimeoutMs,
      );
    });
    const tls = options.tls;
    // Bun takes writes before the handshake ends as 0 bytes written, so the connection counts
    // as open only once the handshake callback has decided on the server's certificate.
    let handshaken: (error: Error | null) => void = () => {};
    const handshake = new Promise<void>((resolve, reject) => {
      handshaken = (error) => (error === null ? resolve() : reject(error));
    });
    const connecting = Bun.connect<undefined>({
      hostname: host,
      port,
      tls: tls === undefined ? undefined : bunTlsOptions(host, tls),
      socket: {
        handshake: (_socket, _success, authorizationError) =>
          handshaken(certificateRefusal(host, port, tls, authorizationError)),
        data: (_socket, data) => client.onData(data),
        drain: () => client.flush(),
        close: () => {
          const closed = new InterBrokerError(`${host}:${port} closed the connection`);
          handshaken(closed);
          client.fail(closed);
        },
        error: (_socket, error) => {
          client.fail(
            new InterBrokerError(`connection to ${host}:${port} failed: ${error.message}`),
          );
        },
      },
    });
    void handshake.catch(() => {});
    try {
      client.socket = await Promise.race([connecting, timeout]);
      if (tls !== undefined) await Promise.race([handshake, timeout]);
    } catch (error) {
      void connecting.then(
        (s) => s.end(),
        () => {},
      );
      if (error instanceof InterBrokerError) throw error;
      throw new InterBrokerError(`cannot connect to ${host}:${port}: ${String(error)}`, {
        cause: error,
      });
    } finally {
      clearTimeout(timer);
    }
    client.socket.setNoDelay(true);
    return client;
  }

  get isClosed(): boolean {
    return this.closedError !== null;
  }

  /**
   * Runs a SASL exchange on this new connection and, when the broker answers a session
   * lifetime, renews the session with the same exchange before that lifetime ends.
   */
  async authenticate(exchange: SaslExchangeRunner, timeoutMs: number): Promise<void> {
    this.keepSession(await exchange(this.channel, timeoutMs), exchange, timeoutMs);
  }

  private keepSession(lifetimeMs: number, exchange: SaslExchangeRunner, timeoutMs: number) {
    // As Kafka's SaslClientAuthenticator: at a random point in 85-95 % of the lifetime, so the
    // connections of many clients do not renew at once.
    const renewInMs = lifetimeMs * (0.85 + 0.1 * Math.random());
    this.session =
      lifetimeMs > 0 ? { renewAtMs: Date.now() + renewInMs, exchange, timeoutMs } : null;
  }

  /**
   * Runs `send` now, or after the session's renewal when one is under way or due. Renewal
   * waits for the answers in flight (the broker must see no other request between the
   * handshake and the end of the exchange); a refused renewal closes the connection, failing
   * the held requests, as an expired session would.
   */
  private whenAuthenticated(send: () => void): void {
    if (this.held === null && this.session !== null && Date.now() >= this.session.renewAtMs) {
      this.held = [];
      void this.renewSession(this.session);
    }
    if (this.held === null) send();
    else this.held.push(send);
  }

  private async renewSession(session: NonNullable<typeof this.session>): Promise<void> {
    try {
      while (this.pending.length > 0 && this.closedError === null) {
        await new Promise<void>((resolve) => this.idleWaiters.push(resolve));
      }
      const lifetimeMs = await session.exchange(this.channel, session.timeoutMs);
      this.keepSession(lifetimeMs, session.exchange, session.timeoutMs);
    } catch (error) {
      this.fail(
        new InterBrokerError(`re-authenticating to ${this.host}:${this.port} failed: ${error}`, {
          cause: error,
        }),
      );
    } finally {
      const held = this.held ?? [];
      this.held = null;
      for (const send of held) send();
    }
  }

  /** Sends one request and resolves with the decoded response body. */
  request<K extends ApiKeyNumber>(
    apiKey: K,
    apiVersion: number,
    body: Init<ApiMessages[K]["request"]>,
    timeoutMs: number,
  ): Promise<ApiMessages[K]["response"]> {
    if (this.closedError !== null) return Promise.reject(this.closedError);
    return new Promise((resolve, reject) =>
      this.whenAuthenticated(() =>
        this.send(apiKey, apiVersion, body, timeoutMs).then(resolve, reject),
      ),
    );
  }

  private send<K extends ApiKeyNumber>(
    apiKey: K,
    apiVersion: number,
    body: Init<ApiMessages[K]["request"]>,
    timeoutMs: number,
  ): Promise<ApiMessages[K]["response"]> {
    if (this.closedError !== null) return Promise.reject(this.closedError);
    if (this.pending.length >= IN_FLIGHT_MAX) {
      return Promise.reject(new InterBrokerError(`${IN_FLIGHT_MAX} requests already in flight`));
    }
    const correlationId = this.nextCorrelationId;
    const frame = this.encodeFrame(apiKey, apiVersion, body);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.fail(
          new InterBrokerError(
            `no answer from ${this.host}:${this.port} to API key ` +
              `${apiKey} within ${timeoutMs} ms`,
          ),
        );
      }, timeoutMs);
      this.pending.push({
        apiKey,
        apiVersion,
        correlationId,
        reject,
        timer,
        resolve: resolve as (body: unknown) => void,
      });
      this.unsent.push(frame);
      this.flush();
    });
  }

  /**
   * Sends a request the broker does not answer (Produce with acks=0): nothing waits in
   * `pending`, so later answers still match their requests in order.
   */
  sendWithoutResponse<K extends ApiKeyNumber>(
    apiKey: K,
    apiVersion: number,
    body: Init<ApiMessages[K]["request"]>,
  ): void {
    if (this.closedError !== null) throw this.closedError;
    this.whenAuthenticated(() => {
      if (this.closedError !== null) return;
      this.unsent.push(this.encodeFrame(apiKey, apiVersion, body));
      this.flush();
    });
  }

  /** Bytes not yet taken by the socket: a caller sending without answers waits on this. */
  get unsentBytes(): number {
    let total = 0;
    for (const chunk of this.unsent) total += chunk.byteLength;
    return total;
  }

  private encodeFrame<K extends ApiKeyNumber>(
    apiKey: K,
    apiVersion: number,
    body: Init<ApiMessages[K]["request"]>,
  ): Uint8Array {
    const correlationId = this.nextCorrelationId;
    this.nextCorrelationId = (this.nextCorrelationId + 1) & 0x7fffffff;
    const w = new Writer();
    w.int32(0);
    encodeRequestHeader(w, {
      requestApiKey: apiKey,
      requestApiVersion: apiVersion,
      correlationId,
      clientId: this.options.clientId,
    });
    encodeRequest(apiKey, apiVersion, w, body);
    const frame = w.toBytes();
    new DataView(frame.buffer, frame.byteOffset, 4).setInt32(0, frame.byteLength - 4);
    return frame;
  }

  /** Closes the connection; requests in flight fail. */
  close(): void {
    this.fail(new InterBrokerError(`connection to ${this.host}:${this.port} closed`));
  }

  private flush(): void {
    const socket = this.socket;
    if (socket === null || this.closedError !== null) return;
    while (this.unsent.length > 0) {
      const next = this.unsent[0]!;
      const written = socket.write(next);
      if (written < next.byteLength) {
        this.unsent[0] = next.subarray(Math.max(0, written));
        return;
      }
      this.unsent.shift();
    }
  }

  private onData(data: Uint8Array): void {
    this.chunks.push(data);
    this.bufferedBytes += data.byteLength;
    while (this.bufferedBytes >= 4) {
      const sizeBytes = this.frameSizeBytes();
      if (sizeBytes < 0 || sizeBytes > RESPONSE_BYTES_MAX) {
        this.fail(new InterBrokerError(`${this.host}:${this.port} sent a ${sizeBytes}-byte frame`));
        return;
      }
      // Join the chunks only once the whole frame is here: joining on every read copied a
      // large response (a fetch of many MB arriving in 64 KB reads) quadratically often.
      if (this.bufferedBytes < 4 + sizeBytes) return;
      const buffered = this.contiguous();
      const frame = buffered.subarray(4, 4 + sizeBytes);
      const rest = buffered.subarray(4 + sizeBytes);
      this.chunks = rest.byteLength > 0 ? [rest] : [];
      this.bufferedBytes = rest.byteLength;
      this.deliver(frame);
    }
  }

  /** The size prefix of the next frame (at least 4 bytes are buffered). */
  private frameSizeBytes(): number {
    const first = this.chunks[0]!.byteLength >= 4 ? this.chunks[0]! : this.contiguous();
    return new DataView(first.buffer, first.byteOffset, 4).getInt32(0);
  }

  /** Joins the buffered chunks into one view (only when a frame spans several reads). */
  private contiguous(): Uint8Array {
    if (this.chunks.length === 1) return this.chunks[0]!;
    const joined = new Uint8Array(this.bufferedBytes);
    let at = 0;
    for (const chunk of this.chunks) {
      joined.set(chunk, at);
      at += chunk.byteLength;
    }
    this.chunks = [joined];
    return joined;
  }

  private deliver(frame: Uint8Array): void {
    const p = this.pending.shift();
    if (p === undefined) {
      this.fail(new InterBrokerError(`${this.host}:${this.port} answered an unsent request`));
      return;
    }
    clearTimeout(p.timer);
    if (this.pending.length === 0) this.wakeIdleWaiters();
    try {
      const r = new Reader(frame);
      const correlationId = decodeResponseHeader(r, p.apiKey, p.apiVersion);
      if (correlationId !== p.correlationId) {
        throw new InterBrokerError(`correlation id ${correlationId}, expected ${p.correlationId}`);
      }
      p.resolve(decodeResponse(p.apiKey as ApiKeyNumber, p.apiVersion, r));
    } catch (error) {
      p.reject(error instanceof Error ? error : new Error(String(error)));
      this.fail(new InterBrokerError(`undecodable response from ${this.host}:${this.port}`));
    }
  }

  private fail(error: InterBrokerError): void {
    if (this.closedError !== null) return;
    this.closedError = error;
    this.socket?.end();
    for (const p of this.pending.splice(0)) {
      clearTimeout(p.timer);
      p.reject(error);
    }
    this.unsent.length = 0;
    this.chunks = [];
    this.bufferedBytes = 0;
    this.wakeIdleWaiters();
  }

  private wakeIdleWaiters(): void {
    for (const wake of this.idleWaiters.splice(0)) wake();
  }
}

/** Bun's options; the certificate is judged in the handshake callback, not by Bun. */
function bunTlsOptions(host: string, tls: ClientTlsOptions) {
  const ipAddress = /^[0-9.]+$/.test(host) || host.includes(":");
  return {
    ca: tls.ca,
    cert: tls.cert,
    key: tls.key,
    passphrase: tls.passphrase,
    serverName: ipAddress ? undefined : host,
    rejectUnauthorized: false,
  };
}

/**
 * Why the server's certificate is refused, or null. Bun is told not to reject (so the chain
 * check and the host name check can be told apart): an untrusted chain always fails; a
 * certificate for another name fails unless host name verification is off, as Kafka's
 * `ssl.endpoint.identification.algorithm=` (empty) allows.
 */
function certificateRefusal(
  host: string,
  port: number,
  tls: ClientTlsOptions | undefined,
  authorizationError: Error | null,
): InterBrokerError | null {
  if (authorizationError === null || tls === undefined) return null;
  const code = (authorizationError as { code?: string }).code ?? authorizationError.message;
  if (code === "ERR_TLS_CERT_ALTNAME_INVALID" && !tls.verifyHostname) return null;
  return new InterBrokerError(`TLS handshake with ${host}:${port} failed: ${code}`);
}
