import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { CompressionType } from "../../src/protocol/compression.ts";
import { crc32c } from "../../src/protocol/crc32c.ts";
import { ErrorCode, KafkaError } from "../../src/protocol/errors.ts";
import {
  batchSizeBytes,
  buildRecordBatch,
  CorruptRecordError,
  checkMagic,
  compressionType,
  computeBatchCrc,
  decodeRecords,
  InvalidRecordError,
  isControl,
  isTransactional,
  iterateBatches,
  LOG_OVERHEAD,
  RECORD_BATCH_OVERHEAD,
  readBatchHeader,
  setBaseOffset,
  setMaxTimestampAndLogAppendTime,
  setPartitionLeaderEpoch,
  TimestampType,
  timestampType,
  validateProduceRecords,
  verifyBatchCrc,
} from "../../src/protocol/record-batch.ts";
import { AssertionError } from "../../src/util/assert.ts";
import {
  FIXTURE_CODECS,
  FIXTURE_HEADERS,
  FIXTURE_NAMES,
  fixtureMessages,
} from "../fixtures/batches/expected.ts";

const utf8 = (s: string) => new TextEncoder().encode(s);
const text = (b: Uint8Array | null) => (b === null ? null : new TextDecoder().decode(b));

function concat(...parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let pos = 0;
  for (const p of parts) {
    out.set(p, pos);
    pos += p.length;
  }
  return out;
}

const sample = () =>
  buildRecordBatch(
    [
      { key: utf8("k1"), value: utf8("v1"), timestampMs: 1_700_000_000_000 },
      {
        key: null,
        value: utf8("v2"),
        headers: [
          { key: "trace", value: utf8("abc") },
          { key: "é", value: null },
        ],
        timestampMs: 1_700_000_000_500,
      },
      { value: null, timestampMs: 1_699_999_999_000 },
    ],
    { baseOffset: 42n, producerId: 7n, producerEpoch: 3, baseSequence: 11 },
  );

