/**
 * KIP-112 in the LogManager: an I/O error on one log dir takes that dir's logs offline and
 * leaves the other dir serving; a dir that cannot be opened at start is offline from the start.
 * The faults are real: a log dir removed under the manager (the next roll cannot create its
 * files) and a log dir path that is a plain file.
 */
import { afterEach, expect, test } from "bun:test";
import * as fs from "node:fs";
import { ErrorCode, KafkaError } from "../../src/protocol/errors.ts";
import { LogManager } from "../../src/storage/log-manager.ts";
import { SILENT_LOGGER } from "../../src/util/logger.ts";
import { batch, removeDir, tempDir } from "./helpers.ts";

let root = "";
afterEach(() => removeDir(root));

function storageCode(run: () => unknown): number {
  try {
    run();
  } catch (error) {
    if (error instanceof KafkaError) return error.code;
    throw error;
  }
  return ErrorCode.NONE;
}

test("an I/O error fails only its log dir; its partitions stay offline", () => {
  root = tempDir("quill-jbod-");
  const [a, b] = [`${root}/a`, `${root}/b`];
  const manager = LogManager.open({ logDirs: [a, b], logger: SILENT_LOGGER });
  const failures: string[] = [];
  manager.onLogDirFailure((dir, partitions, allOffline) => {
    failures.push(`${dir}:${partitions.map((p) => `${p.topic}-${p.partition}`)}:${allOffline}`);
  });
  const inA = manager.getOrCreateLog("t", 0);
  const inB = manager.getOrCreateLog("t", 1);
  expect([manager.logDirOf(inA), manager.logDirOf(inB)]).toEqual([a, b]);
  inB.appendAsLeader(batch(3), 0);
  fs.rmSync(b, { recursive: true });
  let error: unknown = null;
  try {
    inB.roll();
  } catch (e) {
    error = e;
  }
  expect(manager.maybeFailLogDirOf(inB, error)).toBe(true);
  expect(failures).toEqual([`${b}:t-1:false`]);
  expect(manager.isLogDirOffline(b)).toBe(true);
  expect(manager.liveLogDirs).toEqual([a]);
  expect(manager.getLog("t", 1)).toBeUndefined();
  expect(manager.isOfflinePartition("t", 1)).toBe(true);
  expect(storageCode(() => manager.getOrCreateLog("t", 1))).toBe(ErrorCode.KAFKA_STORAGE_ERROR);
  // An existing replica may not be recreated elsewhere while a dir is offline; a new one may.
  expect(storageCode(() => manager.getOrCreateLog("u", 0, undefined, false))).toBe(
    ErrorCode.KAFKA_STORAGE_ERROR,
  );
  expect(manager.logDirOf(manager.getOrCreateLog("u", 0, undefined, true))).toBe(a);
  inA.appendAsLeader(batch(2), 0);
  expect(inA.logEndOffset).toBe(2n);
  // Errors that are not the disk's (a closed log) fail nothing.
  expect(manager.maybeFailLogDirOf(inA, new KafkaError(ErrorCode.KAFKA_STORAGE_ERROR))).toBe(false);
  manager.close();
  expect(fs.existsSync(`${a}/.kafka_cleanshutdown`)).toBe(true);
});

test("a log dir that cannot be opened is offline from the start; none at all is an error", () => {
  root = tempDir("quill-jbod-");
  const [good, file] = [`${root}/good`, `${root}/file`];
  fs.writeFileSync(file, "not a directory");
  const manager = LogManager.open({ logDirs: [good, file], logger: SILENT_LOGGER });
  expect(manager.liveLogDirs).toEqual([good]);
  expect(manager.isLogDirOffline(file)).toBe(true);
  expect(manager.logDirOf(manager.getOrCreateLog("t", 0))).toBe(good);
  manager.close();
  expect(() => LogManager.open({ logDirs: [file], logger: SILENT_LOGGER })).toThrow(
    "none of the log dirs",
  );
});
