import { expect, test } from "bun:test";
import { compileSafePattern, SAFE_PATTERN_MAX_CHARS } from "../../src/util/safe-pattern.ts";

test("RE2-style patterns compile to whole-name matches", () => {
  const p = compileSafePattern("orders-[0-9]+|billing-.*");
  if (typeof p === "string") throw new Error(p);
  expect(["orders-12", "billing-x", "orders-", "xorders-1"].map((s) => p.test(s))).toEqual([
    true,
    true,
    false,
    false,
  ]);
  expect(typeof compileSafePattern("(?:ab)+c")).not.toBe("string");
  expect(typeof compileSafePattern("(ab|cd)x")).not.toBe("string");
  expect(typeof compileSafePattern("[(*]+")).not.toBe("string");
});

test("patterns that could backtrack for minutes, or that RE2 lacks, are refused", () => {
  for (const bad of [
    "(a*)*b",
    "(a+)+",
    "(a|aa)*",
    "((ab)*c)+",
    "(x)\\1",
    "a(?=b)",
    "(?<!a)b",
    "(",
  ]) {
    expect(typeof compileSafePattern(bad)).toBe("string");
  }
  expect(typeof compileSafePattern("a".repeat(SAFE_PATTERN_MAX_CHARS + 1))).toBe("string");
});
