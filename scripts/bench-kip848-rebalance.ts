/**
 * KIP-848 rebalance time against the classic protocol (not a timed test): a group of ten Kafka
 * 4.4 Java consumers (test/compat/java4 RebalanceBench) on a 20-partition topic, against a
 * broker in this process. "join": nine members settled, the tenth starts, until all ten own a
 * share and the shares cover the topic without overlap; "leave": one closes, until the nine
 * left cover it again. Rows: group.protocol=consumer (server-side uniform assignor), classic
 * with the eager RangeAssignor, classic with the CooperativeStickyAssignor; once with Kafka's
 * default heartbeat intervals (KIP-848 5 s, classic 3 s) and once with 500 ms for both; then the
 * Kafka-defaults rows against Apache Kafka 4.4 in KRaft mode (scripts/bench-vs-kafka/kraft.ts).
 * One run per cell; the load average is printed beside the figures.
 *
 * Run: bun scripts/bench-kip848-rebalance.ts
 */

import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { startBroker } from "../src/broker/broker.ts";
import { loadConfig } from "../src/config/load-config.ts";
import { SILENT_LOGGER } from "../src/util/logger.ts";
import { ensureJava4Built, Java4Process } from "../test/support/java4-client.ts";
import { loadAverage } from "./bench-common.ts";
import { KRAFT_KAFKA_VERSION, startKraftKafka } from "./bench-vs-kafka/kraft.ts";

const MEMBERS = 10;
const PARTITIONS = 20;
const PROTOCOLS = ["consumer", "classic-eager", "classic-cooperative"] as const;
const SETTINGS = [
  { name: "Kafka defaults", kip848HeartbeatMs: 5_000, classicHeartbeatMs: 3_000 },
  { name: "500 ms heartbeats", kip848HeartbeatMs: 500, classicHeartbeatMs: 500 },
];

async function runOne(
  bootstrap: string,
  protocol: string,
  heartbeatMs: number,
  run: number,
): Promise<{ joinMs: number; leaveMs: number }> {
  const group = `bench-${protocol}-${run}`;
  const args = [bootstrap, `t-${group}`, group, protocol, String(MEMBERS), String(PARTITIONS)];
  const bench = new Java4Process("RebalanceBench", [...args, String(heartbeatMs)]);
  const code = await bench.exited;
  if (code !== 0) throw new Error(`RebalanceBench ${protocol} exited ${code}: ${bench.stderr}`);
  const figure = (name: string) => {
    const line = bench.lines.find((l) => l.startsWith(`${name} ms `));
    if (line === undefined) throw new Error(`no ${name} figure: ${bench.lines.join("\n")}`);
    return Number(line.slice(`${name} ms `.length));
  };
  return { joinMs: figure("join"), leaveMs: figure("leave") };
}

async function main(): Promise<void> {
  ensureJava4Built("RebalanceBench");
  const rows: string[] = [];
  let run = 0;
  for (const setting of SETTINGS) {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), "quill-bench-848-"));
    const flags = [
      { key: "listeners", value: "127.0.0.1:0", flag: "--listen" },
      { key: "log.dirs", value: dataDir, flag: "--data-dir" },
      { key: "group.initial.rebalance.delay.ms", value: "0", flag: "--set" },
      {
        key: "group.consumer.heartbeat.interval.ms",
        value: String(setting.kip848HeartbeatMs),
        flag: "--set",
      },
    ];
    const broker = await startBroker(loadConfig({ flags }).config, SILENT_LOGGER);
    try {
      for (const protocol of PROTOCOLS) {
        const heartbeatMs =
          protocol === "consumer" ? setting.kip848HeartbeatMs : setting.classicHeartbeatMs;
        const r = await runOne(`127.0.0.1:${broker.port}`, protocol, heartbeatMs, run++);
        rows.push(
          `| ${setting.name} | ${protocol} | ${heartbeatMs} | ${r.joinMs} | ${r.leaveMs} |` +
            ` ${loadAverage()} |`,
        );
        console.error(rows.at(-1));
      }
    } finally {
      await broker.stop();
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  }
  rows.push(...(await kafkaRows(run)));
  console.log(`${MEMBERS} Java 4.4 consumers, ${PARTITIONS} partitions, one run per row`);
  console.log("| setting | protocol | heartbeat ms | join ms | leave ms | load average |");
  console.log("|---|---|---:|---:|---:|---|");
  for (const row of rows) console.log(row);
}

/** The Kafka-defaults rows against Kafka 4.4 (KRaft), whose defaults are those heartbeats. */
async function kafkaRows(firstRun: number): Promise<string[]> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "quill-bench-848-kafka-"));
  const kafka = await startKraftKafka(dir, { "group.initial.rebalance.delay.ms": "0" });
  const rows: string[] = [];
  let run = firstRun;
  try {
    for (const protocol of PROTOCOLS) {
      const heartbeatMs = protocol === "consumer" ? 5_000 : 3_000;
      const r = await runOne(kafka.bootstrap, protocol, heartbeatMs, run++);
      const setting = `Kafka ${KRAFT_KAFKA_VERSION} KRaft, defaults`;
      rows.push(
        `| ${setting} | ${protocol} | ${heartbeatMs} | ${r.joinMs} | ${r.leaveMs} |` +
          ` ${loadAverage()} |`,
      );
      console.error(rows.at(-1));
    }
  } finally {
    await kafka.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
  return rows;
}

await main();
