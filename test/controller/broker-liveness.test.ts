/**
 * Failover without waiting for the dead broker's ZooKeeper session: three broker processes with
 * a 10 s session, min.insync.replicas=2, acks=all records sent one at a time while the leader is
 * killed with kill -9 (the first time it is also the controller). Each gap from the kill to the
 * next acknowledgement must be shorter than the session; afterwards every acknowledged record is
 * at its offset and the replicas are byte-identical.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { ErrorCode } from "../../src/protocol/errors.ts";
import { ApiKey } from "../../src/protocol/generated/index.ts";
import { AcksAllProducer, leadership, readAll } from "../broker/acks-all-producer.ts";
import { until } from "../broker/cluster-harness.ts";
import { ChildBroker } from "../support/child-broker.ts";
import { requestOnce } from "../support/kafka-client.ts";
import { startZooKeeper, type ZooKeeperServer } from "../support/zookeeper-server.ts";

const KILLS = 2;
const SESSION_TIMEOUT_MS = 10_000;
const TOPIC = "fast-failover";

let zooKeeper: ZooKeeperServer;
const brokers = new Map<number, ChildBroker>();

beforeAll(async () => {
  zooKeeper = await startZooKeeper();
}, 60_000);

afterAll(async () => {
  await Promise.all([...brokers.values()].map((b) => b.remove()));
  await zooKeeper.stop();
});

function startBroker(connect: string, id: number): Promise<ChildBroker> {
  return ChildBroker.start({
    settings: {
      "zookeeper.connect": connect,
      "zookeeper.session.timeout.ms": String(SESSION_TIMEOUT_MS),
      "broker.id": String(id),
      "min.insync.replicas": "2",
      "replica.fetch.wait.max.ms": "100",
      "replica.fetch.backoff.ms": "100",
    },
  });
}

const controllerId = async (b: ChildBroker) =>
  (await requestOnce(b.port, ApiKey.Metadata, 12, { topics: [] })).controllerId;

/** Broker 1 starts alone, so it is the controller, and leads the topic's only partition. */
async function startCluster(connect: string): Promise<void> {
  brokers.set(1, await startBroker(connect, 1));
  await until(
    async () => ((await controllerId(brokers.get(1)!)) === 1 ? true : undefined),
    15_000,
    "broker 1 controls",
  );
  const rest = await Promise.all([2, 3].map((id) => startBroker(connect, id)));
  brokers.set(2, rest[0]!);
  brokers.set(3, rest[1]!);
  await until(
    async () => {
      const m = await requestOnce(brokers.get(1)!.port, ApiKey.Metadata, 12, { topics: [] });
      return m.brokers.length === 3 ? true : undefined;
    },
    15_000,
    "three live brokers",
  );
  const created = await requestOnce(brokers.get(1)!.port, ApiKey.CreateTopics, 7, {
    topics: [
      {
        name: TOPIC,
        numPartitions: -1,
        replicationFactor: -1,
        assignments: [{ partitionIndex: 0, brokerIds: [1, 2, 3] }],
      },
    ],
    timeoutMs: 10_000,
  });
  expect(created.topics[0]!.errorCode).toBe(ErrorCode.NONE);
}

const segment = (b: ChildBroker) =>
  readFileSync(join(b.dataDir, `${TOPIC}-0`, "00000000000000000000.log"));

test("kill -9 of the leader (and controller) under acks=all: failover well within the session", async () => {
  await startCluster(`${zooKeeper.connectString}/fast-failover`);
  const producer = new AcksAllProducer(brokers, TOPIC);
  let producing = true;
  let sequence = 0;
  const producing$ = (async () => {
    while (producing) {
      if (await producer.send(`v${sequence}`)) sequence++;
      else await Bun.sleep(20);
    }
  })();
  const gapsMs: number[] = [];
  const victims: string[] = [];
  for (let kill = 0; kill < KILLS; kill++) {
    const ackedBefore = producer.acked.length;
    const lead = await until(
      async () => {
        const l = await leadership(brokers, TOPIC);
        const progressed = producer.acked.length >= ackedBefore + 5;
        return l !== undefined && l.isr.length === 3 && progressed ? l : undefined;
      },
      45_000,
      `a full ISR and new acknowledged records before kill ${kill + 1}`,
    );
    const victim = brokers.get(lead.leaderId)!;
    const controller = await controllerId(victim);
    victims.push(`${lead.leaderId}${controller === lead.leaderId ? " (controller)" : ""}`);
    if (kill === 0) expect(controller).toBe(lead.leaderId);
    const killedAtMs = Date.now();
    const ackedAtKill = producer.acked.length;
    await victim.kill9();
    const next = await until(
      async () => producer.acked.slice(ackedAtKill).find((a) => a.sentAtMs >= killedAtMs),
      SESSION_TIMEOUT_MS,
      `an acknowledgement after kill ${kill + 1}`,
    );
    gapsMs.push(next.atMs - killedAtMs);
    brokers.set(lead.leaderId, await victim.restart());
  }
  await until(
    async () => ((await leadership(brokers, TOPIC))?.isr.length === 3 ? true : undefined),
    45_000,
    "full ISR",
  );
  producing = false;
  await producing$;
  producer.close();
  console.error(
    `fast failover: victims ${victims.join(", ")}; kill-to-next-ack ms ${gapsMs.join(",")}; ` +
      `${producer.acked.length} acknowledged`,
  );
  for (const gapMs of gapsMs) expect(gapMs).toBeLessThan(SESSION_TIMEOUT_MS);
  const leader = brokers.get((await leadership(brokers, TOPIC))!.leaderId)!;
  const stored = await readAll(leader, TOPIC);
  for (const { value, offset } of producer.acked) expect(stored.get(offset)).toBe(value);
  const all = [...brokers.values()];
  await until(
    async () => (all.every((b) => segment(b).equals(segment(leader))) ? true : undefined),
    15_000,
    "identical replicas",
  );
}, 180_000);
