/**
 * Flexible-version vectors worked out by hand from the protocol rules (compact lengths, tagged
 * fields, header versions). The installed clients (librdkafka 2.0.2, kafkajs 2.2.4) send
 * flexible versions only for ApiVersions, so these pin the rest of the flexible encoding.
 */
import { describe, expect, test } from "bun:test";
import {
  decodeRequest,
  decodeRequestHeader,
  decodeResponse,
  encodeRequest,
  encodeRequestHeader,
  encodeResponse,
  encodeResponseHeader,
  requestHeaderVersion,
  responseHeaderVersion,
} from "../../src/protocol/generated/index.ts";
import { Reader } from "../../src/protocol/reader.ts";
import { Writer } from "../../src/protocol/writer.ts";

const hex = (s: string) => new Uint8Array(Buffer.from(s.replace(/\s+/g, ""), "hex"));
const toHex = (b: Uint8Array) => Buffer.from(b).toString("hex");

describe("flexible encoding by hand", () => {
  test("Metadata v12 request with header v2 (ClientId keeps its int16 length)", () => {
    const bytes = hex(`
      0003 000c 00000005 0001 63 00
      02 00000000000000000000000000000000 0274 00
      01 00 00`);
    const r = new Reader(bytes);
    expect(decodeRequestHeader(r)).toEqual({
      requestApiKey: 3,
      requestApiVersion: 12,
      correlationId: 5,
      clientId: "c",
    });
    const body = decodeRequest(3, 12, r);
    expect(r.remaining()).toBe(0);
    expect(body).toEqual({
      topics: [{ topicId: new Uint8Array(16), name: "t" }],
      allowAutoTopicCreation: true,
      includeClusterAuthorizedOperations: false,
      includeTopicAuthorizedOperations: false,
    });
    const w = new Writer();
    encodeRequestHeader(w, {
      requestApiKey: 3,
      requestApiVersion: 12,
      correlationId: 5,
      clientId: "c",
    });
    encodeRequest(3, 12, w, { topics: [{ name: "t" }], allowAutoTopicCreation: true });
    expect(toHex(w.toBytes())).toBe(toHex(bytes));
  });

  test("Produce v10 response with tagged CurrentLeader and NodeEndpoints", () => {
    const bytes = hex(`
      02 0274 02
        00000000 0006 ffffffffffffffff ffffffffffffffff ffffffffffffffff 01 00
        01 00 09 00000002 00000003 00
      00
      00000000
      01 00 0d 02 00000002 0268 00002384 00 00`);
    const expected = {
      responses: [
        {
          name: "t",
          topicId: new Uint8Array(16),
          partitionResponses: [
            {
              index: 0,
              errorCode: 6,
              baseOffset: -1n,
              logAppendTimeMs: -1n,
              logStartOffset: -1n,
              recordErrors: [],
              errorMessage: null,
              currentLeader: { leaderId: 2, leaderEpoch: 3 },
            },
          ],
        },
      ],
      throttleTimeMs: 0,
      nodeEndpoints: [{ nodeId: 2, host: "h", port: 9092, rack: null }],
    };
    const r = new Reader(bytes);
    expect(decodeResponse(0, 10, r)).toEqual(expected);
    expect(r.remaining()).toBe(0);
    const w = new Writer();
    encodeResponse(0, 10, w, expected);
    expect(toHex(w.toBytes())).toBe(toHex(bytes));
  });

  test("tagged fields at their default are not written", () => {
    const w = new Writer();
    encodeResponse(0, 10, w, {
      responses: [{ name: "t", partitionResponses: [{ currentLeader: { leaderId: -1 } }] }],
    });
    // The partition ends with an empty tagged section (00): CurrentLeader -1/-1 is the default.
    expect(toHex(w.toBytes())).toBe(
      "020274020000000000000000000000000000ffffffffffffffffffffffffffffffff0100" +
        "00" +
        "00" +
        "00000000" +
        "00",
    );
  });

  test("header versions", () => {
    expect(requestHeaderVersion(18, 3)).toBe(2);
    expect(requestHeaderVersion(18, 2)).toBe(1);
    expect(requestHeaderVersion(7, 0)).toBe(0);
    expect(requestHeaderVersion(7, 1)).toBe(1);
    expect(requestHeaderVersion(7, 3)).toBe(2);
    expect(responseHeaderVersion(18, 3)).toBe(0);
    expect(responseHeaderVersion(1, 12)).toBe(1);
    expect(responseHeaderVersion(1, 11)).toBe(0);
    const w = new Writer();
    encodeResponseHeader(w, 18, 3, 7);
    encodeResponseHeader(w, 1, 12, 7);
    expect(toHex(w.toBytes())).toBe("00000007" + "0000000700");
  });

  test("ControlledShutdown v0 uses request header v0, without a client id", () => {
    const bytes = hex("0007 0000 00000009 00000004");
    const r = new Reader(bytes);
    expect(decodeRequestHeader(r)).toEqual({
      requestApiKey: 7,
      requestApiVersion: 0,
      correlationId: 9,
      clientId: "",
    });
    expect(decodeRequest(7, 0, r)).toMatchObject({ brokerId: 4 });
    const w = new Writer();
    encodeRequestHeader(w, { requestApiKey: 7, requestApiVersion: 0, correlationId: 9 });
    encodeRequest(7, 0, w, { brokerId: 4 });
    expect(toHex(w.toBytes())).toBe(toHex(bytes));
  });

  test("encoding refuses a non-default value the version cannot carry, unless ignorable", () => {
    const w = new Writer();
    // ProduceRequest.TransactionalId exists from v3 and is not ignorable.
    expect(() => encodeRequest(0, 2, w, { transactionalId: "tx" })).toThrow(
      "ProduceRequest.transactionalId has a non-default value but version 2 lacks it",
    );
    w.reset();
    encodeRequest(0, 2, w, { transactionalId: null, acks: 1 });
    // FetchRequest.MaxBytes exists from v3 but is ignorable: dropped silently at v2.
    w.reset();
    encodeRequest(1, 2, w, { maxBytes: 1000 });
    expect(decodeRequest(1, 2, new Reader(w.toBytes())).maxBytes).toBe(0x7fffffff);
    // Null where the version does not allow it.
    w.reset();
    expect(() => encodeRequest(3, 0, w, { topics: null })).toThrow("not nullable");
  });
});
