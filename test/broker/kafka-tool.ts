/**
 * Kafka 3.9's command-line tools (the classes the `kafka-*.sh` scripts run, from Maven Central
 * through the benchmark's Kafka download) against a Quill cluster, run in the suite's tool JVM
 * (test/support/tool-jvm.ts) rather than one JVM per command.
 */
import { ensureKafkaDist } from "../../scripts/bench-vs-kafka/kafka-dist.ts";
import { runToolInJvm, type ToolRun } from "../support/tool-jvm.ts";

export type { ToolRun };

export const REASSIGN_PARTITIONS = "org.apache.kafka.tools.reassign.ReassignPartitionsCommand";
export const LEADER_ELECTION = "org.apache.kafka.tools.LeaderElectionCommand";
export const TOPICS = "org.apache.kafka.tools.TopicCommand";
export const LOG_DIRS = "org.apache.kafka.tools.LogDirsCommand";

let classpath: Promise<string> | null = null;

/** Fetches Kafka's jars once per test process; throws when Java or Maven is missing. */
export function kafkaClasspath(): Promise<string> {
  classpath ??= ensureKafkaDist().then((dist) => {
    if ("missing" in dist) throw new Error(`Kafka's tools are not available: ${dist.missing}`);
    return dist.classpath;
  });
  return classpath;
}

/** Runs one tool to its end; a non-zero exit is returned, not thrown. */
export async function runKafkaTool(mainClass: string, args: readonly string[]): Promise<ToolRun> {
  return await runToolInJvm(await kafkaClasspath(), mainClass, args);
}
