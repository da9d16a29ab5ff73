/**
 * A promise-based ZooKeeper client over node-zookeeper-client (pure JS; the `zookeeper` npm
 * package is a V8 addon that Bun cannot load).
 *
 * What it adds to the library, and why:
 * - Every call has a deadline. The library queues requests forever while disconnected, so a
 *   broker whose ZooKeeper is down would hang; here a call first waits for a connection, then
 *   for its reply, and rejects with `ZooKeeperUnavailableError` when the deadline passes.
 *   Requests are only handed to the library while connected, so a timed-out call is not
 *   replayed minutes later when ZooKeeper comes back.
 * - Typed errors (`NoNodeError`, `NodeExistsError`, `BadVersionError`, ...).
 * - Reads whose connection broke under them are sent again once connected, within their
 *   deadline, as Kafka's ZooKeeper client retries requests after a connection loss. Writes are
 *   not: one may have been applied, and only its caller knows what a repeat would mean.
 * - Session expiry creates a new session and emits "session-recreated", so owners of ephemeral
 *   znodes and watches can register them again. The library itself just stops after expiry.
 * - A liveness probe: the library never notices a connection that silently stops answering
 *   (no read timeout), so the client pings through `exists` and drops such a connection, as
 *   the Java client does after two thirds of the session timeout.
 * - `barrier()`, after which the session's reads see every write acknowledged before it (reads
 *   alone may be answered by a server behind the leader), and a session made after an expiry
 *   starts from the last zxid the expired one saw.
 * - Chroots are created when missing, as Kafka does for `zookeeper.connect=host:port/chroot`.
 * - Conditional multi operations with `version: 0` work (the library turns 0 into -1).
 *
 * Threading: single event loop; calls may be issued concurrently and are pipelined on one
 * connection, and ZooKeeper answers one session's requests in order.
 */

import type { Client, Stat, Transaction } from "node-zookeeper-client";
import * as zookeeper from "node-zookeeper-client";
import { assert } from "../util/assert.ts";
import { Histogram, LATENCY_SECONDS_BOUNDS } from "../util/histogram.ts";
import { parseConnectString } from "./connect-string.ts";
import {
  CREATE_MODE_FLAGS,
  type CreateMode,
  parentPath,
  toBuffer,
  toWatchEvent,
  toZnodeStat,
  type Watcher,
  type ZnodeStat,
  type ZooKeeperOp,
  type ZooKeeperOpResult,
} from "./znode.ts";
import {
  ConnectionLossError,
  NodeExistsError,
  NoNodeError,
  ZooKeeperCode,
  ZooKeeperError,
  type ZooKeeperErrorContext,
  ZooKeeperUnavailableError,
  zooKeeperErrorFromCode,
} from "./zookeeper-errors.ts";

export interface ZooKeeperClientOptions {
  /** Requested session timeout; the server clamps it to its min/max session timeouts. */
  readonly sessionTimeoutMs: number;
  /** How long `connect` waits for the first session before it gives up. */
  readonly connectTimeoutMs: number;
  /** Default deadline of one call, waiting for a connection included. Default: session timeout. */
  readonly requestTimeoutMs?: number;
  /** Pause between reconnect attempts once every server has been tried. Default 200 ms. */
  readonly reconnectDelayMs?: number;
}

export type SessionEvent = "connected" | "disconnected" | "expired" | "session-recreated";

export interface CallOptions {
  /** Overrides the client's `requestTimeoutMs` for this call. */
  readonly timeoutMs?: number;
}

/**
 * ZooKeeper's `jute.maxbuffer` default is 0xfffff bytes; a bigger request makes the server drop
 * the connection, which would look like an outage, so multis are checked against this first.
 */
export const MAX_REQUEST_BYTES = 1_000_000;
/** Fixed per-operation overhead of a multi request: header, version, flags and the open ACL. */
const MULTI_OP_OVERHEAD_BYTES = 64;
const CLOSE_TIMEOUT_MS = 1_000;
/** Pause before a read lost with its connection is sent again (once connected). */
const READ_RETRY_DELAY_MS = 50;
const STATE_SYNC_CONNECTED = 3;
const STATE_DISCONNECTED = 0;
const STATE_EXPIRED = -122;
const MULTI_RESULT_ERROR_TYPE = -1;

type Done<T> = (error: unknown, value?: T) => void;

