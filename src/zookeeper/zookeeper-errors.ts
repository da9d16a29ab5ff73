/**
 * Typed ZooKeeper errors, one class per outcome callers handle differently. The numeric codes
 * are ZooKeeper's own (`KeeperException.Code`), so logs match ZooKeeper's documentation.
 *
 * Unavailability (no answer, connection lost mid-call, session gone) is one family,
 * `ZooKeeperUnavailableError`, because every caller treats it the same way: the operation may or
 * may not have happened, retry later. Everything else is a definite answer from the server.
 */
export const ZooKeeperCode = {
  OK: 0,
  SYSTEM_ERROR: -1,
  RUNTIME_INCONSISTENCY: -2,
  CONNECTION_LOSS: -4,
  OPERATION_TIMEOUT: -7,
  BAD_ARGUMENTS: -8,
  NO_NODE: -101,
  NO_AUTH: -102,
  BAD_VERSION: -103,
  NO_CHILDREN_FOR_EPHEMERALS: -108,
  NODE_EXISTS: -110,
  NOT_EMPTY: -111,
  SESSION_EXPIRED: -112,
} as const;

export interface ZooKeeperErrorContext {
  /** The client call that failed: "create", "setData", "multi", ... */
  readonly op: string;
  /** The znode the failure is about (for a multi, the path of the operation that failed). */
  readonly path?: string;
  /** For a multi, the index of the operation that failed. */
  readonly opIndex?: number;
  readonly cause?: unknown;
}

export class ZooKeeperError extends Error {
  override readonly name: string = "ZooKeeperError";
  readonly code: number;
  readonly op: string;
  readonly path: string | undefined;
  readonly opIndex: number | undefined;

  constructor(code: number, message: string, context: ZooKeeperErrorContext) {
    const where = context.path === undefined ? "" : ` ${context.path}`;
    super(`${context.op}${where}: ${message}`, { cause: context.cause });
    this.code = code;
    this.op = context.op;
    this.path = context.path;
    this.opIndex = context.opIndex;
  }
}

export class NoNodeError extends ZooKeeperError {
  override readonly name = "NoNodeError";
  constructor(context: ZooKeeperErrorContext) {
    super(ZooKeeperCode.NO_NODE, "no such znode", context);
  }
}

export class NodeExistsError extends ZooKeeperError {
  override readonly name = "NodeExistsError";
  constructor(context: ZooKeeperErrorContext) {
    super(ZooKeeperCode.NODE_EXISTS, "znode already exists", context);
  }
}

/** A conditional write lost: the znode's version is not the one the caller expected. */
export class BadVersionError extends ZooKeeperError {
  override readonly name = "BadVersionError";
  constructor(context: ZooKeeperErrorContext) {
    super(ZooKeeperCode.BAD_VERSION, "znode version differs from the expected version", context);
  }
}

export class NotEmptyError extends ZooKeeperError {
  override readonly name = "NotEmptyError";
  constructor(context: ZooKeeperErrorContext) {
    super(ZooKeeperCode.NOT_EMPTY, "znode has children", context);
  }
}

/**
 * ZooKeeper did not answer: not connected within the call's time limit, or no reply in time.
 * The operation may still be applied later, so callers must treat its outcome as unknown.
 */
export class ZooKeeperUnavailableError extends ZooKeeperError {
  override readonly name: string = "ZooKeeperUnavailableError";
  constructor(
    message: string,
    context: ZooKeeperErrorContext,
    code: number = ZooKeeperCode.OPERATION_TIMEOUT,
  ) {
    super(code, message, context);
  }
}

/** The connection broke while the call was in flight; it may or may not have been applied. */
export class ConnectionLossError extends ZooKeeperUnavailableError {
  override readonly name = "ConnectionLossError";
  constructor(context: ZooKeeperErrorContext) {
    super("connection to ZooKeeper lost", context, ZooKeeperCode.CONNECTION_LOSS);
  }
}

/** The session ended; its ephemeral znodes and watches are gone. A new session is being made. */
export class SessionExpiredError extends ZooKeeperUnavailableError {
  override readonly name = "SessionExpiredError";
  constructor(context: ZooKeeperErrorContext) {
    super("ZooKeeper session expired", context, ZooKeeperCode.SESSION_EXPIRED);
  }
}

/** Maps a code from ZooKeeper (a reply or a multi result) onto the typed error for it. */
export function zooKeeperErrorFromCode(
  code: number,
  context: ZooKeeperErrorContext,
): ZooKeeperError {
  switch (code) {
    case ZooKeeperCode.NO_NODE:
      return new NoNodeError(context);
    case ZooKeeperCode.NODE_EXISTS:
      return new NodeExistsError(context);
    case ZooKeeperCode.BAD_VERSION:
      return new BadVersionError(context);
    case ZooKeeperCode.NOT_EMPTY:
      return new NotEmptyError(context);
    case ZooKeeperCode.CONNECTION_LOSS:
      return new ConnectionLossError(context);
    case ZooKeeperCode.SESSION_EXPIRED:
      return new SessionExpiredError(context);
    case ZooKeeperCode.OPERATION_TIMEOUT:
      return new ZooKeeperUnavailableError("ZooKeeper operation timed out", context);
    default:
      return new ZooKeeperError(code, `ZooKeeper error code ${code}`, context);
  }
}
