// What the harness needs besides Bun, installed the way .ci/run installs its tools when it is
// missing: Debian packages through apt-get (as root, or with sudo), waiting for another apt run's
// lock instead of failing on it and retrying what a flaky mirror breaks. A comparison with a
// client missing would be partial, so whatever cannot be installed is returned by name and the
// harness prints no ratios line (bench-vs-kafka.ts).
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync } from "node:fs";
import { basename, join } from "node:path";
import { CACHE_DIR, compileRdkafkaProgram, runCommand } from "../bench-common.ts";
import { ensureKafkaDist } from "./kafka-dist.ts";

const APT_TIMEOUT_MS = 900_000;
const APT_ATTEMPTS = 3;

export interface HarnessTools {
  readonly rdkafkaLoad: string | null;
  readonly rdkafkaLatency: string | null;
  readonly rdkafkaScale: string | null;
  /** The franz-go group consumer of the partition scale workloads, or null without Go. */
  readonly franzScale: string | null;
  /** Kafka's jars (`dir/*`), or null without Java or Maven. */
  readonly classpath: string | null;
  /** What is missing, with what to install; empty when everything is there. */
  readonly missing: readonly string[];
}

const RDKAFKA_SOURCES = {
  rdkafkaLoad: join(import.meta.dir, "..", "bench-e2e", "rdkafka-load.c"),
  rdkafkaLatency: join(import.meta.dir, "rdkafka-latency.c"),
  rdkafkaScale: join(import.meta.dir, "rdkafka-scale.c"),
} as const;

const FRANZ_SCALE_DIR = join(import.meta.dir, "franz-scale");

/** The scale workloads' franz-go group consumer (franz-scale/main.go), built into the cache. */
export function buildFranzScale(): { path: string } | { error: string } {
  return buildGoProgram(FRANZ_SCALE_DIR);
}

/**
 * Builds the Go program in `dir` into the cache, once per version of its files, as
 * compileRdkafkaProgram does for the C ones. Debian 12's golang-go (1.19) is older than franz-go
 * needs, so Go is not installed with apt: a missing or old `go` is named, with where to get it.
 */
function buildGoProgram(dir: string): { path: string } | { error: string } {
  if (Bun.which("go") === null) {
    return { error: "go is not installed (the franz-go consumer needs Go 1.26: go.dev/dl)" };
  }
  const files = readdirSync(dir).sort();
  const hash = Bun.hash(files.map((f) => readFileSync(join(dir, f), "utf8")).join("\0"));
  const path = join(CACHE_DIR, `${basename(dir)}-${hash.toString(16)}`);
  if (existsSync(path)) return { path };
  mkdirSync(CACHE_DIR, { recursive: true });
  const building = `${path}.${process.pid}`;
  const go = Bun.spawnSync(["go", "build", "-o", building, "."], { cwd: dir, stderr: "pipe" });
  if (go.exitCode !== 0) {
    return { error: `cannot build ${dir} with go: ${go.stderr.toString().slice(0, 500)}` };
  }
  renameSync(building, path);
  return { path };
}

/** Compiles the librdkafka programs and fetches Kafka, installing Debian packages if needed. */
export async function ensureHarnessTools(): Promise<HarnessTools> {
  const missing: string[] = [];
  let programs = compileAll();
  if (Object.values(programs).some((p) => p === null)) {
    const packages = ["librdkafka-dev", ...(Bun.which("cc") === null ? ["gcc", "libc6-dev"] : [])];
    const installed = await aptInstall(packages);
    programs = compileAll();
    if (Object.values(programs).some((p) => p === null)) {
      missing.push(`librdkafka programs do not compile (apt: ${packages.join(" ")}; ${installed})`);
    }
  }
  let dist = await ensureKafkaDist();
  if ("missing" in dist && (Bun.which("java") === null || Bun.which("mvn") === null)) {
    const installed = await aptInstall(["default-jre-headless", "maven"]);
    dist = await ensureKafkaDist();
    if ("missing" in dist) missing.push(`Apache Kafka: ${dist.missing} (${installed})`);
  } else if ("missing" in dist) {
    missing.push(`Apache Kafka: ${dist.missing}`);
  }
  const franz = buildFranzScale();
  if ("error" in franz) missing.push(franz.error);
  if (Bun.which("iperf3") === null) await aptInstall(["iperf3"]);
  return {
    ...programs,
    franzScale: "path" in franz ? franz.path : null,
    classpath: "classpath" in dist ? dist.classpath : null,
    missing,
  };
}

function compileAll(): Record<keyof typeof RDKAFKA_SOURCES, string | null> {
  const compile = (source: string) => {
    const result = compileRdkafkaProgram(source);
    if ("path" in result) return result.path;
    console.error(`note: ${result.error.split("\n")[0]}`);
    return null;
  };
  return {
    rdkafkaLoad: compile(RDKAFKA_SOURCES.rdkafkaLoad),
    rdkafkaLatency: compile(RDKAFKA_SOURCES.rdkafkaLatency),
    rdkafkaScale: compile(RDKAFKA_SOURCES.rdkafkaScale),
  };
}

/** apt-get update and install, as .ci/run does; says what happened (for the missing note). */
async function aptInstall(packages: readonly string[]): Promise<string> {
  if (Bun.which("apt-get") === null) return "no apt-get on this machine: install them by hand";
  const isRoot = process.getuid?.() === 0;
  if (!isRoot && Bun.which("sudo") === null) return "not root and no sudo: install them by hand";
  const prefix = isRoot ? [] : ["sudo", "-E"];
  console.error(`installing with apt-get: ${packages.join(" ")}`);
  process.env.DEBIAN_FRONTEND = "noninteractive";
  const lock = ["-o", "DPkg::Lock::Timeout=600"];
  const steps = [
    [...prefix, "apt-get", ...lock, "update", "-q"],
    [...prefix, "apt-get", ...lock, "install", "-y", "-q", "--no-install-recommends", ...packages],
  ];
  for (const argv of steps) {
    let lastError = "";
    for (let attempt = 1; attempt <= APT_ATTEMPTS; attempt++) {
      try {
        await runCommand(argv, APT_TIMEOUT_MS);
        lastError = "";
        break;
      } catch (error) {
        lastError = (error as Error).message.split("\n").slice(-3).join(" ");
        await Bun.sleep(attempt * 10_000);
      }
    }
    if (lastError !== "") return `apt-get failed: ${lastError}`;
  }
  return "installed";
}