export class ZooKeeperClient {
  private raw: Client;
  private connected = false;
  private closed = false;
  /** Set after an expiry, so the next "connected" is also announced as a new session. */
  private sessionRecreated = false;
  /** Each request's round trip, in seconds, from issue to answer or error (not the timeouts). */
  readonly requestSeconds = new Histogram(LATENCY_SECONDS_BOUNDS);
  private readonly connectWaiters = new Set<() => void>();
  private readonly listeners = new Set<(event: SessionEvent) => void>();
  private readonly requestTimeoutMs: number;
  private livenessTimer: ReturnType<typeof setInterval> | null = null;
  private livenessProbeInFlight = false;
  /** The barrier not sent yet, which callers of `barrier()` join (null: none waiting). */
  private queuedBarrier: Promise<void> | null = null;
  private disconnectedAtMs = 0;
  /** When ZooKeeper last answered: a connection made, or a liveness probe answered. */
  private lastHeardMs = Date.now();

  private constructor(
    private readonly connectString: string,
    private readonly options: ZooKeeperClientOptions,
  ) {
    assert(
      options.sessionTimeoutMs > 0,
      `sessionTimeoutMs ${options.sessionTimeoutMs} must be > 0`,
    );
    assert(
      options.connectTimeoutMs > 0,
      `connectTimeoutMs ${options.connectTimeoutMs} must be > 0`,
    );
    this.requestTimeoutMs = options.requestTimeoutMs ?? options.sessionTimeoutMs;
    assert(this.requestTimeoutMs > 0, `requestTimeoutMs ${this.requestTimeoutMs} must be > 0`);
    this.raw = this.newSession();
  }

  /**
   * Connects to `host:port[,host:port][/chroot]` and resolves once a session exists; rejects with
   * `ZooKeeperUnavailableError` after `connectTimeoutMs`.
   */
  static async connect(
    connectString: string,
    options: ZooKeeperClientOptions,
  ): Promise<ZooKeeperClient> {
    const { hosts, chroot } = parseConnectString(connectString);
    if (chroot !== null) await ensureChroot(hosts, chroot, options);
    const client = new ZooKeeperClient(connectString, options);
    try {
      await client.waitConnected(Date.now() + options.connectTimeoutMs, { op: "connect" });
    } catch (error) {
      await client.close();
      throw error;
    }
    client.startLivenessProbe();
    return client;
  }

  /**
   * The session's state for metrics: "connected", "disconnected" (connection lost, session
   * alive), "expired" (a new session is being made) or "closed".
   */
  get sessionState(): "connected" | "disconnected" | "expired" | "closed" {
    if (this.closed) return "closed";
    if (this.connected) return "connected";
    return this.sessionRecreated ? "expired" : "disconnected";
  }

  get isConnected(): boolean {
    return this.connected;
  }

  /**
   * How long ZooKeeper has not answered this client (0 to a sixth of the session timeout while
   * all is well: the liveness probe's period). Once it reaches the session timeout, the server
   * has expired the session or will within one tick, unless the whole ensemble was down (it
   * then restarts session clocks): the client cannot tell which until it reconnects.
   */
  get silentForMs(): number {
    return Date.now() - this.lastHeardMs;
  }

  /**
   * The current session's id: what `ZnodeStat.ephemeralOwner` holds for its ephemeral znodes
   * (ZooKeeper's logs print it in hex).
   */
  get sessionId(): bigint {
    return this.raw.getSessionId().readBigInt64BE(0);
  }

  /** The session's password; with `sessionId` another client can take the session over. */
  get sessionPassword(): Uint8Array {
    return this.raw.getSessionPassword();
  }

  /** The negotiated session timeout (after the server's clamping), once connected. */
  get sessionTimeoutMs(): number {
    return this.raw.getSessionTimeout();
  }

