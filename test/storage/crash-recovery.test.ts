/**
 * kill -9 test: a writer child process appends and flushes, reporting each flushed offset; it is
 * killed with SIGKILL at random moments, 20 times on the same log dir. After each kill the log
 * is reopened (recovering it) and must hold every batch reported flushed, byte-identical (same
 * CRC), and read cleanly through the fetch path from its start to its end.
 */

import { afterAll, expect, test } from "bun:test";
import * as path from "node:path";
import { verifyBatchCrc } from "../../src/protocol/record-batch.ts";
import { LogManager } from "../../src/storage/log-manager.ts";
import type { UnifiedLog } from "../../src/storage/unified-log.ts";
import { SILENT_LOGGER } from "../../src/util/logger.ts";
import { readBytes, removeDir, tempDir } from "./helpers.ts";

const TRIALS = 20;
const WRITER = path.join(import.meta.dir, "fixtures", "crash-writer.ts");
const dir = tempDir("quill-crash-");
afterAll(() => removeDir(dir));

interface WriterReport {
  appended: Map<bigint, number>;
  flushedOffset: bigint;
}

async function runWriterAndKill(seed: number, runMs: number): Promise<WriterReport> {
  const child = Bun.spawn([process.execPath, WRITER, dir, String(seed)], {
    stdout: "pipe",
    stderr: "ignore",
  });
  const reader = child.stdout.getReader();
  const decoder = new TextDecoder();
  let text = "";
  // Wait until the writer has recovered the log and flushed once, then let it run for runMs.
  while (!text.includes("\nF ")) {
    const { value, done } = await reader.read();
    if (done) throw new Error("writer exited before starting");
    text += decoder.decode(value);
  }
  await Bun.sleep(runMs);
  child.kill("SIGKILL");
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    text += decoder.decode(value);
  }
  expect(await child.exited).not.toBe(0);
  const report: WriterReport = { appended: new Map(), flushedOffset: 0n };
  for (const line of text.split("\n")) {
    const [kind, a, b] = line.split(" ");
    if (kind === "B" && b !== undefined) report.appended.set(BigInt(a), Number(b));
    if (kind === "F" && a !== undefined) report.flushedOffset = BigInt(a);
  }
  return report;
}

/** Reads the whole log through the fetch path; returns base offset -> stored CRC. */
function readWholeLog(log: UnifiedLog): Map<bigint, number> {
  const batches = new Map<bigint, number>();
  let offset = log.logStartOffset;
  // Each pass reads at least one batch (minOneMessage), so this ends at the LEO.
  while (offset < log.logEndOffset) {
    const bytes = readBytes(log, offset, 256 * 1024);
    const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    let at = 0;
    while (at < bytes.length) {
      const base = view.getBigInt64(at);
      expect(base).toBe(offset);
      expect(verifyBatchCrc(bytes, at)).toBe(true);
      batches.set(base, view.getUint32(at + 17));
      offset = base + BigInt(view.getInt32(at + 23)) + 1n;
      at += 12 + view.getInt32(at + 8);
    }
  }
  return batches;
}

test(`kill -9 at random moments, ${TRIALS} trials: flushed batches survive`, async () => {
  let checkedBatches = 0;
  let maxSegments = 0;
  let maxLogStartOffset = 0n;
  for (let trial = 0; trial < TRIALS; trial++) {
    const report = await runWriterAndKill(trial + 1, 30 + Math.floor(Math.random() * 250));
    expect(report.flushedOffset).toBeGreaterThan(0n);
    const manager = LogManager.open({ logDirs: [dir], logger: SILENT_LOGGER });
    const log = manager.getLog("crash", 0)!;
    expect(log.logEndOffset).toBeGreaterThanOrEqual(report.flushedOffset);
    const stored = readWholeLog(log);
    for (const [base, crc] of report.appended) {
      if (base < log.logStartOffset || base >= report.flushedOffset) continue;
      expect(stored.get(base)).toBe(crc);
      checkedBatches++;
    }
    maxSegments = Math.max(maxSegments, log.segmentCount);
    if (log.logStartOffset > maxLogStartOffset) maxLogStartOffset = log.logStartOffset;
    // Not closed cleanly on purpose: the next writer must recover after a crash again.
    manager.stop();
  }
  expect(checkedBatches).toBeGreaterThan(TRIALS * 10);
  // The trials went through rolls and retention, not just one segment.
  expect(maxSegments).toBeGreaterThan(2);
  expect(maxLogStartOffset).toBeGreaterThan(0n);
}, 60_000);
