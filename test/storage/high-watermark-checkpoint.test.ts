import { afterEach, beforeEach, expect, test } from "bun:test";
import * as fs from "node:fs";
import * as path from "node:path";
import { LogManager } from "../../src/storage/log-manager.ts";
import { HIGH_WATERMARK_CHECKPOINT_FILE } from "../../src/storage/offset-checkpoint-file.ts";
import { SILENT_LOGGER } from "../../src/util/logger.ts";
import { batch, removeDir, tempDir } from "./helpers.ts";

let dir: string;
beforeEach(() => (dir = tempDir("quill-hw-")));
afterEach(() => removeDir(dir));

const open = () => LogManager.open({ logDirs: [dir], logger: SILENT_LOGGER });
const checkpointText = () =>
  fs.readFileSync(path.join(dir, HIGH_WATERMARK_CHECKPOINT_FILE), "utf8");

test("high watermarks are checkpointed per log dir and offered back at the next open", () => {
  const first = open();
  const log = first.getOrCreateLog("orders", 3);
  log.appendAsLeader(batch(10), -1);
  log.highWatermark = 4n;
  first.close();
  expect(checkpointText()).toBe("0\n1\norders 3 4\n");
  const second = open();
  expect(second.checkpointedHighWatermark("orders", 3)).toBe(4n);
  expect(second.checkpointedHighWatermark("orders", 4)).toBeUndefined();
  // Opening does not overwrite it with the LEO before the replica manager applied it.
  expect(checkpointText()).toBe("0\n1\norders 3 4\n");
  second.close();
});