  /**
   * Subscribes to session state changes; returns the unsubscribe function. "disconnected" and
   * "connected" bracket a connection loss within one session (its ephemerals and watches
   * survive). "expired" means the session is gone; "session-recreated" follows once a new one
   * is connected, and then ephemeral znodes and watches must be created again.
   */
  onSessionEvent(listener: (event: SessionEvent) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /**
   * Creates a znode and returns its path (with the sequence suffix for sequential modes).
   * With `createParents`, missing ancestors are created as empty persistent znodes.
   */
  async create(
    path: string,
    data: Uint8Array = new Uint8Array(0),
    options: CallOptions & { mode?: CreateMode; createParents?: boolean } = {},
  ): Promise<string> {
    const deadlineMs = this.deadline(options);
    const flag = CREATE_MODE_FLAGS[options.mode ?? "persistent"];
    const attempt = () => {
      return this.call<string>("create", path, deadlineMs, (raw, done) => {
        raw.create(path, toBuffer(data), flag, done);
      });
    };
    try {
      return await attempt();
    } catch (error) {
      if (!(error instanceof NoNodeError) || options.createParents !== true) throw error;
      await this.mkdirpUntil(parentPath(path), deadlineMs);
      return await attempt();
    }
  }

  /** Creates `path` and missing ancestors as empty persistent znodes; existing ones are fine. */
  async mkdirp(path: string, options: CallOptions = {}): Promise<void> {
    await this.mkdirpUntil(path, this.deadline(options));
  }

  async getData(
    path: string,
    options: CallOptions & { watch?: Watcher } = {},
  ): Promise<{ data: Uint8Array; stat: ZnodeStat }> {
    const watch = options.watch;
    return this.read("getData", path, this.deadline(options), (raw, done) => {
      const callback = (error: unknown, data?: Buffer, stat?: Stat) => {
        if (error) return done(error);
        done(null, { data: data ?? new Uint8Array(0), stat: toZnodeStat(stat!) });
      };
      if (watch === undefined) raw.getData(path, callback);
      else raw.getData(path, (event) => watch(toWatchEvent(event)), callback);
    });
  }

  /** Writes data; with `version`, only if the znode still has it (else BadVersionError). */
  async setData(
    path: string,
    data: Uint8Array,
    options: CallOptions & { version?: number } = {},
  ): Promise<ZnodeStat> {
    const version = options.version ?? -1;
    return this.call("setData", path, this.deadline(options), (raw, done) => {
      raw.setData(path, toBuffer(data), version, (error, stat) => {
        done(error, error ? undefined : toZnodeStat(stat));
      });
    });
  }

  /** The znode's stat, or null when it does not exist. A watch fires on create, change, delete. */
  async exists(
    path: string,
    options: CallOptions & { watch?: Watcher } = {},
  ): Promise<ZnodeStat | null> {
    const watch = options.watch;
    return this.read("exists", path, this.deadline(options), (raw, done) => {
      const callback = (error: unknown, stat?: Stat) => {
        done(error, error ? undefined : stat ? toZnodeStat(stat) : null);
      };
      if (watch === undefined) raw.exists(path, callback);
      else raw.exists(path, (event) => watch(toWatchEvent(event)), callback);
    });
  }

  async getChildren(
    path: string,
    options: CallOptions & { watch?: Watcher } = {},
  ): Promise<string[]> {
    const watch = options.watch;
    return this.read("getChildren", path, this.deadline(options), (raw, done) => {
      const callback = (error: unknown, children?: string[]) => done(error, children);
      if (watch === undefined) raw.getChildren(path, callback);
      else raw.getChildren(path, (event) => watch(toWatchEvent(event)), callback);
    });
  }

  /** Deletes a znode without children; with `version`, only if it still has that version. */
  async delete(path: string, options: CallOptions & { version?: number } = {}): Promise<void> {
    const version = options.version ?? -1;
    await this.call<void>("delete", path, this.deadline(options), (raw, done) => {
      raw.remove(path, version, (error) => done(error));
    });
  }

  /**
   * Applies all operations atomically in one round trip: all succeed or none does. On failure
   * the typed error of the failing operation is thrown, with its `opIndex` and `path`.
   */
  async multi(
    ops: readonly ZooKeeperOp[],
    options: CallOptions = {},
  ): Promise<ZooKeeperOpResult[]> {
    if (ops.length === 0) return [];
    const requestBytes = estimateMultiBytes(ops);
    if (requestBytes > MAX_REQUEST_BYTES) {
      const message =
        `multi of ${ops.length} operations is about ${requestBytes} bytes, ` +
        `over ${MAX_REQUEST_BYTES}`;
      throw new ZooKeeperError(ZooKeeperCode.BAD_ARGUMENTS, message, { op: "multi" });
    }
    return this.call("multi", ops[0].path, this.deadline(options), (raw, done) => {
      buildTransaction(raw, ops).commit((error, results: RawMultiResult[] | undefined) => {
        if (error) return done(multiError(error, ops, results));
        done(null, results!.map(toOpResult));
      });
    });
  }

  /**
   * Makes this session's later reads see every write ZooKeeper acknowledged (to any client)
   * before this call: a read is answered by the server the session is connected to, and a
   * follower may still be behind its leader (reads are not linearizable). The barrier is a
   * write that changes nothing (a multi of one `check` of the root, any version): a write is
   * ordered through the leader and committed by a quorum, which holds every write acknowledged
   * before it, and the server answers it only once it has applied everything up to it; the
   * session's next reads come after it (ZooKeeper answers a session in order), and a
   * reconnect only goes to a server at least as recent (the client sends the last zxid seen).
   * ZooKeeper's own `sync` is not used: it is not a quorum operation, so a server following a
   * leader that was deposed without knowing it yet still answers it with old data.
   *
   * Calls made before the next barrier is sent share it (it is sent after each of them asked).
   * It changes nothing, so it is sent again after a connection loss, within the deadline.
   */
  barrier(options: CallOptions = {}): Promise<void> {
    if (this.queuedBarrier !== null) return this.queuedBarrier;
    const deadlineMs = this.deadline(options);
    const check: readonly ZooKeeperOp[] = [{ type: "check", path: "/", version: -1 }];
    const barrier = Promise.resolve().then(async () => {
      this.queuedBarrier = null;
      // Changes nothing, so it goes the way of the reads: sent again after a connection loss.
      await this.read("multi", "/", deadlineMs, (raw, done) => {
        buildTransaction(raw, check).commit((error) => done(error ?? null));
      });
    });
    this.queuedBarrier = barrier;
    return barrier;
  }

  /**
   * Every znode under `path` (itself included), parents before children. One level is read at
   * a time, its getChildren calls pipelined. NoNode for a child deleted meanwhile is skipped.
   */
  async listSubtree(path: string, options: CallOptions = {}): Promise<string[]> {
    const deadlineMs = this.deadline(options);
    const result: string[] = [];
    let level = [path];
    while (level.length > 0) {
      result.push(...level);
      const childLists = await Promise.all(
        level.map((parent) => {
          return this.getChildren(parent, { timeoutMs: deadlineMs - Date.now() }).then(
            (children) =>
              children.map((child) => (parent === "/" ? `/${child}` : `${parent}/${child}`)),
            (error) => {
              if (error instanceof NoNodeError && parent !== path) return [];
              throw error;
            },
          );
        }),
      );
      level = childLists.flat();
    }
    return result;
  }

  /** Ends the session (its ephemeral znodes vanish at once) and stops reconnecting. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.livenessTimer !== null) clearInterval(this.livenessTimer);
    for (const wake of this.connectWaiters) wake();
    const raw = this.raw;
    if (!this.connected) {
      raw.close();
      return;
    }
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, CLOSE_TIMEOUT_MS);
      raw.once("disconnected", () => {
        clearTimeout(timer);
        resolve();
      });
      raw.close();
    });
    this.connected = false;
  }

  private deadline(options: CallOptions): number {
    return Date.now() + (options.timeoutMs ?? this.requestTimeoutMs);
  }

  private async mkdirpUntil(path: string, deadlineMs: number): Promise<void> {
    if (path === "/") return;
    // Creating an empty persistent znode may be repeated (one that exists counts as made), so
    // unlike other writes it is sent again after a connection loss, within its deadline.
    const create = async (): Promise<void> => {
      for (;;) {
        try {
          await this.call<string>("create", path, deadlineMs, (raw, done) => {
            raw.create(path, done);
          });
          return;
        } catch (error) {
          if (!(error instanceof ConnectionLossError) || Date.now() >= deadlineMs) throw error;
        }
      }
    };
    try {
      await create();
    } catch (error) {
      if (error instanceof NodeExistsError) return;
      if (!(error instanceof NoNodeError)) throw error;
      await this.mkdirpUntil(parentPath(path), deadlineMs);
      await create().catch((again) => {
        if (!(again instanceof NodeExistsError)) throw again;
      });
    }
  }

  /**
   * Issues one library call once a session is connected, and settles it by `deadlineMs` at the
   * latest. Library errors become typed ZooKeeper errors.
   */
  /** A call that changes nothing, so sent again after a connection loss until its deadline. */
  private async read<T>(
    op: string,
    path: string,
    deadlineMs: number,
    issue: (raw: Client, done: Done<T>) => void,
  ): Promise<T> {
    for (;;) {
      try {
        return await this.call(op, path, deadlineMs, issue);
      } catch (error) {
        if (!(error instanceof ConnectionLossError) || Date.now() >= deadlineMs) throw error;
        await Bun.sleep(READ_RETRY_DELAY_MS);
      }
    }
  }

  private async call<T>(
    op: string,
    path: string,
    deadlineMs: number,
    issue: (raw: Client, done: Done<T>) => void,
  ): Promise<T> {
    const context = { op, path };
    await this.waitConnected(deadlineMs, context);
    const raw = this.raw;
    const startMs = performance.now();
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(
        () => {
          reject(
            new ZooKeeperUnavailableError("no reply from ZooKeeper before the deadline", context),
          );
        },
        Math.max(0, deadlineMs - Date.now()),
      );
      const done: Done<T> = (error, value) => {
        clearTimeout(timer);
        this.requestSeconds.observe((performance.now() - startMs) / 1000);
        if (error) reject(toZooKeeperError(error, context));
        else resolve(value as T);
      };
      try {
        issue(raw, done);
      } catch (error) {
        clearTimeout(timer);
        reject(error);
      }
    });
  }

  private async waitConnected(deadlineMs: number, context: ZooKeeperErrorContext): Promise<void> {
    if (this.closed) throw new ZooKeeperUnavailableError("client is closed", context);
    if (this.connected) return;
    await new Promise<void>((resolve, reject) => {
      const wake = () => {
        clearTimeout(timer);
        this.connectWaiters.delete(wake);
        if (this.connected) resolve();
        else reject(new ZooKeeperUnavailableError("client is closed", context));
      };
      const timer = setTimeout(
        () => {
          this.connectWaiters.delete(wake);
          const message = `not connected to ZooKeeper at ${this.connectString} before the deadline`;
          reject(new ZooKeeperUnavailableError(message, context));
        },
        Math.max(0, deadlineMs - Date.now()),
      );
      this.connectWaiters.add(wake);
    });
  }

  /**
   * A new session; after an expiry it starts from the last zxid the expired one saw, so that
   * it connects only to servers at least that recent (a server behind refuses the connect and
   * the next is tried): what a barrier made visible stays visible across the expiry.
   */
  private newSession(lastZxid: Buffer | null = null): Client {
    const raw = zookeeper.createClient(this.connectString, {
      sessionTimeout: this.options.sessionTimeoutMs,
      spinDelay: this.options.reconnectDelayMs ?? 200,
      retries: 0,
    });
    if (lastZxid !== null) connectionInternals(raw).zxid = Buffer.from(lastZxid);
    raw.on("state", (state: { code: number }) => this.onState(raw, state.code));
    raw.connect();
    return raw;
  }

  private onState(raw: Client, code: number): void {
    if (raw !== this.raw || this.closed) return;
    if (code === STATE_SYNC_CONNECTED) {
      this.connected = true;
      this.lastHeardMs = Date.now();
      for (const wake of [...this.connectWaiters]) wake();
      this.emit("connected");
      if (this.sessionRecreated) {
        this.sessionRecreated = false;
        this.emit("session-recreated");
      }
    } else if (code === STATE_DISCONNECTED && this.connected) {
      this.connected = false;
      this.disconnectedAtMs = Date.now();
      this.emit("disconnected");
    } else if (code === STATE_EXPIRED) {
      this.connected = false;
      this.disconnectedAtMs = Date.now();
      this.emit("expired");
      this.sessionRecreated = true;
      this.raw = this.newSession(connectionInternals(raw).zxid ?? null);
    }
  }

  private emit(event: SessionEvent): void {
    for (const listener of [...this.listeners]) listener(event);
  }

  /**
   * Every sixth of the session timeout, checks that the connection still answers. A probe
   * unanswered for a third of the session timeout means the link is dead without having
   * closed (a dropped network, a frozen server): the socket is destroyed so the library
   * reconnects, possibly to another server of the ensemble, before the session expires.
   * The library also waits forever for the handshake of a server that accepted the TCP
   * connection but does not answer, so a reconnect that takes longer than one attempt's share
   * of the session timeout is abandoned the same way and the next server is tried.
   */
  private startLivenessProbe(): void {
    const intervalMs = Math.max(50, Math.floor(this.sessionTimeoutMs / 6));
    const hostCount = parseConnectString(this.connectString).hosts.split(",").length;
    const attemptMs = Math.max(intervalMs * 2, Math.floor(this.sessionTimeoutMs / hostCount));
    let lastDropMs = Date.now();
    this.livenessTimer = setInterval(() => {
      if (!this.connected) {
        if (Date.now() - Math.max(lastDropMs, this.disconnectedAtMs) < attemptMs) return;
        lastDropMs = Date.now();
        dropConnection(this.raw);
        return;
      }
      if (this.livenessProbeInFlight) return;
      this.livenessProbeInFlight = true;
      const raw = this.raw;
      this.exists("/", { timeoutMs: intervalMs * 2 })
        .then(() => {
          this.lastHeardMs = Date.now();
        })
        .catch((error) => {
          if (error instanceof ZooKeeperUnavailableError && raw === this.raw) dropConnection(raw);
        })
        .finally(() => {
          this.livenessProbeInFlight = false;
        });
    }, intervalMs);
    this.livenessTimer.unref();
  }
}

