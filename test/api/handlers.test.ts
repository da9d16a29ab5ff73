import { expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { API_HANDLERS } from "../../src/api/handlers.ts";
import { apiSpec } from "../../src/protocol/generated/index.ts";

/** The README's table, as the registry would write it. */
function supportedApisMarkdown(): string {
  const rows = [...API_HANDLERS]
    .sort((a, b) => a.apiKey - b.apiKey)
    .map((h) => `| ${h.apiKey} | ${apiSpec(h.apiKey)!.name} | ${h.minVersion}-${h.maxVersion} |`);
  return ["| Key | API | Versions |", "|----:|-----|----------|", ...rows, ""].join("\n");
}

test("the README's Supported APIs table is exactly the handler registry", () => {
  const readme = readFileSync(join(import.meta.dir, "..", "..", "README.md"), "utf8");
  const table = readme.match(/<!-- supported-apis:start -->\n([\s\S]*)<!-- supported-apis:end -->/);
  expect(table?.[1]).toBe(supportedApisMarkdown());
});

test("one handler per API key", () => {
  const keys = API_HANDLERS.map((h) => h.apiKey);
  expect(new Set(keys).size).toBe(keys.length);
});
