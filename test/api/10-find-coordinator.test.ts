import { afterAll, beforeAll, expect, test } from "bun:test";
import { ErrorCode } from "../../src/protocol/errors.ts";
import { ApiKey } from "../../src/protocol/generated/index.ts";
import { requestOnce, startTestBroker, type TestBroker } from "../support/kafka-client.ts";

let b: TestBroker;
beforeAll(async () => {
  b = await startTestBroker();
}, 60_000);
afterAll(async () => {
  await b.stop();
});

const find = (version: number, body: Parameters<typeof requestOnce<10>>[3]) =>
  requestOnce(b.port, ApiKey.FindCoordinator, version, body);

test("v0 and v3 answer this broker for a group key", async () => {
  for (const version of [0, 3]) {
    const res = await find(version, { key: "any-group", keyType: 0 });
    expect(res).toMatchObject({
      errorCode: ErrorCode.NONE,
      nodeId: 0,
      host: "127.0.0.1",
      port: b.port,
    });
  }
});

test("v4+ answers each batched key", async () => {
  const res = await find(4, { keyType: 0, coordinatorKeys: ["a", "b"] });
  const self = { nodeId: 0, host: "127.0.0.1", port: b.port, errorCode: 0, errorMessage: null };
  expect(res.coordinators).toEqual([
    { key: "a", ...self },
    { key: "b", ...self },
  ]);
});

test("transactional and share keys get this broker (creating __transaction_state and __share_group_state)", async () => {
  const txn = await find(6, { keyType: 1, coordinatorKeys: ["tx"] });
  expect(txn.coordinators[0]).toMatchObject({
    errorCode: ErrorCode.NONE,
    nodeId: 0,
    host: "127.0.0.1",
    port: b.port,
  });
  const share = await find(6, { keyType: 2, coordinatorKeys: ["g:AAAAAAAAAAAAAAAAAAAAAA:0"] });
  expect(share.coordinators[0]).toMatchObject({ errorCode: ErrorCode.NONE, nodeId: 0 });
  const unknown = await find(6, { keyType: 3, coordinatorKeys: ["s"] });
  expect(unknown.coordinators[0]!.errorCode).toBe(ErrorCode.INVALID_REQUEST);
  const v1 = await find(1, { key: "tx", keyType: 1 });
  expect(v1).toMatchObject({ errorCode: ErrorCode.NONE, nodeId: 0, port: b.port });
});
