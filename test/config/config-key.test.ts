import { expect, test } from "bun:test";
import { z } from "zod";
import { BROKER_CONFIG_KEYS } from "../../src/config/broker-config.ts";
import { valueType } from "../../src/config/config-key.ts";
import { TOPIC_CONFIG_KEYS } from "../../src/config/topic-config-keys.ts";

test("a value type builds its schema at the first use, once", () => {
  let builds = 0;
  const type = valueType({
    type: "STRING",
    expected: "a word",
    schema: () => {
      builds++;
      return z.string().min(1);
    },
    format: (value) => value,
    refusal: (text) => ({ value: text, reason: "empty" }),
  });
  expect(builds).toBe(0);
  expect(type.schema.safeParse("word").success).toBe(true);
  expect(type.schema.safeParse("").success).toBe(false);
  expect(builds).toBe(1);
});

test("every broker and topic key's schema is built on first use, not at start", () => {
  // Built at start, the keys' zod schemas held about 4 MB of every broker's heap.
  const keys = [...Object.entries(BROKER_CONFIG_KEYS), ...Object.entries(TOPIC_CONFIG_KEYS)];
  const eager = keys
    .filter(([, k]) => Object.getOwnPropertyDescriptor(k.valueType, "schema")?.get === undefined)
    .map(([name]) => name);
  expect(eager).toEqual([]);
});
