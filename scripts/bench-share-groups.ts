/**
 * Share-group benchmark (not a timed test): consume throughput of a share group (KIP-932) with
 * 1, 4 and 16 Kafka 4.4 KafkaShareConsumers on one partition, against a broker in this process.
 * Each run produces RECORDS records of 100 bytes to a new topic, sets the group's
 * share.auto.offset.reset to earliest, and times the members from the first record received to
 * the last (implicit acknowledgement: each poll accepts the previous one's records, piggy-backed
 * on the next ShareFetch). The same rows then run against Apache Kafka 4.4 in KRaft mode (one
 * combined broker and controller, scripts/bench-vs-kafka/kraft.ts), since ZooKeeper-mode Kafka
 * 3.9, which scripts/bench-vs-kafka.ts compares with, has no share groups.
 *
 * Run: bun scripts/bench-share-groups.ts [records=100000] [--quill-only]
 */
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { startBroker } from "../src/broker/broker.ts";
import { loadConfig } from "../src/config/load-config.ts";
import { SILENT_LOGGER } from "../src/util/logger.ts";
import { loadAverage, runCommand } from "./bench-common.ts";
import { KRAFT_KAFKA_VERSION, startKraftKafka } from "./bench-vs-kafka/kraft.ts";

const QUILL_ONLY = process.argv.includes("--quill-only");
const RECORDS = Number(process.argv.slice(2).find((a) => !a.startsWith("--")) ?? 100_000);
const MEMBER_COUNTS = [1, 4, 16];
const JAVA_DIR = join(import.meta.dir, "..", "test", "compat", "java4");

async function main(): Promise<void> {
  if (
    !existsSync(join(JAVA_DIR, "target", "classes", "quill", "compat4", "ShareConsumers.class"))
  ) {
    const goals = [
      "package",
      "dependency:build-classpath",
      "-Dmdep.outputFile=target/classpath.txt",
    ];
    await runCommand(["mvn", "-q", "-f", join(JAVA_DIR, "pom.xml"), ...goals], 600_000);
  }
  const classpath = readFileSync(join(JAVA_DIR, "target", "classpath.txt"), "utf8").trim();
  const dataDir = (await runCommand(["mktemp", "-d"], 5_000)).trim();
  const { config } = loadConfig({
    flags: [
      { key: "listeners", value: "127.0.0.1:0", flag: "--listen" },
      { key: "log.dirs", value: dataDir, flag: "--data-dir" },
    ],
  });
  const broker = await startBroker(config, SILENT_LOGGER);
  const rows: string[] = [];
  try {
    rows.push(...(await runRows("Quill", `${broker.host}:${broker.port}`, classpath)));
  } finally {
    await broker.stop();
    await runCommand(["rm", "-rf", dataDir], 30_000);
  }
  if (!QUILL_ONLY) rows.push(...(await kafkaRows(classpath)));
  console.log(
    "| broker | consumers on 1 partition | records | seconds | records/s | load average |",
  );
  console.log("|---|---:|---:|---:|---:|---|");
  for (const r of rows) console.log(r);
}

async function kafkaRows(classpath: string): Promise<string[]> {
  const kafkaDir = (await runCommand(["mktemp", "-d"], 5_000)).trim();
  const kafka = await startKraftKafka(kafkaDir);
  try {
    return await runRows(`Kafka ${KRAFT_KAFKA_VERSION} KRaft`, kafka.bootstrap, classpath);
  } finally {
    await kafka.stop();
    await runCommand(["rm", "-rf", kafkaDir], 30_000);
  }
}

async function runRows(label: string, bootstrap: string, classpath: string): Promise<string[]> {
  const rows: string[] = [];
  for (const members of MEMBER_COUNTS) {
    const cpuBefore = process.cpuUsage();
    const out = await runCommand(
      [
        "java",
        "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
        "-cp",
        `${join(JAVA_DIR, "target", "classes")}:${classpath}`,
        "quill.compat4.ShareConsumers",
        "bench",
        bootstrap,
        `bench-share-${members}`,
        `bench-share-${members}`,
        String(members),
        String(RECORDS),
      ],
      600_000,
    );
    const line = out.split("\n").find((l) => l.startsWith("bench "));
    const rate = line?.match(/rate=(\d+)/)?.[1] ?? "?";
    const seconds = line?.match(/seconds=([\d.]+)/)?.[1] ?? "?";
    rows.push(`| ${label} | ${members} | ${RECORDS} | ${seconds} | ${rate} | ${loadAverage()} |`);
    // This process's CPU during the row: the broker's, when it is Quill's (in this process).
    const cpu = process.cpuUsage(cpuBefore);
    console.error(label, line, `this-process-cpu-s=${((cpu.user + cpu.system) / 1e6).toFixed(2)}`);
  }
  return rows;
}

await main();
