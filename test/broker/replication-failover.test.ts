/**
 * Durability under failover, with broker processes and a real ZooKeeper: replication factor 3,
 * min.insync.replicas=2, a producer sending acks=all records one at a time while the leader of
 * the partition is killed with kill -9 again and again (and restarted). Afterwards every
 * acknowledged record is readable at the offset it was acknowledged with, and the three
 * replicas' logs are byte-identical.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { ErrorCode } from "../../src/protocol/errors.ts";
import { ApiKey } from "../../src/protocol/generated/index.ts";
import {
  buildRecordBatch,
  decodeRecords,
  iterateBatches,
  readBatchHeader,
} from "../../src/protocol/record-batch.ts";
import { ChildBroker } from "../support/child-broker.ts";
import { KafkaClient, requestOnce } from "../support/kafka-client.ts";
import { startZooKeeper, type ZooKeeperServer } from "../support/zookeeper-server.ts";
import { until as untilHarness } from "./cluster-harness.ts";

const KILLS = 10;
const SESSION_TIMEOUT_MS = 1_500;
const TOPIC = "durable";

let zooKeeper: ZooKeeperServer;
const brokers = new Map<number, ChildBroker>();

beforeAll(async () => {
  zooKeeper = await startZooKeeper();
}, 60_000);

afterAll(async () => {
  await Promise.all([...brokers.values()].map((b) => b.remove()));
  await zooKeeper.stop();
});

/** Polls twice as often as the cluster tests: failover gaps here are measured tightly. */
const until = <T>(probe: () => Promise<T | undefined>, timeoutMs: number, what: string) =>
  untilHarness(probe, timeoutMs, what, 50);

interface Leadership {
  readonly leaderId: number;
  readonly isr: readonly number[];
}

/** The partition's leader and ISR as a running broker's Metadata states them. */
async function leadership(): Promise<Leadership | undefined> {
  const running = [...brokers.values()].filter((b) => b.running);
  const m = await requestOnce(running[0]!.port, ApiKey.Metadata, 12, {
    topics: [{ name: TOPIC }],
    allowAutoTopicCreation: false,
  });
  const p = m.topics[0]?.partitions[0];
  if (p === undefined || p.errorCode !== ErrorCode.NONE || p.leaderId < 0) return undefined;
  return { leaderId: p.leaderId, isr: p.isrNodes };
}

/** One producer connection, to whoever leads; dropped on any failure and made again. */
class AcksAllProducer {
  private client: { port: number; client: KafkaClient } | null = null;
  readonly acked: { value: string; offset: bigint; sentAtMs: number; atMs: number }[] = [];
  failures = 0;

  async send(value: string): Promise<boolean> {
    const sentAtMs = Date.now();
    try {
      const lead = await leadership();
      const broker = lead === undefined ? undefined : brokers.get(lead.leaderId);
      if (broker === undefined || !broker.running) throw new Error("no live leader");
      if (this.client?.port !== broker.port) {
        this.client?.client.close();
        this.client = { port: broker.port, client: await KafkaClient.connect(broker.port) };
      }
      const records = buildRecordBatch([{ key: null, value: new TextEncoder().encode(value) }]);
      const response = await this.client.client.request(ApiKey.Produce, 9, {
        acks: -1,
        timeoutMs: 5_000,
        topicData: [{ name: TOPIC, partitionData: [{ index: 0, records }] }],
      });
      const p = response.responses[0]!.partitionResponses[0]!;
      if (p.errorCode !== ErrorCode.NONE) throw new Error(`produce: error ${p.errorCode}`);
      this.acked.push({ value, offset: p.baseOffset, sentAtMs, atMs: Date.now() });
      return true;
    } catch {
      this.failures++;
      this.client?.client.close();
      this.client = null;
      return false;
    }
  }

  close(): void {
    this.client?.client.close();
  }
}

/** Every record of the partition from the leader, as (offset, value). */
async function readAll(leader: ChildBroker): Promise<Map<bigint, string>> {
  const client = await KafkaClient.connect(leader.port);
  const values = new Map<bigint, string>();
  try {
    let offset = 0n;
    for (let round = 0; round < 10_000; round++) {
      const r = await client.request(ApiKey.Fetch, 12, {
        replicaId: -1,
        maxWaitMs: 0,
        minBytes: 0,
        maxBytes: 1 << 20,
        topics: [
          {
            topic: TOPIC,
            partitions: [{ partition: 0, fetchOffset: offset, partitionMaxBytes: 1 << 20 }],
          },
        ],
      });
      const p = r.responses[0]!.partitions[0]!;
      expect(p.errorCode).toBe(ErrorCode.NONE);
      const bytes = p.records as Uint8Array;
      if (bytes === null || bytes.length === 0) break;
      for (const { position, sizeBytes } of iterateBatches(bytes)) {
        const batch = bytes.subarray(position, position + sizeBytes);
        const base = readBatchHeader(batch).baseOffset;
        for (const rec of decodeRecords(batch)) {
          values.set(base + BigInt(rec.offsetDelta), new TextDecoder().decode(rec.value!));
        }
        offset = base + BigInt(readBatchHeader(batch).lastOffsetDelta) + 1n;
      }
    }
  } finally {
    client.close();
  }
  return values;
}

