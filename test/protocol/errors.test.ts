import { describe, expect, test } from "bun:test";
import {
  DecodeError,
  ErrorCode,
  errorInfo,
  errorName,
  isRetriable,
  KAFKA_ERRORS,
  KafkaError,
} from "../../src/protocol/errors.ts";

describe("Kafka error table", () => {
  test("covers Kafka 3.9's codes (-1 to 127) and the two Kafka 4 ones Quill answers", () => {
    const codes = Object.keys(KAFKA_ERRORS)
      .map(Number)
      .sort((a, b) => a - b);
    // 128 INVALID_REGULAR_EXPRESSION (ListTransactions 2), 129 REBOOTSTRAP_REQUIRED (ApiVersions 5)
    expect(codes).toEqual(Array.from({ length: 131 }, (_, i) => i - 1));
    expect(KAFKA_ERRORS[128]!.name).toBe("INVALID_REGULAR_EXPRESSION");
    expect(KAFKA_ERRORS[129]!.name).toBe("REBOOTSTRAP_REQUIRED");
    const names = new Set(Object.values(KAFKA_ERRORS).map((e) => e.name));
    expect(names.size).toBe(131);
    for (const [name, code] of Object.entries(ErrorCode)) {
      expect(KAFKA_ERRORS[code]!.name).toBe(name);
    }
  });

  test("codes by name match Kafka's", () => {
    expect(ErrorCode.NONE).toBe(0);
    expect(ErrorCode.CORRUPT_MESSAGE).toBe(2);
    expect(ErrorCode.NOT_LEADER_OR_FOLLOWER).toBe(6);
    expect(ErrorCode.UNSUPPORTED_VERSION).toBe(35);
    expect(ErrorCode.UNKNOWN_TOPIC_ID).toBe(100);
    expect(ErrorCode.VOTER_NOT_FOUND).toBe(127);
  });

  test("retriable flags follow Kafka's RetriableException hierarchy", () => {
    expect(isRetriable(ErrorCode.NOT_LEADER_OR_FOLLOWER)).toBe(true);
    expect(isRetriable(ErrorCode.REQUEST_TIMED_OUT)).toBe(true);
    expect(isRetriable(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS)).toBe(true);
    expect(isRetriable(ErrorCode.UNSUPPORTED_VERSION)).toBe(false);
    expect(isRetriable(ErrorCode.CONCURRENT_TRANSACTIONS)).toBe(false);
    expect(isRetriable(ErrorCode.NONE)).toBe(false);
    expect(isRetriable(9999)).toBe(false);
  });

  test("unknown codes map to UNKNOWN_SERVER_ERROR", () => {
    expect(errorInfo(5000).name).toBe("UNKNOWN_SERVER_ERROR");
    expect(errorName(5000)).toBe("UNKNOWN_ERROR_CODE_5000");
    expect(errorName(3)).toBe("UNKNOWN_TOPIC_OR_PARTITION");
  });

  test("KafkaError carries its code and defaults to Kafka's message", () => {
    const e = new KafkaError(ErrorCode.CORRUPT_MESSAGE);
    expect(e).toBeInstanceOf(Error);
    expect(e.code).toBe(2);
    expect(e.errorName).toBe("CORRUPT_MESSAGE");
    expect(e.retriable).toBe(true);
    expect(e.message).toContain("CRC checksum");
    const tooLarge = new KafkaError(ErrorCode.MESSAGE_TOO_LARGE, "batch of 9 MB");
    expect(tooLarge.message).toBe("batch of 9 MB");
  });

  test("DecodeError records the failing offset", () => {
    const e = new DecodeError("truncated", 12);
    expect(e.offset).toBe(12);
    expect(e.message).toBe("truncated (at byte 12)");
  });
});
