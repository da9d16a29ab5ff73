import { describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { compressSync } from "snappy";
import {
  CompressionType,
  compress,
  decompress,
  isCompressionType,
} from "../../src/protocol/compression.ts";
import { ErrorCode } from "../../src/protocol/errors.ts";
import {
  buildRecordBatch,
  decodeRecords,
  readBatchHeader,
  verifyBatchCrc,
} from "../../src/protocol/record-batch.ts";
import { CorruptRecordError } from "../../src/protocol/record-errors.ts";
import { isXerialFramed } from "../../src/protocol/snappy-xerial.ts";
import { xerialPayload } from "../fixtures/batches/expected.ts";

const CODECS = [
  CompressionType.Gzip,
  CompressionType.Snappy,
  CompressionType.Lz4,
  CompressionType.Zstd,
] as const;
const MiB = 1024 * 1024;

/** JSON log lines: compressible like real traffic, not a run of zeros. */
function logLines(sizeBytes: number): Uint8Array {
  const lines: string[] = [];
  let total = 0;
  for (let i = 0; total < sizeBytes; i++) {
    const line =
      `{"ts":${1_700_000_000_000 + i * 7},"level":"${i % 9 ? "info" : "warn"}",` +
      `"msg":"request ${(i * 2654435761) % 100_000} served","path":"/api/v1/items/${i % 97}",` +
      `"ms":${(i * 31) % 500}}\n`;
    lines.push(line);
    total += line.length;
  }
  return new TextEncoder().encode(lines.join("")).subarray(0, sizeBytes);
}

function errorOf(run: () => unknown): unknown {
  try {
    run();
  } catch (e) {
    return e;
  }
  throw new Error("expected an error");
}

describe("codec round trips", () => {
  test("gzip and zstd levels (Kafka's ranges, ends included) round trip at their own sizes", () => {
    const input = logLines(300_000);
    const levels = [
      [CompressionType.Gzip, [-1, 1, 9]],
      [CompressionType.Zstd, [-131072, -5, 0, 1, 3, 22]],
    ] as const;
    for (const [codec, codecLevels] of levels) {
      const sizes = codecLevels.map((level) => {
        const packed = compress(codec, input, level);
        expect(decompress(codec, packed, input.length)).toEqual(input);
        return packed.length;
      });
      expect(new Set(sizes).size).toBeGreaterThan(2);
    }
    // Unset and the default level are the same thing.
    expect(compress(CompressionType.Gzip, input)).toEqual(
      compress(CompressionType.Gzip, input, -1),
    );
    expect(compress(CompressionType.Zstd, input)).toEqual(compress(CompressionType.Zstd, input, 3));
  });

  for (const codec of CODECS) {
    test(`codec ${codec}: empty, tiny, 100 KiB and 3 MiB inputs round trip`, () => {
      const inputs = [new Uint8Array(0), Uint8Array.of(7), logLines(100_000), logLines(3 * MiB)];
      for (const input of inputs) {
        const packed = compress(codec, input);
        if (input.length > 1000) expect(packed.length).toBeLessThan(input.length / 2);
        expect(decompress(codec, packed, input.length)).toEqual(input);
      }
    });

    test(`codec ${codec}: a batch built with it decodes to the same records`, () => {
      const values = Array.from({ length: 50 }, (_, i) => logLines(200 + i * 10));
      const batch = buildRecordBatch(
        values.map((value, i) => ({ key: new TextEncoder().encode(`k${i}`), value })),
        { compression: codec, timestampMs: 1_700_000_000_000 },
      );
      expect(readBatchHeader(batch).attributes & 7).toBe(codec);
      expect(verifyBatchCrc(batch)).toBe(true);
      const records = decodeRecords(batch);
      expect(records.map((r) => r.value)).toEqual(values);
      expect(records.map((r) => r.offsetDelta)).toEqual(values.map((_, i) => i));
    });
  }

  test("None passes data through, within the limit", () => {
    const data = Uint8Array.of(1, 2, 3);
    expect(compress(CompressionType.None, data)).toBe(data);
    expect(decompress(CompressionType.None, data, 3)).toBe(data);
    const tooLong = errorOf(() => decompress(CompressionType.None, data, 2));
    expect(tooLong).toBeInstanceOf(CorruptRecordError);
  });

  test("only codec ids 0..4 exist", () => {
    expect([0, 1, 2, 3, 4].every(isCompressionType)).toBe(true);
    expect([5, 6, 7, -1, 1.5].some(isCompressionType)).toBe(false);
    const e = errorOf(() => decompress(5, Uint8Array.of(1), 100));
    expect(e).toBeInstanceOf(CorruptRecordError);
    expect((e as CorruptRecordError).code).toBe(ErrorCode.CORRUPT_MESSAGE);
  });
});

describe("snappy framing", () => {
  test("compress writes xerial framing with 32 KiB blocks, like the Java client", () => {
    const input = logLines(100_000);
    const packed = compress(CompressionType.Snappy, input);
    expect(isXerialFramed(packed)).toBe(true);
    expect([...packed.subarray(0, 16)]).toEqual([
      0x82, 0x53, 0x4e, 0x41, 0x50, 0x50, 0x59, 0x00, 0, 0, 0, 1, 0, 0, 0, 1,
    ]);
    let blocks = 0;
    const dv = new DataView(packed.buffer, packed.byteOffset);
    for (let pos = 16; pos < packed.length; pos += 4 + dv.getInt32(pos)) blocks++;
    expect(blocks).toBe(Math.ceil(100_000 / 32_768));
  });

  test("snappy-java's own SnappyOutputStream output (multi-block xerial) decodes", () => {
    const path = join(import.meta.dir, "../fixtures/batches/java-xerial-snappy.bin");
    const xerial = new Uint8Array(readFileSync(path));
    const payload = xerialPayload();
    expect(isXerialFramed(xerial)).toBe(true);
    expect(payload.length).toBeGreaterThan(2 * 32 * 1024);
    expect(decompress(CompressionType.Snappy, xerial, payload.length)).toEqual(payload);
    expect(() => decompress(CompressionType.Snappy, xerial, payload.length - 1)).toThrow(
      CorruptRecordError,
    );
  });

  test("a raw snappy block (as librdkafka may send) decodes too", () => {
    const input = logLines(50_000);
    const raw = compressSync(input);
    expect(isXerialFramed(raw)).toBe(false);
    expect(decompress(CompressionType.Snappy, raw, input.length)).toEqual(input);
  });

  test("xerial block lengths that run past the data are corrupt", () => {
    const packed = compress(CompressionType.Snappy, logLines(10_000)).slice();
    new DataView(packed.buffer).setInt32(16, 1_000_000);
    expect(errorOf(() => decompress(CompressionType.Snappy, packed, MiB))).toBeInstanceOf(
      CorruptRecordError,
    );
    new DataView(packed.buffer).setInt32(16, -5);
    expect(errorOf(() => decompress(CompressionType.Snappy, packed, MiB))).toBeInstanceOf(
      CorruptRecordError,
    );
  });
});

describe("hostile input", () => {
  for (const codec of CODECS) {
    test(`codec ${codec}: garbage, truncation and bit flips raise CorruptRecordError only`, () => {
      const packed = compress(codec, logLines(20_000));
      const inputs: Uint8Array[] = [
        new Uint8Array(0),
        Uint8Array.of(0xff),
        new Uint8Array(100).fill(0xab),
        packed.subarray(0, packed.length >> 1),
        packed.subarray(0, 20),
      ];
      let seed = 99;
      const rand = () => (seed = (seed * 1103515245 + 12345) & 0x7fffffff);
      for (let i = 0; i < 300; i++) {
        const flipped = packed.slice();
        flipped[rand() % flipped.length] ^= 1 << (rand() % 8);
        inputs.push(flipped);
      }
      let refused = 0;
      for (const input of inputs) {
        try {
          decompress(codec, input, 64 * 1024);
        } catch (e) {
          expect(e).toBeInstanceOf(CorruptRecordError);
          refused++;
        }
      }
      // Every structural case above must be refused; some bit flips land in literals and
      // decompress to different bytes, which only the batch CRC can catch.
      expect(refused).toBeGreaterThanOrEqual(5);
    });

    test(`codec ${codec}: a decompression bomb stops at the output limit`, () => {
      const bomb = compress(codec, new Uint8Array(64 * MiB));
      expect(bomb.length).toBeLessThan(4 * MiB);
      const e = errorOf(() => decompress(codec, bomb, MiB));
      expect(e).toBeInstanceOf(CorruptRecordError);
      expect((e as Error).message).toContain("limit");
      expect(decompress(codec, bomb, 64 * MiB).length).toBe(64 * MiB);
      // Compressing and inflating 64 MiB twice takes seconds on a loaded 2-core machine; the
      // limit is what is checked here, not speed.
    }, 30_000);
  }

  test("decodeRecords enforces its own uncompressed limit", () => {
    const batch = buildRecordBatch([{ value: new Uint8Array(2 * MiB) }], {
      compression: CompressionType.Zstd,
    });
    expect(batch.length).toBeLessThan(10_000);
    expect(errorOf(() => decodeRecords(batch, MiB))).toBeInstanceOf(CorruptRecordError);
    expect(decodeRecords(batch, 3 * MiB)[0].value?.length).toBe(2 * MiB);
  });
});

describe("inside a compiled binary", () => {
  test("every codec works in a `bun build --compile` binary run without node_modules", async () => {
    const dir = mkdtempSync(join(tmpdir(), "quill-codecs-"));
    try {
      const binary = join(dir, "codecs");
      const build = Bun.spawnSync([
        process.execPath,
        "build",
        "--compile",
        join(import.meta.dir, "compiled-codecs-main.ts"),
        "--outfile",
        binary,
      ]);
      expect(build.exitCode, build.stderr.toString()).toBe(0);
      const env = { PATH: "/usr/bin:/bin", TMPDIR: dir };
      const run = Bun.spawnSync([binary], { cwd: dir, env });
      const report = JSON.parse(run.stdout.toString());
      expect(report.standalone).toBe(true);
      const allOk = { None: true, Gzip: true, Snappy: true, Lz4: true, Zstd: true };
      expect(report.results).toEqual(allOk);
      expect(run.exitCode).toBe(0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 30_000);
});

describe("the native codecs load at their first use", () => {
  test("a broker's code maps no snappy or lz4 addon until a batch needs one", () => {
    // A process of its own: this one may have loaded them already.
    const src = join(import.meta.dir, "../../src");
    const script = `
      const mapped = () => require("node:fs").readFileSync("/proc/self/maps", "utf8");
      await import(${JSON.stringify(join(src, "broker/broker.ts"))});
      const before = mapped();
      const codecs = await import(${JSON.stringify(join(src, "protocol/compression.ts"))});
      codecs.compress(codecs.CompressionType.Snappy, new Uint8Array(10));
      codecs.compress(codecs.CompressionType.Lz4, new Uint8Array(10));
      const after = mapped();
      console.log(JSON.stringify([before, after].map((m) => [/snappy/.test(m), /lz4/.test(m)])));`;
    const run = Bun.spawnSync([process.execPath, "-e", script]);
    expect(run.exitCode, run.stderr.toString()).toBe(0);
    expect(JSON.parse(run.stdout.toString())).toEqual([
      [false, false],
      [true, true],
    ]);
  }, 30_000);
});