/** Creates the chroot with a short-lived session at the real root, as Kafka does. */
async function ensureChroot(
  hosts: string,
  chroot: string,
  options: ZooKeeperClientOptions,
): Promise<void> {
  const root = await ZooKeeperClient.connect(hosts, options);
  try {
    await root.mkdirp(chroot);
  } finally {
    await root.close();
  }
}

/**
 * Destroys the library's socket so that it reconnects. node-zookeeper-client has no public way
 * to do this; its ConnectionManager keeps the socket in `connectionManager.socket`.
 */
function dropConnection(raw: Client): void {
  connectionInternals(raw).socket?.destroy?.();
}

/**
 * The library's ConnectionManager: its socket, and the last zxid it saw (8 bytes, big-endian),
 * which it sends when it connects. Neither is public.
 */
function connectionInternals(raw: Client): { socket?: { destroy?: () => void }; zxid?: Buffer } {
  const internals = raw as unknown as {
    connectionManager?: { socket?: { destroy?: () => void }; zxid?: Buffer };
  };
  return internals.connectionManager ?? {};
}

interface RawMultiResult {
  readonly type: number;
  readonly path?: string;
  readonly stat?: Stat;
  readonly err?: number;
}

/** The library's Transaction with its op list, which is public in JS but not in the typings. */
type RawTransaction = Transaction & { ops: { version?: number }[] };

