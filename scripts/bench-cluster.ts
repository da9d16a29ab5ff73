// `bun scripts/bench-cluster.ts [--records N] [--kills N] [--session-timeout-ms N]`
// (`--records 0` skips the throughput runs)
//
// Three Quill broker processes and one ZooKeeper on this machine (not a timed test):
//   - produce throughput at replication factor 3 with acks=1 and acks=all: 100-byte records on
//     six partitions through librdkafka (scripts/bench-e2e/rdkafka-load.c, compiled with cc
//     into ~/.cache/quill-bench; apt: librdkafka-dev), records/s and MB/s (1 MB = 1e6 B);
//   - the failover gap: kill -9 of a partition's leader, then the time until a produce with
//     acks=all is first acknowledged by the new leader (the client retries every 20 ms against
//     the leader Metadata names). Repeated --kills times (default 20), each killed broker
//     restarted and waited back into the ISR; the last line is
//     `failover: median_ms=X max_ms=Y kills=K`. Settings are the defaults
//     (zookeeper.session.timeout.ms 18000) unless --session-timeout-ms is given. The controller
//     notices a killed broker by its refused port, not its session (docs/faults.md, Failover).

import { ErrorCode } from "../src/protocol/errors.ts";
import { ApiKey, type MetadataResponse } from "../src/protocol/generated/index.ts";
import { buildRecordBatch } from "../src/protocol/record-batch.ts";
import { ChildBroker } from "../test/support/child-broker.ts";
import { requestOnce } from "../test/support/kafka-client.ts";
import { startZooKeeper } from "../test/support/zookeeper-server.ts";
import { compileRdkafkaProgram, runCommand } from "./bench-common.ts";

const RUN_TIMEOUT_MS = 1_800_000;
const WAIT_TIMEOUT_MS = 60_000;
const RECORD_BYTES = 100;

interface Options {
  readonly records: number;
  readonly kills: number;
  readonly sessionTimeoutMs: number | null;
}

function parseOptions(argv: readonly string[]): Options {
  const value = (flag: string, fallback: number) => {
    const i = argv.indexOf(flag);
    return i < 0 ? fallback : Number(argv[i + 1]);
  };
  return {
    records: value("--records", 1_000_000),
    kills: value("--kills", 20),
    sessionTimeoutMs: argv.includes("--session-timeout-ms")
      ? value("--session-timeout-ms", 18_000)
      : null,
  };
}

async function until<T>(probe: () => Promise<T | undefined>, what: string): Promise<T> {
  const deadlineMs = Date.now() + WAIT_TIMEOUT_MS;
  for (;;) {
    const value = await probe().catch(() => undefined);
    if (value !== undefined) return value;
    if (Date.now() > deadlineMs) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(20);
  }
}

function metadata(broker: ChildBroker): Promise<MetadataResponse> {
  return requestOnce(broker.port, ApiKey.Metadata, 12, {
    topics: null,
    allowAutoTopicCreation: false,
  });
}

async function createTopic(broker: ChildBroker, name: string, partitions: number): Promise<void> {
  const res = await requestOnce(broker.port, ApiKey.CreateTopics, 7, {
    topics: [
      { name, numPartitions: partitions, replicationFactor: 3, assignments: [], configs: [] },
    ],
    timeoutMs: 10_000,
    validateOnly: false,
  });
  const code = res.topics[0]!.errorCode;
  if (code !== ErrorCode.NONE) throw new Error(`creating ${name} failed with error ${code}`);
}

/** The partition as some running broker describes it, once every replica is in its ISR. */
function partitionIn(m: MetadataResponse, topic: string, partition: number) {
  return m.topics.find((t) => t.name === topic)?.partitions[partition];
}

async function throughput(
  load: string,
  bootstrap: string,
  topic: string,
  records: number,
  acks: string,
) {
  const out = await runCommand(
    [
      load,
      "produce",
      bootstrap,
      topic,
      "6",
      String(records),
      String(RECORD_BYTES),
      acks,
      "linger.ms=5",
    ],
    RUN_TIMEOUT_MS,
  );
  const result = JSON.parse(out.trim().split("\n").at(-1)!) as {
    records: number;
    bytes: number;
    seconds: number;
    failed: number;
  };
  return {
    recordsPerSecond: result.records / result.seconds,
    megabytesPerSecond: result.bytes / result.seconds / 1e6,
    failed: result.failed,
  };
}

