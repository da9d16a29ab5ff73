import { expect, test } from "bun:test";
import { ErrorCode } from "../../src/protocol/errors.ts";
import {
  AcknowledgeType,
  RecordState,
  SharePartition,
  type SharePartitionSettings,
} from "../../src/server/share-partition.ts";

const SETTINGS: SharePartitionSettings = {
  lockDurationMs: 60_000,
  deliveryCountLimit: 3,
  maxInFlightRecords: 100,
};

function partition(settings: Partial<SharePartitionSettings> = {}, start = 0n) {
  const events = { available: 0, changes: 0 };
  const sp = new SharePartition(
    start,
    { ...SETTINGS, ...settings },
    () => events.available++,
    () => events.changes++,
  );
  return { sp, events };
}

const batch = (baseOffset: bigint, lastOffset: bigint) => ({ baseOffset, lastOffset });

test("acquire hands each record to one member; ACCEPT moves the start offset", () => {
  const { sp } = partition();
  const a = sp.acquire("a", [batch(0n, 4n), batch(5n, 9n)], 6);
  expect(a.acquired).toEqual([{ firstOffset: 0n, lastOffset: 5n, deliveryCount: 1 }]);
  expect(a.batchesUsed).toBe(2);
  expect(sp.nextFetchOffset()).toBe(6n);
  // b reads the same batches: only what a did not take is b's.
  const b = sp.acquire("b", [batch(5n, 9n)], 100);
  expect(b.acquired).toEqual([{ firstOffset: 6n, lastOffset: 9n, deliveryCount: 1 }]);
  expect(sp.acknowledge("b", 0n, 0n, [AcknowledgeType.ACCEPT])).toBe(
    ErrorCode.INVALID_RECORD_STATE,
  );
  expect(sp.acknowledge("a", 0n, 5n, [AcknowledgeType.ACCEPT])).toBe(ErrorCode.NONE);
  expect(sp.startOffset).toBe(6n);
  expect(sp.acknowledge("a", 0n, 0n, [AcknowledgeType.ACCEPT])).toBe(
    ErrorCode.INVALID_RECORD_STATE,
  );
});

test("RELEASE makes records available with their delivery count; the limit archives", () => {
  const { sp, events } = partition();
  expect(sp.acquire("a", [batch(0n, 1n)], 10).acquired[0]!.lastOffset).toBe(1n);
  const firstAck = [AcknowledgeType.RELEASE, AcknowledgeType.ACCEPT];
  expect(sp.acknowledge("a", 0n, 1n, firstAck)).toBe(ErrorCode.NONE);
  for (let delivery = 2; delivery <= 3; delivery++) {
    const got = sp.acquire("a", [batch(0n, 1n)], 10);
    expect(got.acquired).toEqual([{ firstOffset: 0n, lastOffset: 0n, deliveryCount: delivery }]);
    expect(sp.acknowledge("a", 0n, 0n, [AcknowledgeType.RELEASE])).toBe(ErrorCode.NONE);
  }
  // Two releases made 0 available; archiving it at the limit moved the start (room to fetch).
  expect(events.available).toBe(3);
  expect(sp.stateOf(0n)).toBeNull();
  expect(sp.startOffset).toBe(2n);
});

test("REJECT archives; a record above an unfinished one keeps the start", () => {
  const { sp } = partition();
  sp.acquire("a", [batch(0n, 2n)], 10);
  expect(sp.acknowledge("a", 1n, 2n, [AcknowledgeType.REJECT])).toBe(0);
  expect(sp.stateOf(1n)).toEqual({ state: RecordState.ARCHIVED, deliveryCount: 1 });
  expect(sp.startOffset).toBe(0n);
  expect(sp.acquire("b", [batch(0n, 2n)], 10).acquired).toEqual([]);
});