function buildTransaction(raw: Client, ops: readonly ZooKeeperOp[]): Transaction {
  const transaction = raw.transaction() as RawTransaction;
  for (const op of ops) {
    if (op.type === "create") {
      const data = toBuffer(op.data ?? new Uint8Array(0));
      transaction.create(op.path, data, CREATE_MODE_FLAGS[op.mode ?? "persistent"]);
    } else if (op.type === "setData") transaction.setData(op.path, toBuffer(op.data), op.version);
    else if (op.type === "delete") transaction.remove(op.path, op.version);
    else transaction.check(op.path, op.version);
    // The library writes `version || -1`, which turns an expected version 0 into "any version".
    if (op.type !== "create")
      transaction.ops[transaction.ops.length - 1].version = op.version ?? -1;
  }
  return transaction;
}

function toOpResult(result: RawMultiResult): ZooKeeperOpResult {
  switch (result.type) {
    case 1:
      return { type: "create", path: result.path! };
    case 2:
      return { type: "delete" };
    case 5:
      return { type: "setData", stat: toZnodeStat(result.stat!) };
    case 13:
      return { type: "check" };
    default:
      throw new Error(`unexpected multi result type ${result.type}`);
  }
}

/** Names the failing operation of a multi: ZooKeeper marks it with its own code. */
function multiError(
  error: unknown,
  ops: readonly ZooKeeperOp[],
  results: RawMultiResult[] | undefined,
): ZooKeeperError {
  const opIndex =
    results?.findIndex((r) => r.type === MULTI_RESULT_ERROR_TYPE && r.err !== 0) ?? -1;
  if (opIndex === -1) return toZooKeeperError(error, { op: "multi" });
  return toZooKeeperError(error, { op: "multi", path: ops[opIndex].path, opIndex });
}

function toZooKeeperError(error: unknown, context: ZooKeeperErrorContext): ZooKeeperError {
  if (error instanceof ZooKeeperError) return error;
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code !== "number") {
    return new ZooKeeperError(ZooKeeperCode.SYSTEM_ERROR, String(error), {
      ...context,
      cause: error,
    });
  }
  return zooKeeperErrorFromCode(code, { ...context, cause: error });
}

/** About how many bytes a multi of `ops` takes on the wire (compare with MAX_REQUEST_BYTES). */
export function estimateMultiBytes(ops: readonly ZooKeeperOp[]): number {
  let bytes = 0;
  for (const op of ops) {
    const dataBytes =
      op.type === "create" || op.type === "setData" ? (op.data?.byteLength ?? 0) : 0;
    bytes += MULTI_OP_OVERHEAD_BYTES + Buffer.byteLength(op.path) + dataBytes;
  }
  return bytes;
}
