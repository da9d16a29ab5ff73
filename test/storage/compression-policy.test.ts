import { afterEach, beforeEach, describe, expect, test } from "bun:test";
import * as fs from "node:fs";
import * as path from "node:path";
import { CompressionType } from "../../src/protocol/compression.ts";
import { ErrorCode, KafkaError } from "../../src/protocol/errors.ts";
import {
  buildRecordBatch,
  compressionType,
  computeBatchCrc,
  decodeRecords,
  readBatchHeader,
} from "../../src/protocol/record-batch.ts";
import type { CompressionPolicy } from "../../src/storage/compression-policy.ts";
import { DEFAULT_LOG_CONFIG } from "../../src/storage/log-config.ts";
import { OpenFilePool } from "../../src/storage/open-file-pool.ts";
import { UnifiedLog } from "../../src/storage/unified-log.ts";
import { SILENT_LOGGER } from "../../src/util/logger.ts";
import { removeDir, tempDir } from "./helpers.ts";

let root: string;

function open(compression: CompressionPolicy) {
  return UnifiedLog.load({
    dir: path.join(root, "events-0"),
    topic: "events",
    partition: 0,
    config: { ...DEFAULT_LOG_CONFIG, compressionType: compression },
    recoveryPoint: 0n,
    logStartOffset: 0n,
    cleanShutdown: true,
    env: { pool: new OpenFilePool(64), logger: SILENT_LOGGER, maxSegmentsPerLog: 1000 },
  });
}

const enc = new TextEncoder();
const CODECS: Record<string, CompressionType> = {
  uncompressed: CompressionType.None,
  gzip: CompressionType.Gzip,
  snappy: CompressionType.Snappy,
  lz4: CompressionType.Lz4,
  zstd: CompressionType.Zstd,
};

function sample(codec: CompressionType, baseSequence = 100) {
  const records = Array.from({ length: 20 }, (_, i) => ({
    key: enc.encode(`key-${i}`),
    value: enc.encode(`value-${i}-`.repeat(10)),
    headers: [{ key: "h", value: enc.encode(String(i)) }],
    timestampMs: 1_700_000_000_000 + i * 7,
  }));
  const batch = buildRecordBatch(records, {
    compression: codec,
    producerId: 42n,
    producerEpoch: 3,
    baseSequence,
  });
  return { records, batch };
}

/** The batches in the segment file on disk: codec bits and decoded records. */
function storedBatches() {
  const bytes = fs.readFileSync(path.join(root, "events-0", "00000000000000000000.log"));
  const out = [];
  let at = 0;
  while (at < bytes.length) {
    const header = readBatchHeader(bytes, at);
    const batch = bytes.subarray(at, at + 12 + header.batchLength);
    out.push({ header, batch, records: decodeRecords(batch) });
    at += 12 + header.batchLength;
  }
  return out;
}

beforeEach(() => {
  root = tempDir("quill-compression-");
});
afterEach(() => removeDir(root));

describe("compression.type on the leader", () => {
  for (const [policy, target] of Object.entries(CODECS)) {
    test(`${policy}: every producer codec is stored as ${policy}, records unchanged`, () => {
      const log = open(policy as CompressionPolicy);
      for (const [i, source] of Object.values(CODECS).entries()) {
        log.appendAsLeader(sample(source, 100 + i * 20).batch, -1);
      }
      const stored = storedBatches();
      expect(stored.length).toBe(5);
      const { records } = sample(CompressionType.None);
      for (const [i, { header, records: got }] of stored.entries()) {
        expect(compressionType(header.attributes)).toBe(target);
        expect(header.baseOffset).toBe(BigInt(i * 20));
        expect(header.producerId).toBe(42n);
        expect(header.producerEpoch).toBe(3);
        expect(header.baseSequence).toBe(100 + i * 20);
        expect(header.lastOffsetDelta).toBe(19);
        expect(got.map((r) => new TextDecoder().decode(r.value!))).toEqual(
          records.map((r) => new TextDecoder().decode(r.value)),
        );
        const timestamps = got.map((r) => header.baseTimestamp + r.timestampDelta);
        expect(timestamps).toEqual(records.map((r) => BigInt(r.timestampMs)));
        expect(got[3].headers[0].key).toBe("h");
      }
      log.close();
    });
  }

  test("producer: batches are stored byte for byte as sent (after the base offset)", () => {
    const log = open("producer");
    const codecs = [CompressionType.Snappy, CompressionType.Zstd];
    const sent = codecs.map((c, i) => sample(c, i * 20).batch);
    const copies = sent.map((b) => b.slice());
    for (const b of sent) log.appendAsLeader(b, -1);
    const stored = storedBatches();
    for (const [i, { batch }] of stored.entries()) {
      expect(new Uint8Array(batch.subarray(8))).toEqual(copies[i]!.subarray(8));
    }
    log.close();
  });
});

describe("corrupt compressed payloads", () => {
  function corruptGzip(): Uint8Array {
    const { batch } = sample(CompressionType.Gzip);
    // Garbage in the middle of the deflate stream, with a CRC that matches it (as a buggy
    // producer would compute), so only decompression can find it.
    for (let i = 80; i < 120; i++) batch[i] ^= 0x5a;
    new DataView(batch.buffer).setUint32(17, computeBatchCrc(batch));
    return batch;
  }

  function codeOf(action: () => unknown): number {
    try {
      action();
    } catch (e) {
      if (e instanceof KafkaError) return e.code;
      throw e;
    }
    return ErrorCode.NONE;
  }

  test("recompression refuses them with CORRUPT_MESSAGE and writes nothing", () => {
    const log = open("lz4");
    expect(codeOf(() => log.appendAsLeader(corruptGzip(), -1))).toBe(ErrorCode.CORRUPT_MESSAGE);
    expect(log.logEndOffset).toBe(0n);
    expect(log.sizeBytes).toBe(0);
    // The log still takes good batches afterwards.
    log.appendAsLeader(sample(CompressionType.Gzip).batch, -1);
    expect(storedBatches().length).toBe(1);
    log.close();
  });

  test("a CRC mismatch is CORRUPT_MESSAGE under every policy", () => {
    for (const policy of ["producer", "zstd"] as const) {
      const log = open(policy);
      const { batch } = sample(CompressionType.Snappy);
      batch[90] ^= 1;
      expect(codeOf(() => log.appendAsLeader(batch, -1))).toBe(ErrorCode.CORRUPT_MESSAGE);
      expect(log.logEndOffset).toBe(0n);
      log.close();
      removeDir(path.join(root, "events-0"));
    }
  });
});