test("an expired lock makes the records available again", async () => {
  const { sp, events } = partition({ lockDurationMs: 50 });
  sp.acquire("a", [batch(0n, 0n)], 10);
  await Bun.sleep(120);
  expect(events.available).toBe(1);
  expect(sp.stateOf(0n)).toEqual({ state: RecordState.AVAILABLE, deliveryCount: 1 });
  expect(sp.acknowledge("a", 0n, 0n, [AcknowledgeType.ACCEPT])).toBe(
    ErrorCode.INVALID_RECORD_STATE,
  );
  expect(sp.acquire("b", [batch(0n, 0n)], 10).acquired[0]!.deliveryCount).toBe(2);
  sp.close();
});

test("the in-flight window bounds what is acquired until the start moves", () => {
  const { sp } = partition({ maxInFlightRecords: 4 });
  expect(sp.acquire("a", [batch(0n, 9n)], 100).acquired.at(-1)!.lastOffset).toBe(3n);
  expect(sp.nextFetchOffset()).toBeNull();
  sp.acknowledge("a", 0n, 1n, [AcknowledgeType.ACCEPT]);
  expect(sp.nextFetchOffset()).toBe(4n);
  expect(sp.acquire("a", [batch(0n, 9n)], 100).acquired).toEqual([
    { firstOffset: 4n, lastOffset: 5n, deliveryCount: 1 },
  ]);
});

test("malformed acknowledgements are INVALID_REQUEST and change nothing", () => {
  const { sp } = partition();
  sp.acquire("a", [batch(0n, 3n)], 10);
  expect(sp.acknowledge("a", 3n, 0n, [1])).toBe(ErrorCode.INVALID_REQUEST);
  expect(sp.acknowledge("a", 0n, 3n, [1, 1])).toBe(ErrorCode.INVALID_REQUEST);
  expect(sp.acknowledge("a", 0n, 0n, [9])).toBe(ErrorCode.INVALID_REQUEST);
  expect(sp.acknowledge("a", 0n, 0n, [])).toBe(ErrorCode.INVALID_REQUEST);
  expect(sp.stateOf(0n)).toEqual({ state: RecordState.ACQUIRED, deliveryCount: 1 });
});

test("a snapshot restores the start and in-flight states; acquired records come back", () => {
  const { sp } = partition({}, 10n);
  sp.acquire("a", [batch(10n, 13n)], 10);
  sp.acknowledge("a", 11n, 11n, [AcknowledgeType.ACCEPT]);
  sp.acknowledge("a", 12n, 12n, [AcknowledgeType.REJECT]);
  const snap = sp.snapshot();
  const { sp: restored } = partition({}, snap.startOffset);
  restored.restore(snap);
  expect(restored.startOffset).toBe(10n);
  expect(restored.stateOf(10n)).toEqual({ state: RecordState.AVAILABLE, deliveryCount: 1 });
  expect(restored.stateOf(11n)!.state).toBe(RecordState.ACKNOWLEDGED);
  expect(restored.stateOf(12n)!.state).toBe(RecordState.ARCHIVED);
  expect(restored.nextFetchOffset()).toBe(10n);
  sp.close();
});

test("RENEW (when allowed) keeps the records acquired under a new lock; the old one ends nothing", async () => {
  const settings = { ...SETTINGS, lockDurationMs: 30 };
  const sp = new SharePartition(
    0n,
    settings,
    () => {},
    () => {},
  );
  sp.acquire("a", [batch(0n, 1n)], 10);
  expect(sp.acknowledge("a", 0n, 0n, [AcknowledgeType.RENEW])).toBe(ErrorCode.INVALID_REQUEST);
  // Renewed under a lock that outlasts the test: the first lock's timer finds nothing of its own.
  settings.lockDurationMs = 60_000;
  expect(sp.acknowledge("a", 0n, 0n, [AcknowledgeType.RENEW], true)).toBe(ErrorCode.NONE);
  await Bun.sleep(100);
  expect(sp.stateOf(0n)).toEqual({ state: RecordState.ACQUIRED, deliveryCount: 1 });
  expect(sp.stateOf(1n)).toEqual({ state: RecordState.AVAILABLE, deliveryCount: 1 });
  expect(sp.acknowledge("a", 0n, 0n, [AcknowledgeType.ACCEPT])).toBe(ErrorCode.NONE);
  sp.close();
});
