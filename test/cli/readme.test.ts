import { expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { configKeysMarkdown } from "../../src/cli/config-keys.ts";

const root = join(import.meta.dir, "..", "..");
const readme = readFileSync(join(root, "README.md"), "utf8");

test("the README's config tables are exactly what the schema generates (`quill config-keys`)", () => {
  const table = readme.match(/<!-- config-keys:start -->\n([\s\S]*)<!-- config-keys:end -->/);
  expect(table?.[1]).toBe(configKeysMarkdown());
});

test("the README's fresh-machine commands are the ones .ci/run performs", () => {
  expect(readme).toContain("npm ci && npm run build && ./dist/quill serve");
  expect(readme).toContain("npm ci && npm test");
  const ci = readFileSync(join(root, ".ci", "run"), "utf8");
  expect(ci).toContain("npm ci --no-audit --no-fund");
  expect(ci).toContain("bun run build");
  expect(ci).toMatch(/^npm test /m);
  const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));
  expect(pkg.scripts.test).toBe("bun test");
  expect(pkg.scripts.build).toBe("bun scripts/build.ts");
});
