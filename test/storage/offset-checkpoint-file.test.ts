import { afterEach, beforeEach, expect, test } from "bun:test";
import * as fs from "node:fs";
import {
  readOffsetCheckpoint,
  writeOffsetCheckpoint,
} from "../../src/storage/offset-checkpoint-file.ts";
import { LineLogger } from "../support/line-logger.ts";
import { removeDir, tempDir } from "./helpers.ts";

let dir: string;
beforeEach(() => (dir = tempDir()));
afterEach(() => removeDir(dir));

test("writes Kafka's text format atomically and reads it back", () => {
  const file = `${dir}/recovery-point-offset-checkpoint`;
  writeOffsetCheckpoint(file, [
    { topic: "orders", partition: 0, offset: 1200n },
    { topic: "my-topic", partition: 11, offset: 7n },
  ]);
  expect(fs.readFileSync(file, "utf8")).toBe("0\n2\norders 0 1200\nmy-topic 11 7\n");
  expect(fs.existsSync(`${file}.tmp`)).toBe(false);
  const lines: string[] = [];
  const offsets = readOffsetCheckpoint(file, new LineLogger(lines));
  expect(offsets).toEqual(
    new Map([
      ["orders-0", 1200n],
      ["my-topic-11", 7n],
    ]),
  );
  expect(lines).toEqual([]);
});

test("a missing or malformed file reads as empty, and says so", () => {
  const lines: string[] = [];
  expect(readOffsetCheckpoint(`${dir}/none`, new LineLogger(lines)).size).toBe(0);
  for (const bad of ["1\n0\n", "0\n2\nt 0 5\n", "0\n1\nt zero 5\n"]) {
    fs.writeFileSync(`${dir}/bad`, bad);
    expect(readOffsetCheckpoint(`${dir}/bad`, new LineLogger(lines)).size).toBe(0);
  }
  expect(lines).toHaveLength(3);
});