const segment = (b: ChildBroker) =>
  readFileSync(join(b.dataDir, `${TOPIC}-0`, "00000000000000000000.log"));

test(`kill -9 of the leader ${KILLS} times under acks=all: no acknowledged loss`, async () => {
  const connect = `${zooKeeper.connectString}/failover`;
  const started = await Promise.all(
    [1, 2, 3].map((id) =>
      ChildBroker.start({
        settings: {
          "zookeeper.connect": connect,
          "zookeeper.session.timeout.ms": String(SESSION_TIMEOUT_MS),
          "broker.id": String(id),
          "min.insync.replicas": "2",
          "replica.fetch.wait.max.ms": "100",
          "replica.fetch.backoff.ms": "100",
        },
      }),
    ),
  );
  for (const [i, b] of started.entries()) brokers.set(i + 1, b);
  await until(
    async () => {
      const m = await requestOnce(brokers.get(1)!.port, ApiKey.Metadata, 12, { topics: [] });
      return m.brokers.length === 3 ? true : undefined;
    },
    15_000,
    "three live brokers",
  );
  const created = await requestOnce(brokers.get(1)!.port, ApiKey.CreateTopics, 7, {
    topics: [{ name: TOPIC, numPartitions: 1, replicationFactor: 3 }],
    timeoutMs: 10_000,
  });
  expect(created.topics[0]!.errorCode).toBe(ErrorCode.NONE);
  const producer = new AcksAllProducer();
  let producing = true;
  let sequence = 0;
  const producing$ = (async () => {
    while (producing) {
      if (await producer.send(`v${sequence}`)) sequence++;
      else await Bun.sleep(50);
    }
  })();
  const victims: number[] = [];
  const gapsMs: number[] = [];
  for (let kill = 0; kill < KILLS; kill++) {
    const ackedBefore = producer.acked.length;
    const lead = await until(
      async () => {
        const l = await leadership();
        const progressed = producer.acked.length >= ackedBefore + 5;
        return l !== undefined && l.isr.length === 3 && progressed ? l : undefined;
      },
      30_000,
      `a full ISR and new acknowledged records before kill ${kill + 1}`,
    );
    victims.push(lead.leaderId);
    const victim = brokers.get(lead.leaderId)!;
    const killedAtMs = Date.now();
    const ackedAtKill = producer.acked.length;
    await victim.kill9();
    await until(
      async () => {
        const l = await leadership();
        return l !== undefined && l.leaderId !== lead.leaderId ? l : undefined;
      },
      20_000,
      `a new leader after kill ${kill + 1}`,
    );
    brokers.set(lead.leaderId, await victim.restart());
    // The failover gap: from the kill to the first acknowledgement of a record sent after it.
    const next = await until(
      async () => producer.acked.slice(ackedAtKill).find((a) => a.sentAtMs >= killedAtMs),
      30_000,
      "an acknowledgement",
    );
    gapsMs.push(next.atMs - killedAtMs);
  }
  const fullIsr = async () => ((await leadership())?.isr.length === 3 ? true : undefined);
  await until(fullIsr, 30_000, "full ISR");
  producing = false;
  await producing$;
  producer.close();
  console.error(
    `failover: ${producer.acked.length} records acknowledged, ${producer.failures} ` +
      `failed attempts, leaders killed: ${victims.join(",")}; kill-to-next-ack ms: ` +
      `${[...gapsMs].sort((a, b) => a - b).join(",")}`,
  );
  const leader = brokers.get((await leadership())!.leaderId)!;
  const stored = await readAll(leader);
  for (const { value, offset } of producer.acked) expect(stored.get(offset)).toBe(value);
  const all = [...brokers.values()];
  await until(
    async () => (all.every((b) => segment(b).equals(segment(leader))) ? true : undefined),
    15_000,
    "identical replicas",
  );
  expect(producer.acked.length).toBeGreaterThanOrEqual(KILLS * 5);
}, 150_000);
