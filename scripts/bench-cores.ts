// `bun scripts/bench-cores.ts [--records N]`
//
// Does a second Quill process on the same host add throughput? (docs/scaling.md, Using more
// cores.) One ZooKeeper, then a cluster of one broker and a cluster of two (separate ZooKeeper
// chroots, fresh data dirs), each with a 12-partition topic at replication factor 1, so the
// two-broker cluster leads six partitions on each. librdkafka (scripts/bench-e2e/rdkafka-load.c)
// produces RECORDS 100 B records round-robin (acks=1), then consumes them group-less. Prints
// records/s and the brokers' summed CPU seconds for each, with the load average. Not a test.
import { ErrorCode } from "../src/protocol/errors.ts";
import { ApiKey } from "../src/protocol/generated/index.ts";
import { ChildBroker } from "../test/support/child-broker.ts";
import { requestOnce } from "../test/support/kafka-client.ts";
import { startZooKeeper } from "../test/support/zookeeper-server.ts";
import { compileRdkafkaProgram, cpuSeconds, loadAverage, runCommand } from "./bench-common.ts";

const RUN_TIMEOUT_MS = 600_000;
const PARTITIONS = 12;
const RECORD_BYTES = 100;
const TOPIC = "cores";

interface Result {
  brokers: number;
  producePerSecond: number;
  consumePerSecond: number;
  brokerCpuSeconds: number;
  load: string;
}

async function measure(load: string, connect: string, count: number, records: number) {
  const brokers: ChildBroker[] = [];
  try {
    for (let id = 0; id < count; id++) {
      const settings = { "zookeeper.connect": connect, "broker.id": String(id) };
      brokers.push(await ChildBroker.start({ command: "binary", settings }));
    }
    const res = await requestOnce(brokers[0]!.port, ApiKey.CreateTopics, 7, {
      topics: [
        {
          name: TOPIC,
          numPartitions: PARTITIONS,
          replicationFactor: 1,
          assignments: [],
          configs: [],
        },
      ],
      timeoutMs: 30_000,
      validateOnly: false,
    });
    if (res.topics[0]!.errorCode !== ErrorCode.NONE) throw new Error("CreateTopics failed");
    await Bun.sleep(2_000); // every broker learns its leaderships (UpdateMetadata)
    const bootstrap = brokers.map((b) => `127.0.0.1:${b.port}`).join(",");
    const cpuBefore = brokers.reduce((n, b) => n + cpuSeconds(b.pid), 0);
    const run = async (argv: string[]) =>
      JSON.parse((await runCommand(argv, RUN_TIMEOUT_MS)).trim().split("\n").at(-1)!) as {
        records: number;
        seconds: number;
      };
    const base = [bootstrap, TOPIC, String(PARTITIONS), String(records)];
    const produced = await run([load, "produce", ...base, String(RECORD_BYTES), "1"]);
    const consumed = await run([load, "consume", ...base]);
    return {
      brokers: count,
      producePerSecond: produced.records / produced.seconds,
      consumePerSecond: consumed.records / consumed.seconds,
      brokerCpuSeconds: brokers.reduce((n, b) => n + cpuSeconds(b.pid), 0) - cpuBefore,
      load: loadAverage(),
    } satisfies Result;
  } finally {
    for (const b of brokers) await b.terminate();
    for (const b of brokers) await b.remove();
  }
}

async function main(): Promise<void> {
  const recordsFlag = process.argv.indexOf("--records");
  const records = recordsFlag > 0 ? Number(process.argv[recordsFlag + 1]) : 2_000_000;
  const compiled = compileRdkafkaProgram(`${import.meta.dir}/bench-e2e/rdkafka-load.c`);
  if (!("path" in compiled)) throw new Error(compiled.error);
  const zookeeper = await startZooKeeper();
  const results: Result[] = [];
  try {
    for (const count of [1, 2]) {
      const connect = `${zookeeper.connectString}/cores-${count}`;
      results.push(await measure(compiled.path, connect, count, records));
    }
  } finally {
    await zookeeper.stop();
  }
  console.log(
    `${records.toLocaleString("en-US")} records of ${RECORD_BYTES} B, ${PARTITIONS} ` +
      `partitions, replication factor 1, librdkafka, ${navigator.hardwareConcurrency} cores.\n`,
  );
  console.log("| brokers | produce rec/s | consume rec/s | broker CPU s | load average |");
  console.log("|---:|---:|---:|---:|---|");
  for (const r of results) {
    const f = (v: number) => Math.round(v).toLocaleString("en-US");
    console.log(
      `| ${r.brokers} | ${f(r.producePerSecond)} | ${f(r.consumePerSecond)} | ` +
        `${r.brokerCpuSeconds.toFixed(2)} | ${r.load} |`,
    );
  }
}

await main();