describe("record batch header", () => {
  test("build then parse gives every header field", () => {
    const batch = sample();
    const h = readBatchHeader(batch);
    expect(h.baseOffset).toBe(42n);
    expect(h.batchLength).toBe(batch.length - LOG_OVERHEAD);
    expect(batchSizeBytes(batch, 0)).toBe(batch.length);
    expect(h.partitionLeaderEpoch).toBe(-1);
    expect(h.magic).toBe(2);
    expect(h.attributes).toBe(0);
    expect(h.lastOffsetDelta).toBe(2);
    expect(h.baseTimestamp).toBe(1_700_000_000_000n);
    expect(h.maxTimestamp).toBe(1_700_000_000_500n);
    expect(h.producerId).toBe(7n);
    expect(h.producerEpoch).toBe(3);
    expect(h.baseSequence).toBe(11);
    expect(h.recordCount).toBe(3);
    expect(h.crc).toBe(crc32c(batch.subarray(21)));
    expect(verifyBatchCrc(batch)).toBe(true);
  });

  test("header bytes sit at the documented offsets (big-endian)", () => {
    const batch = buildRecordBatch([{ value: utf8("x"), timestampMs: 5 }], {
      baseOffset: 0x0102030405060708n,
      partitionLeaderEpoch: 9,
    });
    expect([...batch.subarray(0, 8)]).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    expect([...batch.subarray(12, 16)]).toEqual([0, 0, 0, 9]);
    expect(batch[16]).toBe(2);
    expect([...batch.subarray(57, 61)]).toEqual([0, 0, 0, 1]);
    expect(RECORD_BATCH_OVERHEAD).toBe(61);
  });

  test("patching base offset and leader epoch keeps the CRC valid", () => {
    const batch = sample();
    const crcBefore = readBatchHeader(batch).crc;
    setBaseOffset(batch, 0, 1_000_000_000_000n);
    setPartitionLeaderEpoch(batch, 0, 17);
    const h = readBatchHeader(batch);
    expect(h.baseOffset).toBe(1_000_000_000_000n);
    expect(h.partitionLeaderEpoch).toBe(17);
    expect(h.crc).toBe(crcBefore);
    expect(verifyBatchCrc(batch)).toBe(true);
  });

  test("patching a header that is not there is a programmer error (assert)", () => {
    expect(() => setBaseOffset(new Uint8Array(60), 0, 1n)).toThrow(AssertionError);
    const batch = sample();
    expect(() => setPartitionLeaderEpoch(batch, batch.length - 60, 1)).toThrow(AssertionError);
    expect(() => setBaseOffset(sample(), 0, -1n)).toThrow(AssertionError);
  });

  test("patching works at a non-zero position inside a larger buffer", () => {
    const a = sample();
    const b = sample();
    const blob = concat(a, b);
    setBaseOffset(blob, a.length, 99n);
    expect(readBatchHeader(blob, a.length).baseOffset).toBe(99n);
    expect(readBatchHeader(blob, 0).baseOffset).toBe(42n);
    expect(verifyBatchCrc(blob, a.length)).toBe(true);
  });

  test("LogAppendTime rewrite sets the attribute and maxTimestamp and recomputes the CRC", () => {
    const batch = sample();
    setMaxTimestampAndLogAppendTime(batch, 0, 1_800_000_000_000n);
    const h = readBatchHeader(batch);
    expect(h.maxTimestamp).toBe(1_800_000_000_000n);
    expect(timestampType(h.attributes)).toBe(TimestampType.LogAppendTime);
    expect(verifyBatchCrc(batch)).toBe(true);
    expect(h.crc).toBe(computeBatchCrc(batch));
    expect(decodeRecords(batch)).toHaveLength(3);
  });

  test("a flipped byte anywhere after the CRC field fails verification", () => {
    const batch = sample();
    for (const at of [21, 30, 60, 61, batch.length - 1]) {
      const copy = batch.slice();
      copy[at] ^= 0x01;
      expect(verifyBatchCrc(copy)).toBe(false);
    }
  });

  test("attribute helpers decode each bit", () => {
    const batch = buildRecordBatch([{ value: utf8("c") }], {
      compression: CompressionType.Lz4,
      isTransactional: true,
      isControl: true,
      timestampType: TimestampType.LogAppendTime,
    });
    const attributes = readBatchHeader(batch).attributes;
    expect(compressionType(attributes)).toBe(CompressionType.Lz4);
    expect(isTransactional(attributes)).toBe(true);
    expect(isControl(attributes)).toBe(true);
    expect(timestampType(attributes)).toBe(TimestampType.LogAppendTime);
    expect(isTransactional(readBatchHeader(sample()).attributes)).toBe(false);
  });

  test("short headers and other magics are CorruptRecordError (CORRUPT_MESSAGE)", () => {
    const batch = sample();
    expect(() => readBatchHeader(batch.subarray(0, 60))).toThrow(CorruptRecordError);
    const v1 = batch.slice();
    v1[16] = 1;
    let caught: unknown;
    try {
      readBatchHeader(v1);
    } catch (e) {
      caught = e;
    }
    expect(caught).toBeInstanceOf(CorruptRecordError);
    expect(caught).toBeInstanceOf(KafkaError);
    expect((caught as KafkaError).code).toBe(ErrorCode.CORRUPT_MESSAGE);
  });
});

