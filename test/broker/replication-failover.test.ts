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
import { ChildBroker } from "../support/child-broker.ts";
import { requestOnce } from "../support/kafka-client.ts";
import { startZooKeeper, type ZooKeeperServer } from "../support/zookeeper-server.ts";
import { AcksAllProducer, leadership, readAll } from "./acks-all-producer.ts";
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
  const producer = new AcksAllProducer(brokers, TOPIC);
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
        const l = await leadership(brokers, TOPIC);
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
        const l = await leadership(brokers, TOPIC);
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
  const fullIsr = async () =>
    (await leadership(brokers, TOPIC))?.isr.length === 3 ? true : undefined;
  await until(fullIsr, 30_000, "full ISR");
  producing = false;
  await producing$;
  producer.close();
  console.error(
    `failover: ${producer.acked.length} records acknowledged, ${producer.failures} ` +
      `failed attempts, leaders killed: ${victims.join(",")}; kill-to-next-ack ms: ` +
      `${[...gapsMs].sort((a, b) => a - b).join(",")}`,
  );
  const leader = brokers.get((await leadership(brokers, TOPIC))!.leaderId)!;
  const stored = await readAll(leader, TOPIC);
  for (const { value, offset } of producer.acked) expect(stored.get(offset)).toBe(value);
  const all = [...brokers.values()];
  await until(
    async () => (all.every((b) => segment(b).equals(segment(leader))) ? true : undefined),
    15_000,
    "identical replicas",
  );
  expect(producer.acked.length).toBeGreaterThanOrEqual(KILLS * 5);
}, 150_000);
