// `bun scripts/bench-cluster.ts [--records N] [--kills N] [--session-timeout-ms N]
//    [--reassign-mb N] [--throttle-mb-per-s N]`
// (`--records 0` skips the throughput runs, `--kills 0` the failover, `--reassign-mb 0` the move)
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
//   - a partition reassignment under a replication throttle: a one-replica partition on broker
//     1 filled with --reassign-mb MB (default 1024) of 1 MB batches, then moved to [1,2] with
//     AlterPartitionReassignments while leader.replication.throttled.rate and
//     follower.replication.throttled.rate are --throttle-mb-per-s (default 50; 1 MB = 1e6 B) on
//     both brokers and the topic's throttled replicas are set as kafka-reassign-partitions.sh
//     --throttle sets them; the time until ListPartitionReassignments is empty and the
//     measured rate (bytes moved / time) against the throttle.

import { ErrorCode } from "../src/protocol/errors.ts";
import { ApiKey, type MetadataResponse } from "../src/protocol/generated/index.ts";
import { buildRecordBatch } from "../src/protocol/record-batch.ts";
import { internalTopicReplication } from "../test/support/broker-harness.ts";
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
  readonly reassignMb: number;
  readonly throttleMbPerSecond: number;
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
    reassignMb: value("--reassign-mb", 1024),
    throttleMbPerSecond: value("--throttle-mb-per-s", 50),
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

/** Fills a partition on broker 1 with `mb` MB, then moves it to [1,2] under the throttle. */
async function reassignmentRun(
  brokers: Map<number, ChildBroker>,
  mb: number,
  throttleMbPerSecond: number,
): Promise<{ seconds: number; mbPerSecond: number }> {
  const first = brokers.get(1)!;
  const res = await requestOnce(first.port, ApiKey.CreateTopics, 7, {
    topics: [
      {
        name: "moved",
        numPartitions: -1,
        replicationFactor: -1,
        assignments: [{ partitionIndex: 0, brokerIds: [1] }],
        configs: [{ name: "segment.bytes", value: String(256 * 1024 * 1024) }],
      },
    ],
    timeoutMs: 10_000,
    validateOnly: false,
  });
  if (res.topics[0]!.errorCode !== ErrorCode.NONE) throw new Error("creating moved failed");
  await until(
    async () => (partitionIn(await metadata(first), "moved", 0)?.leaderId ?? -1) === 1 || undefined,
    "broker 1 leads the partition to move",
  );
  const value = new Uint8Array(62_500).fill(120);
  const batch = buildRecordBatch(Array.from({ length: 16 }, () => ({ value })));
  let bytes = 0;
  for (let i = 0; bytes < mb * 1e6; i++) {
    const produced = await requestOnce(first.port, ApiKey.Produce, 9, {
      transactionalId: null,
      acks: 1,
      timeoutMs: 10_000,
      topicData: [{ name: "moved", partitionData: [{ index: 0, records: batch }] }],
    });
    if (produced.responses[0]!.partitionResponses[0]!.errorCode !== ErrorCode.NONE) {
      throw new Error(`produce ${i} failed`);
    }
    bytes += batch.byteLength;
  }
  await setThrottle(brokers, Math.round(throttleMbPerSecond * 1e6));
  const startedMs = performance.now();
  const altered = await requestOnce(first.port, ApiKey.AlterPartitionReassignments, 0, {
    timeoutMs: 10_000,
    topics: [{ name: "moved", partitions: [{ partitionIndex: 0, replicas: [1, 2] }] }],
  });
  const controller = brokers.get((await metadata(first)).controllerId)!;
  if (altered.errorCode !== ErrorCode.NONE) {
    const again = await requestOnce(controller.port, ApiKey.AlterPartitionReassignments, 0, {
      timeoutMs: 10_000,
      topics: [{ name: "moved", partitions: [{ partitionIndex: 0, replicas: [1, 2] }] }],
    });
    if (again.errorCode !== ErrorCode.NONE) throw new Error("AlterPartitionReassignments failed");
  }
  for (;;) {
    const listed = await requestOnce(controller.port, ApiKey.ListPartitionReassignments, 0, {
      timeoutMs: 10_000,
      topics: null,
    });
    if (listed.topics.length === 0) break;
    await Bun.sleep(100);
  }
  const seconds = (performance.now() - startedMs) / 1000;
  return { seconds, mbPerSecond: bytes / 1e6 / seconds };
}

/**
 * What kafka-reassign-partitions.sh --throttle writes: each broker's rates (sent to that
 * broker, as Kafka requires) and the topic's throttled replicas.
 */
async function setThrottle(
  brokers: Map<number, ChildBroker>,
  bytesPerSecond: number,
): Promise<void> {
  const set = (name: string, value: string) => ({ name, configOperation: 0, value });
  const rates = [
    set("leader.replication.throttled.rate", String(bytesPerSecond)),
    set("follower.replication.throttled.rate", String(bytesPerSecond)),
  ];
  const replicas = [
    set("leader.replication.throttled.replicas", "0:1"),
    set("follower.replication.throttled.replicas", "0:2"),
  ];
  const requests: [number, { resourceType: number; resourceName: string; configs: unknown[] }][] = [
    [1, { resourceType: 4, resourceName: "1", configs: rates }],
    [2, { resourceType: 4, resourceName: "2", configs: rates }],
    [1, { resourceType: 2, resourceName: "moved", configs: replicas }],
  ];
  for (const [id, resource] of requests) {
    const res = await requestOnce(brokers.get(id)!.port, ApiKey.IncrementalAlterConfigs, 1, {
      resources: [resource as never],
      validateOnly: false,
    });
    const r = res.responses[0]!;
    if (r.errorCode !== ErrorCode.NONE) {
      throw new Error(`setting the throttle on ${r.resourceName} failed: ${r.errorMessage}`);
    }
  }
  // The topic config reaches the leader through ZooKeeper: give the watch a moment.
  await Bun.sleep(1_000);
}

async function reportReassignment(brokers: Map<number, ChildBroker>, options: Options) {
  const throttle = options.throttleMbPerSecond;
  const moved = await reassignmentRun(brokers, options.reassignMb, throttle);
  console.log(
    `reassignment of ${options.reassignMb} MB under a ${throttle} MB/s throttle: ` +
      `${moved.seconds.toFixed(1)} s, ${moved.mbPerSecond.toFixed(1)} MB/s ` +
      `(${((moved.mbPerSecond / throttle) * 100).toFixed(0)}% of it)`,
  );
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
            // The group's coordinator fails over with its __consumer_offsets partition.
            ...internalTopicReplication(3),
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
    if (options.reassignMb > 0) await reportReassignment(brokers, options);
    console.log("| produce, RF 3, 6 partitions, 100 B | records | records/s | MB/s | failed |");
    console.log("|---|---:|---:|---:|---:|");
    for (const row of rows) console.log(row);
    if (options.kills === 0) return;
    await createTopic(first, "failover", 1);
    const gaps = (await failoverGaps(brokers, options.kills)).sort((a, b) => a - b);
    const median = gaps[Math.floor(gaps.length / 2)]!;
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
