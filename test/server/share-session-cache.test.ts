// Share sessions end with the connection that opened them (their member's records are released
// then), a member's new session replaces the old without releasing anything, and the old
// connection closing afterwards leaves the new session alone.
import { expect, test } from "bun:test";
import { ErrorCode } from "../../src/protocol/errors.ts";
import { type ShareSession, ShareSessionCache } from "../../src/server/share-session-cache.ts";

/** The close listeners of one connection, kept as Connection.onClose keeps them. */
class CloseListeners {
  private listeners = new Set<() => void>();
  readonly onDisconnect = (listener: () => void) => {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  };
  get listenerCount(): number {
    return this.listeners.size;
  }
  close(): void {
    const listeners = [...this.listeners];
    this.listeners.clear();
    for (const l of listeners) l();
  }
}

function cache(maxSessions = 10) {
  const released: string[] = [];
  const sessions = new ShareSessionCache(maxSessions, (s: ShareSession) =>
    released.push(s.memberId),
  );
  return { sessions, released };
}

test("a session ends, releasing its member's records, when its connection closes", () => {
  const { sessions, released } = cache();
  const conn = new CloseListeners();
  const session = sessions.open("g", "m1", conn.onDisconnect);
  expect(sessions.continue("g", "m1", 1)).toBe(session);
  conn.close();
  expect(released).toEqual(["m1"]);
  expect(sessions.isOpen(session)).toBe(false);
  expect(() => sessions.continue("g", "m1", 2)).toThrow(
    expect.objectContaining({ code: ErrorCode.SHARE_SESSION_NOT_FOUND }),
  );
});

test("a new session replaces the old without releasing; the old connection closing is stale", () => {
  const { sessions, released } = cache();
  const [oldConn, newConn] = [new CloseListeners(), new CloseListeners()];
  const old = sessions.open("g", "m1", oldConn.onDisconnect);
  const replacement = sessions.open("g", "m1", newConn.onDisconnect);
  expect(released).toEqual([]);
  // The replaced session stopped watching its connection.
  expect(oldConn.listenerCount).toBe(0);
  expect(sessions.isOpen(old)).toBe(false);
  oldConn.close();
  expect(released).toEqual([]);
  expect(sessions.isOpen(replacement)).toBe(true);
  newConn.close();
  expect(released).toEqual(["m1"]);
  expect(sessions.size).toBe(0);
});

test("closing a session (epoch -1) or evicting it releases once and stops watching", () => {
  const { sessions, released } = cache(1);
  const conn = new CloseListeners();
  const first = sessions.open("g", "m1", conn.onDisconnect);
  sessions.remove(first);
  expect(released).toEqual(["m1"]);
  expect(conn.listenerCount).toBe(0);
  sessions.open("g", "m2", conn.onDisconnect);
  sessions.open("g", "m3", conn.onDisconnect);
  expect(released).toEqual(["m1", "m2"]);
  expect(conn.listenerCount).toBe(1);
  conn.close();
  expect(released).toEqual(["m1", "m2", "m3"]);
});

test("a session opened on a connection already closed ends at once", () => {
  const { sessions, released } = cache();
  const closed = (listener: () => void) => {
    listener();
    return () => {};
  };
  const session = sessions.open("g", "m1", closed);
  expect(sessions.isOpen(session)).toBe(false);
  expect(released).toEqual(["m1"]);
});
