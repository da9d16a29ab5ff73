// Apache Kafka for the comparison, fetched from Maven Central with Maven into the cache (never into
// the repository): kafka_2.13 (the broker, kafka.Kafka) and kafka-tools (ProducerPerformance,
// ConsumerPerformance, EndToEndLatency) with all their runtime dependencies, copied into one
// directory that serves as the classpath. A throwaway pom in the cache directory drives
// `mvn dependency:copy-dependencies`; the second run finds the jars and skips Maven.
import { existsSync, mkdirSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { CACHE_DIR, runCommand } from "../bench-common.ts";
import { withBuildLock } from "../build-lock.ts";

/** 3.9 is the last release line with ZooKeeper mode. */
export const KAFKA_VERSION = "3.9.1";
const MAVEN_TIMEOUT_MS = 600_000;
/**
 * kafka_2.13 3.x logs through slf4j; the binding makes log4j.properties apply. 4.x brings its
 * log4j2 binding along.
 */
function artifacts(version: string): (readonly [string, string, string])[] {
  return [
    ["org.apache.kafka", "kafka_2.13", version],
    ["org.apache.kafka", "kafka-tools", version],
    ...(version.startsWith("3.") ? [["org.slf4j", "slf4j-reload4j", "1.7.36"] as const] : []),
  ];
}

export type KafkaDist = { readonly classpath: string } | { readonly missing: string };

/** Makes sure the jars are in the cache; says what is missing when Java or Maven is. */
export async function ensureKafkaDist(version = KAFKA_VERSION): Promise<KafkaDist> {
  if (Bun.which("java") === null) return { missing: "java is not installed" };
  const dir = join(CACHE_DIR, `kafka-${version}`);
  // Locked: test files running in parallel each ask for the jars, and one download is enough.
  return await withBuildLock(dir, () => fetchKafkaDist(dir, version));
}

async function fetchKafkaDist(dir: string, version: string): Promise<KafkaDist> {
  const libs = join(dir, "libs");
  if (!hasJars(libs, version)) {
    if (Bun.which("mvn") === null) return { missing: "mvn (Maven) is not installed" };
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, "pom.xml"), pom(version));
    console.error(`fetching Apache Kafka ${version} from Maven Central into ${libs}`);
    try {
      await runCommand(
        [
          "mvn",
          "-q",
          "-B",
          "-f",
          join(dir, "pom.xml"),
          "dependency:copy-dependencies",
          `-DoutputDirectory=${libs}`,
          "-DincludeScope=runtime",
        ],
        MAVEN_TIMEOUT_MS,
      );
    } catch (error) {
      return { missing: `Maven could not fetch Kafka: ${(error as Error).message.slice(0, 500)}` };
    }
    if (!hasJars(libs, version)) return { missing: `Maven left no Kafka jars in ${libs}` };
  }
  return { classpath: `${libs}/*` };
}

function hasJars(libs: string, version: string): boolean {
  if (!existsSync(libs)) return false;
  const names = readdirSync(libs);
  return (
    names.includes(`kafka_2.13-${version}.jar`) && names.includes(`kafka-tools-${version}.jar`)
  );
}

function pom(version: string): string {
  const dependencies = artifacts(version)
    .map(
      ([group, artifact, version]) =>
        `    <dependency><groupId>${group}</groupId><artifactId>${artifact}</artifactId>` +
        `<version>${version}</version></dependency>`,
    )
    .join("\n");
  return `<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>quill.bench</groupId>
  <artifactId>kafka-runtime</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
${dependencies}
  </dependencies>
</project>
`;
}