describe("records", () => {
  test("decodeRecords returns keys, values, headers, deltas", () => {
    const records = decodeRecords(sample());
    expect(records.map((r) => r.offsetDelta)).toEqual([0, 1, 2]);
    expect(records.map((r) => r.timestampDelta)).toEqual([0n, 500n, -1000n]);
    expect(records.map((r) => text(r.key))).toEqual(["k1", null, null]);
    expect(records.map((r) => text(r.value))).toEqual(["v1", "v2", null]);
    expect(records[1].headers.map((h) => [h.key, text(h.value)])).toEqual([
      ["trace", "abc"],
      ["é", null],
    ]);
    expect(records[0].headers).toEqual([]);
  });

  test("large values and varint boundaries round trip", () => {
    const sizes = [0, 1, 63, 64, 127, 128, 8191, 8192, 100_000];
    const batch = buildRecordBatch(
      sizes.map((n, i) => ({ value: new Uint8Array(n).fill(i), timestampMs: 1000 + i * 2 ** 40 })),
      { timestampMs: 1000 },
    );
    const records = decodeRecords(batch);
    expect(records.map((r) => r.value?.length)).toEqual(sizes);
    expect(records.map((r) => r.timestampDelta)).toEqual(sizes.map((_, i) => BigInt(i * 2 ** 40)));
    expect(records[8].value?.every((b) => b === 8)).toBe(true);
  });

  test("a record count the bytes cannot hold is refused before allocating", () => {
    const batch = sample();
    new DataView(batch.buffer).setInt32(57, 2_000_000_000);
    expect(() => decodeRecords(batch)).toThrow(CorruptRecordError);
    new DataView(batch.buffer).setInt32(57, -1);
    expect(() => decodeRecords(batch)).toThrow(CorruptRecordError);
  });

  test("record count smaller than the records present is refused (leftover bytes)", () => {
    const batch = sample();
    new DataView(batch.buffer).setInt32(57, 2);
    expect(() => decodeRecords(batch)).toThrow(/bytes left/);
  });

  test("every truncation of the record body is a CorruptRecordError", () => {
    const batch = sample();
    for (let cut = RECORD_BATCH_OVERHEAD; cut < batch.length; cut++) {
      const truncated = batch.slice(0, cut);
      new DataView(truncated.buffer).setInt32(8, cut - LOG_OVERHEAD);
      expect(() => decodeRecords(truncated)).toThrow(CorruptRecordError);
    }
  });

  test("random corruption of record bytes never escapes as another error type", () => {
    const batch = sample();
    let seed = 12345;
    const rand = () => (seed = (seed * 1103515245 + 12345) & 0x7fffffff);
    for (let i = 0; i < 2000; i++) {
      const copy = batch.slice();
      const at = RECORD_BATCH_OVERHEAD + (rand() % (batch.length - RECORD_BATCH_OVERHEAD));
      copy[at] = rand() & 0xff;
      try {
        decodeRecords(copy);
      } catch (e) {
        expect(e).toBeInstanceOf(CorruptRecordError);
      }
    }
  });
});

describe("iterateBatches", () => {
  test("splits concatenated batches", () => {
    const a = sample();
    const b = buildRecordBatch([{ value: utf8("second") }], { baseOffset: 45n });
    const c = buildRecordBatch([{ value: utf8("third") }], { compression: CompressionType.Gzip });
    const blob = concat(a, b, c);
    const entries = [...iterateBatches(blob)];
    expect(entries).toEqual([
      { position: 0, sizeBytes: a.length },
      { position: a.length, sizeBytes: b.length },
      { position: a.length + b.length, sizeBytes: c.length },
    ]);
    expect(entries.every((e) => verifyBatchCrc(blob, e.position))).toBe(true);
    expect(readBatchHeader(blob, entries[1].position).baseOffset).toBe(45n);
  });

  test("an empty blob has no batches", () => {
    expect([...iterateBatches(new Uint8Array(0))]).toEqual([]);
  });

  test("truncated blobs are refused at every cut point", () => {
    const blob = concat(sample(), sample());
    const whole = sample().length;
    for (let cut = 1; cut < blob.length; cut++) {
      if (cut === whole) continue;
      expect(() => [...iterateBatches(blob.subarray(0, cut))]).toThrow(CorruptRecordError);
    }
  });

  test("negative, tiny and oversized lengths are refused", () => {
    for (const length of [-1, -2_147_483_648, 0, 13, 2_147_483_647]) {
      const blob = sample();
      new DataView(blob.buffer).setInt32(8, length);
      expect(() => [...iterateBatches(blob)]).toThrow(CorruptRecordError);
    }
  });

  test("CRC helpers refuse a batch whose length runs past the buffer", () => {
    const blob = sample();
    new DataView(blob.buffer).setInt32(8, blob.length);
    expect(() => verifyBatchCrc(blob)).toThrow(CorruptRecordError);
    expect(() => decodeRecords(blob)).toThrow(CorruptRecordError);
    for (const cut of [0, 5, 12, 20, 60]) {
      expect(() => verifyBatchCrc(sample().subarray(0, cut))).toThrow(CorruptRecordError);
    }
  });
});

