// `npm run release` (or `scripts/release`): builds, from a clean checkout, one standalone
// executable per platform into dist/release/, a tarball per platform with the README, LICENSE,
// NOTICE and packaging/ examples, and SHA256SUMS over all of them.
//
// Cross-compilation takes nothing but npm registry packages: Bun's runtime for each target is
// the `@oven/bun-<os>-<arch>` package (fetched with `npm pack`, cached in
// ~/.cache/quill-release, handed to `bun build --compile-executable-path`), and the native
// addons (@node-rs/crc32, lz4-napi, snappy) come from their per-platform packages, installed by
// `npm ci --omit=dev --os --cpu --libc` into a staging copy of the source. The bundler embeds
// whichever platform package is present there, so each binary holds its own platform's addons.
//
// Options: --targets linux-x64,linux-arm64 (default: every target below), --allow-dirty.
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { homedir, tmpdir } from "node:os";
import { join } from "node:path";
import {
  BUILD_ENTRY_POINTS,
  buildCommit,
  buildDate,
  defineArgs,
  runChecked,
} from "./build-info.ts";
import { writeNotice } from "./release-notice.ts";

const root = join(import.meta.dir, "..");
const releaseDir = join(root, "dist", "release");
const cacheDir = join(homedir(), ".cache", "quill-release");
const bun = process.execPath;
// Outside the repository: module resolution walks up the directories, and would otherwise find
// the host's addons in the repository's node_modules and embed them too.
const stageRoot = mkdtempSync(join(tmpdir(), "quill-release-"));

export interface ReleaseTarget {
  /** Our name for it, in file names: quill-<version>-<name>. */
  readonly name: string;
  /** `bun build --target`. */
  readonly bunTarget: string;
  /** The npm package holding Bun's runtime for that platform. */
  readonly runtimePackage: string;
  /** npm's --os, --cpu and --libc, which choose the addons' platform packages. */
  readonly os: string;
  readonly cpu: string;
  readonly libc: string | null;
  /** The platform suffix of the addons' .node files, checked inside the binary. */
  readonly addonSuffix: string;
}

// No separate x86-64 "baseline" build: in Bun 1.4.4 @oven/bun-linux-x64-baseline is an alias of
// @oven/bun-linux-x64 (the same executable, byte for byte), which targets SSE4.2 CPUs and picks
// AVX2 code at run time, so linux-x64 runs on CPUs without AVX2 too.
export const TARGETS: readonly ReleaseTarget[] = [
  target("linux-x64", "bun-linux-x64", "linux-x64", "linux", "x64", "glibc", "linux-x64-gnu"),
  target(
    "linux-arm64",
    "bun-linux-arm64",
    "linux-aarch64",
    "linux",
    "arm64",
    "glibc",
    "linux-arm64-gnu",
  ),
  target(
    "linux-x64-musl",
    "bun-linux-x64-musl",
    "linux-x64-musl",
    "linux",
    "x64",
    "musl",
    "linux-x64-musl",
  ),
  target(
    "darwin-arm64",
    "bun-darwin-arm64",
    "darwin-aarch64",
    "darwin",
    "arm64",
    null,
    "darwin-arm64",
  ),
];

function target(
  name: string,
  bunTarget: string,
  runtime: string,
  os: string,
  cpu: string,
  libc: string | null,
  addonSuffix: string,
): ReleaseTarget {
  return { name, bunTarget, runtimePackage: `@oven/bun-${runtime}`, os, cpu, libc, addonSuffix };
}

/** The addon packages' .node files a binary must embed (their platform suffix appended). */
const ADDONS = ["crc32", "lz4-napi", "snappy"];

/** Files every tarball holds beside the binary, relative to the repository root. */
export const TARBALL_FILES = [
  "README.md",
  "LICENSE",
  "packaging/quill.service",
  "packaging/quill@.service",
  "packaging/server.properties",
  "packaging/quill.sysctl.conf",
];

/** Bun's runtime executable for the target, from the npm registry (cached). */
function runtimeFor(t: ReleaseTarget, bunVersion: string): string {
  const dir = join(cacheDir, `${t.runtimePackage.replace("/", "+")}-${bunVersion}`);
  const exe = join(dir, "package", "bin", "bun");
  if (existsSync(exe)) return exe;
  mkdirSync(dir, { recursive: true });
  const tgz = runChecked(
    ["npm", "pack", "--silent", `${t.runtimePackage}@${bunVersion}`],
    dir,
  ).trim();
  runChecked(["tar", "xzf", tgz, "-C", dir], dir);
  rmSync(join(dir, tgz));
  return exe;
}

