/**
 * A full disk: appends fail with KAFKA_STORAGE_ERROR, nothing partial stays in the log, what
 * was written before is intact, and appends work again once space returns. Needs a tiny tmpfs,
 * so it mounts one (root only); without privileges it is skipped with a loud message.
 */

import { afterAll, expect, test } from "bun:test";
import * as fs from "node:fs";
import { ErrorCode, KafkaError } from "../../src/protocol/errors.ts";
import { verifyBatchCrc } from "../../src/protocol/record-batch.ts";
import { DEFAULT_LOG_CONFIG } from "../../src/storage/log-config.ts";
import { LogManager } from "../../src/storage/log-manager.ts";
import { SILENT_LOGGER } from "../../src/util/logger.ts";
import { batch, batchOffsets, readBytes, removeDir, tempDir } from "./helpers.ts";

const mountPoint = tempDir("quill-full-disk-");
const mounted =
  Bun.spawnSync(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", mountPoint]).exitCode === 0;
if (!mounted) {
  console.warn(
    "\n!!! full-disk test SKIPPED: cannot mount a 1 MiB tmpfs (needs root / CAP_SYS_ADMIN) !!!\n",
  );
}
afterAll(async () => {
  // Flushes started by segment rolls sync on the thread pool; the mount stays busy until done.
  await Bun.sleep(200);
  if (mounted) Bun.spawnSync(["umount", mountPoint]);
  removeDir(mountPoint);
});

test.skipIf(!mounted)("a full disk fails appends cleanly; appends resume with space", () => {
  const filler = `${mountPoint}/filler`;
  fs.writeFileSync(filler, new Uint8Array(300 * 1024));
  const manager = LogManager.open({
    logDirs: [`${mountPoint}/data`],
    defaultConfig: { ...DEFAULT_LOG_CONFIG, segmentBytes: 256 * 1024, indexIntervalBytes: 4096 },
    logger: SILENT_LOGGER,
  });
  const log = manager.getOrCreateLog("full", 0);
  let error: unknown = null;
  let appended = 0;
  // 1 MiB of tmpfs cannot hold 100 batches of 16 KiB; the loop ends at the first failure.
  for (let i = 0; i < 100 && error === null; i++) {
    const endBefore = log.logEndOffset;
    const sizeBefore = log.sizeBytes;
    try {
      log.appendAsLeader(batch(16, { valueBytes: 1000 }), -1);
      appended++;
    } catch (e) {
      error = e;
      expect(log.logEndOffset).toBe(endBefore);
      expect(log.sizeBytes).toBe(sizeBefore);
    }
  }
  expect(error).toBeInstanceOf(KafkaError);
  expect((error as KafkaError).code).toBe(ErrorCode.KAFKA_STORAGE_ERROR);
  expect(appended).toBeGreaterThan(10);
  // No partial batch on disk: the files hold exactly the committed bytes, all readable.
  const onDisk = fs
    .readdirSync(log.dir)
    .filter((n) => n.endsWith(".log"))
    .reduce((n, name) => n + fs.statSync(`${log.dir}/${name}`).size, 0);
  expect(onDisk).toBe(log.sizeBytes);
  let offset = 0n;
  let batches = 0;
  while (offset < log.logEndOffset) {
    const bytes = readBytes(log, offset, 1 << 20);
    expect(verifyBatchCrc(bytes, 0)).toBe(true);
    const offsets = batchOffsets(bytes);
    offset = offsets[offsets.length - 1].last + 1n;
    batches += offsets.length;
  }
  expect(batches).toBe(appended);
  // Space returns: appending works again and continues the offsets.
  fs.rmSync(filler);
  const result = log.appendAsLeader(batch(16, { valueBytes: 1000 }), -1);
  expect(result.baseOffset).toBe(BigInt(appended * 16));
  manager.close();
  const reopened = LogManager.open({ logDirs: [`${mountPoint}/data`], logger: SILENT_LOGGER });
  expect(reopened.getLog("full", 0)!.logEndOffset).toBe(BigInt((appended + 1) * 16));
  reopened.close();
});
