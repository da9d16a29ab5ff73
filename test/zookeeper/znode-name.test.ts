import { expect, test } from "bun:test";
import { decodeZnodeName, encodeZnodeName } from "../../src/zookeeper/znode-name.ts";

test("names ZooKeeper accepts stay as they are, so Kafka's paths are unchanged", () => {
  for (const name of [
    "my-group",
    "console-consumer-12345",
    "a.b_c",
    "grüße",
    "with space",
    "...",
  ]) {
    expect(encodeZnodeName(name)).toBe(name);
    expect(decodeZnodeName(name)).toBe(name);
  }
});

test("other names are percent-encoded and decode back exactly", () => {
  const cases: [string, string][] = [
    ["a/b", "a%2Fb"],
    [".", "%2E"],
    ["..", "%2E%2E"],
    ["100%", "100%25"],
    ["tab\there", "tab%09here"],
    ["emoji 😀", "emoji%20%F0%9F%98%80"],
  ];
  for (const [name, encoded] of cases) {
    expect(encodeZnodeName(name)).toBe(encoded);
    expect(decodeZnodeName(encoded)).toBe(name);
    expect(encoded.includes("/")).toBe(false);
  }
});

test("an empty name is a programmer error", () => {
  expect(() => encodeZnodeName("")).toThrow("must not be empty");
});