/** A magic v0 or v1 message set entry, as pre-0.11 clients wrote them (value only, no key). */
function legacyMessage(magic: 0 | 1, value: Uint8Array): Uint8Array {
  const timestampBytes = magic === 1 ? 8 : 0;
  const recordBytes = 4 + 1 + 1 + timestampBytes + 4 + 4 + value.length;
  const out = new Uint8Array(LOG_OVERHEAD + recordBytes);
  const dv = new DataView(out.buffer);
  dv.setInt32(8, recordBytes);
  out[16] = magic;
  const pos = 18 + timestampBytes;
  dv.setInt32(pos, -1);
  dv.setInt32(pos + 4, value.length);
  out.set(value, pos + 8);
  dv.setUint32(12, Bun.hash.crc32(out.subarray(16)));
  return out;
}

function errorOf(run: () => unknown): KafkaError {
  try {
    run();
  } catch (e) {
    expect(e).toBeInstanceOf(KafkaError);
    return e as KafkaError;
  }
  throw new Error("expected a KafkaError");
}

describe("magic and produce validation (Kafka 4 rules)", () => {
  test("magic 0 and 1 message sets are INVALID_RECORD, as Kafka 4 answers them", () => {
    for (const magic of [0, 1] as const) {
      const legacy = legacyMessage(magic, utf8("old"));
      expect([...iterateBatches(legacy)]).toEqual([{ position: 0, sizeBytes: legacy.length }]);
      const error = errorOf(() => checkMagic(legacy, 0, 9));
      expect(error).toBeInstanceOf(InvalidRecordError);
      expect(error.code).toBe(ErrorCode.INVALID_RECORD);
      expect(error.message).toContain("only allowed to contain record batches with magic version");
      expect(errorOf(() => validateProduceRecords(legacy, 9)).code).toBe(ErrorCode.INVALID_RECORD);
    }
  });

  test("magic 2 passes; unknown magics are CORRUPT_MESSAGE", () => {
    const batch = sample();
    expect(() => checkMagic(batch, 0)).not.toThrow();
    batch[16] = 3;
    expect(errorOf(() => checkMagic(batch, 0)).code).toBe(ErrorCode.CORRUPT_MESSAGE);
    const short = batch.subarray(0, 16);
    expect(errorOf(() => checkMagic(short, 0)).code).toBe(ErrorCode.CORRUPT_MESSAGE);
  });

  test("a produce partition must hold exactly one whole batch", () => {
    const batch = sample();
    expect(validateProduceRecords(batch, 9)).toBe(batch.length);
    const none = errorOf(() => validateProduceRecords(new Uint8Array(0), 9));
    expect(none.code).toBe(ErrorCode.INVALID_RECORD);
    expect(none.message).toContain("at least one record batch");
    expect(errorOf(() => validateProduceRecords(batch.subarray(0, 40), 9)).code).toBe(
      ErrorCode.INVALID_RECORD,
    );
    const two = errorOf(() => validateProduceRecords(concat(batch, sample()), 9));
    expect(two.code).toBe(ErrorCode.INVALID_RECORD);
    expect(two.message).toContain("exactly one record batch");
    const tiny = batch.slice();
    new DataView(tiny.buffer).setInt32(8, 3);
    expect(errorOf(() => validateProduceRecords(tiny, 9)).code).toBe(ErrorCode.CORRUPT_MESSAGE);
  });

  test("zstd is refused before Produce v7 with UNSUPPORTED_COMPRESSION_TYPE", () => {
    const zstd = buildRecordBatch([{ value: utf8("z") }], { compression: CompressionType.Zstd });
    expect(errorOf(() => validateProduceRecords(zstd, 6)).code).toBe(
      ErrorCode.UNSUPPORTED_COMPRESSION_TYPE,
    );
    expect(validateProduceRecords(zstd, 7)).toBe(zstd.length);
  });
});

