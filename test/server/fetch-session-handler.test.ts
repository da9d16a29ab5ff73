import { expect, test } from "bun:test";
import { ErrorCode } from "../../src/protocol/errors.ts";
import {
  FetchSessionHandler,
  type SessionPartitionData,
} from "../../src/server/fetch-session-handler.ts";

const data = (fetchOffset: bigint): SessionPartitionData => ({
  fetchOffset,
  logStartOffset: 0n,
  currentLeaderEpoch: 3,
});

test("full, then only what moved; forgotten partitions; errors start over closing the session", () => {
  const h = new FetchSessionHandler<string, SessionPartitionData>();
  const wanted = new Map([
    ["a", data(0n)],
    ["b", data(0n)],
  ]);
  expect(h.build(wanted, 15)).toEqual({ sessionId: 0, epoch: 0, toSend: ["a", "b"], toForget: [] });
  expect(h.handleResponse(ErrorCode.NONE, 77)).toBe(true);
  wanted.set("b", data(5n));
  expect(h.build(wanted, 15)).toMatchObject({ sessionId: 77, epoch: 1, toSend: ["b"] });
  expect(h.handleResponse(ErrorCode.NONE, 77)).toBe(true);
  wanted.delete("a");
  expect(h.build(wanted, 15)).toEqual({
    sessionId: 77,
    epoch: 2,
    toSend: [],
    toForget: [data(0n)],
  });
  expect(h.handleResponse(ErrorCode.INVALID_FETCH_SESSION_EPOCH, 0)).toBe(false);
  // Epoch 0 with the old id: a full fetch that closes session 77 and opens another.
  expect(h.build(wanted, 15)).toEqual({ sessionId: 77, epoch: 0, toSend: ["b"], toForget: [] });
  expect(h.handleResponse(ErrorCode.FETCH_SESSION_ID_NOT_FOUND, 0)).toBe(false);
  expect(h.build(wanted, 15)).toMatchObject({ sessionId: 0, epoch: 0 });
  expect(h.handleResponse(ErrorCode.NONE, 0)).toBe(true); // no slot: stay sessionless
  expect(h.build(wanted, 15)).toMatchObject({ sessionId: 0, epoch: 0, toSend: ["b"] });
  expect(h.handleResponse(ErrorCode.NONE, 9)).toBe(true);
  expect(h.build(wanted, 12)).toMatchObject({ epoch: 0, toSend: ["b"] }); // names, not ids
});