/** One acks=all produce to whoever leads partition 0 now; true once acknowledged. */
async function produceOnce(brokers: Map<number, ChildBroker>, topic: string): Promise<boolean> {
  const asked = [...brokers.values()].find((b) => b.running)!;
  const leader = partitionIn(await metadata(asked), topic, 0)?.leaderId ?? -1;
  const target = brokers.get(leader);
  if (target === undefined || !target.running) return false;
  const records = buildRecordBatch([{ value: new TextEncoder().encode("failover") }]);
  const res = await requestOnce(target.port, ApiKey.Produce, 9, {
    transactionalId: null,
    acks: -1,
    timeoutMs: 2_000,
    topicData: [{ name: topic, partitionData: [{ index: 0, records }] }],
  });
  return res.responses[0]!.partitionResponses[0]!.errorCode === ErrorCode.NONE;
}

async function failoverGaps(brokers: Map<number, ChildBroker>, kills: number): Promise<number[]> {
  const gaps: number[] = [];
  for (let i = 0; i < kills; i++) {
    const asked = [...brokers.values()].find((b) => b.running)!;
    const state = await until(async () => {
      const p = partitionIn(await metadata(asked), "failover", 0);
      return p !== undefined && p.leaderId >= 0 && p.isrNodes.length === 3 ? p : undefined;
    }, "all three replicas in the ISR");
    await until(
      async () => ((await produceOnce(brokers, "failover")) ? true : undefined),
      "a produce before the kill",
    );
    const victim = brokers.get(state.leaderId)!;
    const killedAtMs = performance.now();
    await victim.kill9();
    await until(
      async () => ((await produceOnce(brokers, "failover")) ? true : undefined),
      "the first acknowledged produce after the kill",
    );
    const gapMs = performance.now() - killedAtMs;
    gaps.push(gapMs);
    console.error(`kill ${i + 1}: broker ${state.leaderId}, gap ${gapMs.toFixed(0)} ms`);
    brokers.set(state.leaderId, await victim.restart());
  }
  return gaps;
}

async function main(): Promise<void> {
  const options = parseOptions(Bun.argv.slice(2));
  const compiled = compileRdkafkaProgram(`${import.meta.dir}/bench-e2e/rdkafka-load.c`);
  const zk = await startZooKeeper();
  const connect = `${zk.connectString}/bench-cluster`;
  const brokers = new Map<number, ChildBroker>();
  try {
    for (const id of [1, 2, 3]) {
      brokers.set(
        id,
        await ChildBroker.start({
          settings: {
            "zookeeper.connect": connect,
            "broker.id": String(id),
            ...(options.sessionTimeoutMs === null
              ? {}
              : { "zookeeper.session.timeout.ms": String(options.sessionTimeoutMs) }),
          },
        }),
      );
    }
    const first = brokers.get(1)!;
    await until(
      async () => ((await metadata(first)).brokers.length === 3 ? true : undefined),
      "three live brokers",
    );
    const bootstrap = [...brokers.values()].map((b) => b.bootstrap).join(",");
    const rows: string[] = [];
    if (options.records === 0) {
      console.error("throughput skipped: --records 0");
    } else if ("path" in compiled) {
      for (const [topic, acks] of [
        ["acks-1", "1"],
        ["acks-all", "-1"],
      ] as const) {
        await createTopic(first, topic, 6);
        const r = await throughput(compiled.path, bootstrap, topic, options.records, acks);
        rows.push(
          `| acks=${acks === "1" ? "1" : "all"} | ${options.records} | ` +
            `${Math.round(r.recordsPerSecond)} | ${r.megabytesPerSecond.toFixed(1)} | ${r.failed} |`,
        );
      }
    } else {
      console.error(`throughput skipped: ${compiled.error}`);
    }
    await createTopic(first, "failover", 1);
    const gaps = (await failoverGaps(brokers, options.kills)).sort((a, b) => a - b);
    const median = gaps[Math.floor(gaps.length / 2)]!;
    console.log("| produce, RF 3, 6 partitions, 100 B | records | records/s | MB/s | failed |");
    console.log("|---|---:|---:|---:|---:|");
    for (const row of rows) console.log(row);
    const session = options.sessionTimeoutMs ?? "18000 (default)";
    console.log(
      `\nfailover gap over ${gaps.length} kills of the leader ` +
        `(zookeeper.session.timeout.ms=${session}): median ` +
        `${median.toFixed(0)} ms, max ${gaps.at(-1)!.toFixed(0)} ms`,
    );
    console.log(
      `failover: median_ms=${median.toFixed(0)} max_ms=${gaps.at(-1)!.toFixed(0)} ` +
        `kills=${gaps.length}`,
    );
  } finally {
    await Promise.all([...brokers.values()].map((b) => b.remove()));
    await zk.stop();
  }
}

await main();