describe("batches captured from real clients (test/fixtures/batches, see capture.ts)", () => {
  const fixture = (name: string) =>
    new Uint8Array(readFileSync(join(import.meta.dir, "../fixtures/batches", `${name}.bin`)));
  const v2Fixtures = FIXTURE_NAMES.filter((name) => name !== "kcat-magic0-gzip");

  for (const name of v2Fixtures) {
    test(`${name}: one batch, CRC-32C matches, records are what the client produced`, () => {
      const blob = fixture(name);
      expect([...iterateBatches(blob)]).toEqual([{ position: 0, sizeBytes: blob.length }]);
      expect(validateProduceRecords(blob, 7)).toBe(blob.length);
      const header = readBatchHeader(blob);
      expect(header.crc).toBe(crc32c(blob.subarray(21)));
      expect(verifyBatchCrc(blob)).toBe(true);
      expect(compressionType(header.attributes)).toBe(FIXTURE_CODECS[name]);
      const expected = fixtureMessages(name);
      expect(header.recordCount).toBe(expected.length);
      expect(header.lastOffsetDelta).toBe(expected.length - 1);
      const records = decodeRecords(blob);
      expect(records.map((r) => text(r.key))).toEqual(expected.map((m) => m.key));
      expect(records.map((r) => text(r.value))).toEqual(expected.map((m) => m.value));
      expect(records.map((r) => r.offsetDelta)).toEqual(expected.map((_, i) => i));
      const header0 = FIXTURE_HEADERS[name]!;
      for (const r of records) {
        const headers = r.headers.map((h) => [h.key, text(h.value)]);
        expect(headers).toEqual([[header0.key, header0.value]]);
        expect(r.timestampDelta).toBeGreaterThanOrEqual(0n);
        expect(header.baseTimestamp + r.timestampDelta).toBeLessThanOrEqual(header.maxTimestamp);
      }
    });
  }

  test("kcat-none: rebuilding the same records gives byte-identical batch", () => {
    const original = fixture("kcat-none");
    const header = readBatchHeader(original);
    const rebuilt = buildRecordBatch(
      decodeRecords(original).map((r) => ({
        key: r.key,
        value: r.value,
        headers: r.headers,
        timestampMs: Number(header.baseTimestamp + r.timestampDelta),
      })),
      { partitionLeaderEpoch: header.partitionLeaderEpoch },
    );
    expect(rebuilt).toEqual(original);
  });

  test("kcat-magic0-gzip: librdkafka's magic v0 message set is INVALID_RECORD", () => {
    const legacy = fixture("kcat-magic0-gzip");
    expect(legacy[16]).toBe(0);
    expect([...iterateBatches(legacy)]).toEqual([{ position: 0, sizeBytes: legacy.length }]);
    const error = errorOf(() => validateProduceRecords(legacy, 7));
    expect(error).toBeInstanceOf(InvalidRecordError);
    expect(error.code).toBe(ErrorCode.INVALID_RECORD);
    expect(() => decodeRecords(legacy)).toThrow(CorruptRecordError);
  });
});