/** A copy of the source with the production dependencies of the target's platform. */
function stage(t: ReleaseTarget): string {
  const dir = join(stageRoot, t.name);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  for (const entry of [
    "src",
    "package.json",
    "package-lock.json",
    "tsconfig.json",
    "bunfig.toml",
  ]) {
    cpSync(join(root, entry), join(dir, entry), { recursive: true });
  }
  const platform = [`--os=${t.os}`, `--cpu=${t.cpu}`, ...(t.libc ? [`--libc=${t.libc}`] : [])];
  runChecked(
    ["npm", "ci", "--omit=dev", "--ignore-scripts", "--no-audit", "--no-fund", ...platform],
    dir,
  );
  return dir;
}

interface BuiltTarget {
  readonly target: ReleaseTarget;
  readonly binary: string;
  readonly stageDir: string;
  /** Bun's runtime executable for the target. */
  readonly runtime: string;
}

function compile(t: ReleaseTarget, version: string, defines: string[]): BuiltTarget {
  const stageDir = stage(t);
  const runtime = runtimeFor(t, Bun.version);
  const binary = join(releaseDir, `quill-${version}-${t.name}`);
  // As scripts/build.ts, less --sourcemap: a release binary carries no source map.
  runChecked(
    [
      bun,
      "build",
      "--compile",
      "--minify",
      "--bytecode",
      "--format=esm",
      `--target=${t.bunTarget}`,
      `--compile-executable-path=${runtime}`,
      ...defines,
      ...BUILD_ENTRY_POINTS.map((entry) => join(stageDir, entry)),
      "--outfile",
      binary,
    ],
    stageDir,
  );
  // The bundler leaves a require() it cannot resolve for run time: a missing platform package
  // would only show on the target host, so check here that every addon is embedded.
  const contents = readFileSync(binary);
  for (const addon of ADDONS) {
    const embedded = `${addon}.${t.addonSuffix}-`;
    if (contents.indexOf(embedded) < 0) throw new Error(`${binary} does not embed ${addon}`);
  }
  return { target: t, binary, stageDir, runtime };
}

function bytesUnder(dir: string, suffix: string): number {
  let total = 0;
  for (const entry of readdirSync(dir, { recursive: true, encoding: "utf8" })) {
    if (entry.endsWith(suffix)) total += statSync(join(dir, entry)).size;
  }
  return total;
}

export interface SizeBreakdown {
  readonly totalBytes: number;
  readonly runtimeBytes: number;
  readonly javaScriptBytes: number;
  readonly bytecodeBytes: number;
  readonly addonBytes: number;
  readonly otherBytes: number;
}

/**
 * What the binary is made of: the bundle built without --compile gives the JavaScript and the
 * addons it embeds; the binary compiled again without --bytecode gives the bytecode's share.
 */
function measure(built: BuiltTarget, defines: string[]): SizeBreakdown {
  const outdir = join(built.stageDir, "measure");
  const entries = BUILD_ENTRY_POINTS.map((entry) => join(built.stageDir, entry));
  const common = ["--minify", "--format=esm", ...defines];
  runChecked(
    [bun, "build", ...common, "--target=bun", ...entries, "--outdir", outdir],
    built.stageDir,
  );
  const withoutBytecode = join(built.stageDir, "quill-without-bytecode");
  runChecked(
    [
      bun,
      "build",
      "--compile",
      ...common,
      `--target=${built.target.bunTarget}`,
      `--compile-executable-path=${built.runtime}`,
      ...entries,
      "--outfile",
      withoutBytecode,
    ],
    built.stageDir,
  );
  const totalBytes = statSync(built.binary).size;
  const javaScriptBytes = bytesUnder(outdir, ".js");
  const bytecodeBytes = totalBytes - statSync(withoutBytecode).size;
  const addonBytes = bytesUnder(outdir, ".node");
  const runtimeBytes = statSync(built.runtime).size;
  const otherBytes = totalBytes - runtimeBytes - javaScriptBytes - bytecodeBytes - addonBytes;
  return { totalBytes, runtimeBytes, javaScriptBytes, bytecodeBytes, addonBytes, otherBytes };
}

