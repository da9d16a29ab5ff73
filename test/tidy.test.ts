/**
 * Holds TigerBeetle's tidy rules for hand-written code (scripts/tidy.ts finds the offenders): no
 * function over 70 lines, no line over 100 columns. Offenders that predate the rule are listed in
 * tidy-allowlist.json, which may only shrink: an unlisted function may not offend, a listed file
 * may not gain long lines, and an entry that no longer offends must be removed.
 */
import { expect, test } from "bun:test";
import {
  FUNCTION_LINES_MAX,
  findings,
  LINE_COLUMNS_MAX,
  loadAllowlist,
  outsidePointers,
} from "../scripts/tidy.ts";

const found = findings();
const allowed = loadAllowlist();

test(`no new function is longer than ${FUNCTION_LINES_MAX} lines`, () => {
  const unlisted = [...found.functions]
    .filter(([key]) => !(key in allowed.functions))
    .map(([key, lines]) => `${key} (${lines} lines)`);
  expect(unlisted).toEqual([]);
});

test(`no file gains lines longer than ${LINE_COLUMNS_MAX} columns`, () => {
  const over = [...found.longLines]
    .filter(([file, count]) => count > (allowed.longLines[file] ?? 0))
    .map(
      ([file, count]) => `${file}: ${count} long lines, ${allowed.longLines[file] ?? 0} allowed`,
    );
  expect(over).toEqual([]);
});

test("the allowlist only names offenders that remain (remove what was fixed)", () => {
  const fixedFunctions = Object.keys(allowed.functions).filter((key) => !found.functions.has(key));
  const fixedFiles = Object.entries(allowed.longLines)
    .filter(([file, count]) => (found.longLines.get(file) ?? 0) < count)
    .map(
      ([file, count]) => `${file}: ${found.longLines.get(file) ?? 0} long lines, ${count} listed`,
    );
  expect(fixedFunctions).toEqual([]);
  expect(fixedFiles).toEqual([]);
});

test("no source comment or bunfig.toml points outside the repository (docs/ has it)", () => {
  expect(outsidePointers()).toEqual([]);
});
