/**
 * The plain data types of the ZooKeeper client: znode stats, watch events, create modes and the
 * operations of a multi. They hide node-zookeeper-client's Buffers and numeric codes.
 */
import type { Event, Stat } from "node-zookeeper-client";

export interface ZnodeStat {
  /** Data version, what conditional setData/delete compare against. */
  readonly version: number;
  /** Children version: bumped by every create or delete of a child. */
  readonly cversion: number;
  readonly dataLength: number;
  readonly numChildren: number;
  readonly czxid: bigint;
  readonly mzxid: bigint;
  /** The transaction that last created or deleted a child. */
  readonly pzxid: bigint;
  readonly ctimeMs: number;
  readonly mtimeMs: number;
  /** The session that owns an ephemeral znode; 0 for persistent ones. */
  readonly ephemeralOwner: bigint;
}

export type CreateMode =
  | "persistent"
  | "ephemeral"
  | "persistent-sequential"
  | "ephemeral-sequential";

/** ZooKeeper's numeric create flags (`CreateMode.toFlag()` in the Java client). */
export const CREATE_MODE_FLAGS: Record<CreateMode, number> = {
  persistent: 0,
  ephemeral: 1,
  "persistent-sequential": 2,
  "ephemeral-sequential": 3,
};

export type WatchEventType = "created" | "deleted" | "data-changed" | "children-changed";

/** A watch fires once; re-read (with a new watch) to keep watching. */
export interface WatchEvent {
  readonly type: WatchEventType;
  readonly path: string;
}

export type Watcher = (event: WatchEvent) => void;

/** One operation of an atomic multi. `version: -1` (the default) matches any version. */
export type ZooKeeperOp =
  | {
      readonly type: "create";
      readonly path: string;
      readonly data?: Uint8Array;
      readonly mode?: CreateMode;
    }
  | {
      readonly type: "setData";
      readonly path: string;
      readonly data: Uint8Array;
      readonly version?: number;
    }
  | { readonly type: "delete"; readonly path: string; readonly version?: number }
  | { readonly type: "check"; readonly path: string; readonly version: number };

export type ZooKeeperOpResult =
  | { readonly type: "create"; readonly path: string }
  | { readonly type: "setData"; readonly stat: ZnodeStat }
  | { readonly type: "delete" }
  | { readonly type: "check" };

const WATCH_EVENT_TYPES: Record<number, WatchEventType> = {
  1: "created",
  2: "deleted",
  3: "data-changed",
  4: "children-changed",
};

export function toZnodeStat(stat: Stat): ZnodeStat {
  return {
    version: stat.version,
    cversion: stat.cversion,
    dataLength: stat.dataLength,
    numChildren: stat.numChildren,
    czxid: stat.czxid.readBigInt64BE(0),
    mzxid: stat.mzxid.readBigInt64BE(0),
    pzxid: stat.pzxid.readBigInt64BE(0),
    ctimeMs: Number(stat.ctime.readBigInt64BE(0)),
    mtimeMs: Number(stat.mtime.readBigInt64BE(0)),
    ephemeralOwner: stat.ephemeralOwner.readBigInt64BE(0),
  };
}

export function toWatchEvent(event: Event): WatchEvent {
  const type = WATCH_EVENT_TYPES[event.type];
  if (type === undefined) throw new Error(`unknown ZooKeeper watch event type ${event.type}`);
  return { type, path: event.path };
}

/** A view of `data` as a Buffer, without copying (node-zookeeper-client accepts only Buffers). */
export function toBuffer(data: Uint8Array): Buffer {
  return Buffer.from(data.buffer, data.byteOffset, data.byteLength);
}

/** The parent of an absolute znode path; "/" for a top-level znode. */
export function parentPath(path: string): string {
  const slash = path.lastIndexOf("/");
  return slash <= 0 ? "/" : path.slice(0, slash);
}
