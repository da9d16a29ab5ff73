// `bun run build`: compiles Quill into one standalone executable, dist/quill.
//
// --bytecode needs --format=esm because src/main.ts uses top-level await (Bun 1.4.4 otherwise
// fails with misleading parse errors). The version comes from package.json through a JSON
// import, which the bundler inlines. Native addons (snappy, lz4-napi) are embedded because
// they are required statically; test/cli/compiled-binary.test.ts runs the binary without
// node_modules to prove it. The Workers are entry points too (BUILD_ENTRY_POINTS).
// The git commit and build date are passed with --define (scripts/build-info.ts); the release
// build (scripts/release.ts) leaves the source map out.
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { BUILD_ENTRY_POINTS, buildCommit, buildDate, defineArgs } from "./build-info.ts";

const root = join(import.meta.dir, "..");
const outfile = join(root, "dist", "quill");
mkdirSync(join(root, "dist"), { recursive: true });

const args = [
  "build",
  "--compile",
  "--minify",
  "--sourcemap",
  "--bytecode",
  "--format=esm",
  ...defineArgs(buildCommit(root), buildDate()),
  ...BUILD_ENTRY_POINTS.map((entry) => join(root, entry)),
  "--outfile",
  outfile,
];
const startedMs = performance.now();
const result = Bun.spawnSync([process.execPath, ...args], {
  cwd: root,
  stdout: "inherit",
  stderr: "inherit",
});
if (result.exitCode !== 0) {
  console.error(`build failed: bun ${args.join(" ")} exited with ${result.exitCode}`);
  process.exit(1);
}
const sizeMb = (Bun.file(outfile).size / 1e6).toFixed(1);
console.log(`built ${outfile} (${sizeMb} MB) in ${Math.round(performance.now() - startedMs)} ms`);
