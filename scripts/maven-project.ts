// The Maven projects under test/compat (the Java clients and the Kafka applications) are built
// by the compat matrix and by tests that drive the same programs; each builds only when its
// sources changed since the last build, and under a build lock, so concurrent runs (bun test
// --parallel workers, the two compat passes) never run two Maven builds in one target/.
import { existsSync, readFileSync, statSync, utimesSync } from "node:fs";
import { join } from "node:path";
import { newestMtimeMs, withBuildLockSync } from "./build-lock.ts";

/** What the compat matrix and the tests run: the classes, and the classpath in a file. */
export const MAVEN_PACKAGE = [
  "mvn",
  "-B",
  "-q",
  "package",
  "dependency:build-classpath",
  "-Dmdep.outputFile=target/classpath.txt",
] as const;

/**
 * Whether `dir`'s target/classpath.txt is newer than its pom.xml, everything under src/ and
 * every other source root its pom names (`<compileSourceRoot>${project.basedir}/../x/src/...`).
 */
export function mavenUpToDate(dir: string): boolean {
  const stamp = join(dir, "target", "classpath.txt");
  if (!existsSync(stamp) || !existsSync(join(dir, "target", "classes"))) return false;
  const pom = join(dir, "pom.xml");
  const roots = [...readFileSync(pom, "utf8").matchAll(SOURCE_ROOT)].map((m) => join(dir, m[1]!));
  const sourcesMs = Math.max(
    newestMtimeMs(pom),
    newestMtimeMs(join(dir, "src")),
    ...roots.map(newestMtimeMs),
  );
  return statSync(stamp).mtimeMs > sourcesMs;
}

const SOURCE_ROOT = /<compileSourceRoot>\$\{project\.basedir\}\/([^<]+)<\/compileSourceRoot>/g;

/** Builds the project in `dir` unless it is up to date; throws with Maven's output on failure. */
export function ensureMavenPackage(dir: string): void {
  withBuildLockSync(dir, () => {
    if (mavenUpToDate(dir)) return;
    const mvn = Bun.spawnSync([...MAVEN_PACKAGE], { cwd: dir, stdout: "pipe", stderr: "pipe" });
    if (mvn.exitCode !== 0) throw new Error(`mvn failed in ${dir}: ${mvn.stdout}${mvn.stderr}`);
    markMavenBuilt(dir);
  });
}

/**
 * Stamps a build as done: dependency:build-classpath leaves target/classpath.txt alone when the
 * classpath did not change, so after a source edit its time alone would ask for a build forever.
 */
export function markMavenBuilt(dir: string): void {
  const now = new Date();
  utimesSync(join(dir, "target", "classpath.txt"), now, now);
}