/** quill-<version>-<target>.tar.gz: one directory with the binary, docs and examples. */
function tarball(built: BuiltTarget, version: string, date: string): string {
  const name = `quill-${version}-${built.target.name}`;
  const dir = join(built.stageDir, "tar", name);
  mkdirSync(join(dir, "packaging"), { recursive: true });
  cpSync(built.binary, join(dir, "quill"));
  for (const file of TARBALL_FILES) cpSync(join(root, file), join(dir, file));
  writeNotice(join(dir, "NOTICE"), built.stageDir, root, version);
  const path = join(releaseDir, `${name}.tar.gz`);
  const mtime = `@${Math.floor(Date.parse(date) / 1000)}`;
  runChecked(
    [
      "tar",
      "--sort=name",
      "--owner=0",
      "--group=0",
      "--numeric-owner",
      `--mtime=${mtime}`,
      "-czf",
      path,
      name,
    ],
    join(built.stageDir, "tar"),
  );
  return path;
}

/** SHA256SUMS in `sha256sum -c` format. */
function writeSums(paths: string[]): string {
  const lines = paths.map((path) => {
    const hex = new Bun.CryptoHasher("sha256").update(readFileSync(path)).digest("hex");
    return `${hex}  ${path.slice(releaseDir.length + 1)}\n`;
  });
  const path = join(releaseDir, "SHA256SUMS");
  writeFileSync(path, lines.join(""));
  return path;
}

function parseArgs(argv: string[]): { targets: ReleaseTarget[]; allowDirty: boolean } {
  let targets = [...TARGETS];
  let allowDirty = false;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === "--allow-dirty") {
      allowDirty = true;
    } else if (arg === "--targets" && argv[i + 1] !== undefined) {
      const names = argv[++i]!.split(",");
      targets = names.map((n) => {
        const t = TARGETS.find((x) => x.name === n);
        if (t === undefined) throw new Error(`unknown target ${n}`);
        return t;
      });
    } else {
      throw new Error(`usage: scripts/release [--targets a,b] [--allow-dirty] (got ${arg})`);
    }
  }
  return { targets, allowDirty };
}

const MB = 1e6;

function describe(sizes: SizeBreakdown): string {
  const mb = (bytes: number) => `${(bytes / MB).toFixed(1)} MB`;
  return (
    `${mb(sizes.totalBytes)} = Bun runtime ${mb(sizes.runtimeBytes)} + bundled JavaScript ` +
    `${mb(sizes.javaScriptBytes)} + its bytecode ${mb(sizes.bytecodeBytes)} + native addons ` +
    `${mb(sizes.addonBytes)} + other ${mb(sizes.otherBytes)}`
  );
}

function main(): void {
  const { targets, allowDirty } = parseArgs(process.argv.slice(2));
  const dirty = runChecked(["git", "status", "--porcelain"], root).trim();
  if (dirty !== "" && !allowDirty) {
    throw new Error(`the checkout has changes (use --allow-dirty to build anyway):\n${dirty}`);
  }
  const version: string = JSON.parse(readFileSync(join(root, "package.json"), "utf8")).version;
  const date = buildDate();
  const defines = defineArgs(buildCommit(root), date);
  rmSync(releaseDir, { recursive: true, force: true });
  mkdirSync(releaseDir, { recursive: true });
  const artifacts: string[] = [];
  const sizes: string[] = [];
  for (const t of targets) {
    const startedMs = performance.now();
    const built = compile(t, version, defines);
    const breakdown = describe(measure(built, defines));
    artifacts.push(built.binary, tarball(built, version, date));
    sizes.push(`${t.name}: ${breakdown}`);
    console.log(`${t.name}: ${breakdown} (${Math.round(performance.now() - startedMs)} ms)`);
  }
  writeSums(artifacts);
  writeFileSync(join(releaseDir, "SIZES.txt"), `${sizes.join("\n")}\n`);
  rmSync(stageRoot, { recursive: true, force: true });
  for (const path of artifacts) {
    console.log(`${(statSync(path).size / MB).toFixed(1)} MB  ${path}`);
  }
}

if (import.meta.main) main();
