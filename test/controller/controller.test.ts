/**
 * The controller with three in-process brokers on a real ZooKeeper: one active controller,
 * a successor that rebuilds its state from ZooKeeper alone when the controller stops,
 * AlterPartition accepted only against the current leader epoch and partition epoch,
 * CreatePartitions and topic deletion through a broker that is not the controller.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, rmSync } from "node:fs";
import { join } from "node:path";
import { ErrorCode } from "../../src/protocol/errors.ts";
import { ApiKey, type MetadataResponse } from "../../src/protocol/generated/index.ts";
import { ZooKeeperClient } from "../../src/zookeeper/zookeeper-client.ts";
import { type InProcessBroker, startInProcessBroker } from "../support/broker-harness.ts";
import { requestOnce } from "../support/kafka-client.ts";
import { startZooKeeper, type ZooKeeperServer } from "../support/zookeeper-server.ts";

const text = (b: Uint8Array) => new TextDecoder().decode(b);
let zkServer: ZooKeeperServer;
let connect: string;
let zk: ZooKeeperClient;
const brokers = new Map<number, InProcessBroker>();
/** Data dirs of brokers restarted on them (the harness leaves those to the test). */
const keptDirs: string[] = [];

beforeAll(async () => {
  zkServer = await startZooKeeper();
  connect = `${zkServer.connectString}/controller-test`;
  for (const id of [1, 2, 3]) brokers.set(id, await startBroker(id));
  zk = await ZooKeeperClient.connect(connect, { sessionTimeoutMs: 4_000, connectTimeoutMs: 5_000 });
}, 60_000);

afterAll(async () => {
  await zk.close();
  for (const b of brokers.values()) await b.stop();
  for (const dir of keptDirs) rmSync(dir, { recursive: true, force: true });
  await zkServer.stop();
}, 60_000);

function brokerSettings(id: number) {
  return {
    settings: {
      "zookeeper.connect": connect,
      "zookeeper.session.timeout.ms": "4000",
      "broker.id": String(id),
      "default.replication.factor": "3",
      "leader.imbalance.check.interval.seconds": "1",
    },
  };
}

function startBroker(id: number): Promise<InProcessBroker> {
  return startInProcessBroker(brokerSettings(id));
}

async function json(path: string) {
  return JSON.parse(text((await zk.getData(path)).data));
}

function metadata(b: InProcessBroker): Promise<MetadataResponse> {
  return requestOnce(b.port, ApiKey.Metadata, 12, { topics: null, allowAutoTopicCreation: false });
}

async function until<T>(probe: () => Promise<T | undefined>, what: string): Promise<T> {
  const deadlineMs = Date.now() + 15_000;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadlineMs) throw new Error(`timed out: ${what}`);
    await Bun.sleep(50);
  }
}

const activeControllers = () =>
  [...brokers.entries()]
    .filter(([, b]) => b.broker.services.controller?.isActive === true)
    .map(([id]) => id);

async function createTopic(b: InProcessBroker, name: string, partitions: number) {
  const res = await requestOnce(b.port, ApiKey.CreateTopics, 7, {
    topics: [
      { name, numPartitions: partitions, replicationFactor: 3, assignments: [], configs: [] },
    ],
    timeoutMs: 5_000,
    validateOnly: false,
  });
  expect(res.topics[0]!.errorCode).toBe(ErrorCode.NONE);
}

describe("controller", () => {
  test("exactly one broker is the active controller, the one /controller names", async () => {
    const active = await until(async () => {
      const ids = activeControllers();
      return ids.length === 1 ? ids[0] : undefined;
    }, "one active controller");
    expect((await json("/controller")).brokerid).toBe(active);
    for (const b of brokers.values()) {
      await until(
        async () => ((await metadata(b)).controllerId === active ? true : undefined),
        "every broker to name the controller",
      );
    }
  });

  test("AlterPartition: only the leader, at its leader epoch and partition epoch", async () => {
    const via = brokers.get(activeControllers()[0]!)!;
    await createTopic(via, "isr", 1);
    const statePath = "/brokers/topics/isr/partitions/0/state";
    const state = await json(statePath);
    const version = (await zk.getData(statePath)).stat.version;
    const follower = [1, 2, 3].find((id) => id !== state.leader)!;
    const alter = (
      brokerId: number,
      leaderEpoch: number,
      partitionEpoch: number,
      newIsr: number[],
    ) =>
      requestOnce(via.port, ApiKey.AlterPartition, 1, {
        brokerId,
        brokerEpoch: -1n,
        topics: [
          {
            topicName: "isr",
            partitions: [
              { partitionIndex: 0, leaderEpoch, newIsr, leaderRecoveryState: 0, partitionEpoch },
            ],
          },
        ],
      });
    const code = async (r: ReturnType<typeof alter>) =>
      (await r).topics[0]!.partitions[0]!.errorCode;
    const shrunk = [state.leader];
    expect(await code(alter(follower, state.leader_epoch, version, shrunk))).toBe(
      ErrorCode.NOT_LEADER_OR_FOLLOWER,
    );
    expect(await code(alter(state.leader, state.leader_epoch - 1, version, shrunk))).toBe(
      ErrorCode.FENCED_LEADER_EPOCH,
    );
    expect(await code(alter(state.leader, state.leader_epoch, version + 1, shrunk))).toBe(
      ErrorCode.INVALID_UPDATE_VERSION,
    );
    // v0-1 cannot carry INELIGIBLE_REPLICA (KIP-841): Kafka answers OPERATION_NOT_ATTEMPTED.
    expect(await code(alter(state.leader, state.leader_epoch, version, [state.leader, 42]))).toBe(
      ErrorCode.OPERATION_NOT_ATTEMPTED,
    );
    const ok = (await alter(state.leader, state.leader_epoch, version, shrunk)).topics[0]!
      .partitions[0]!;
    expect(ok).toMatchObject({
      errorCode: ErrorCode.NONE,
      leaderId: state.leader,
      leaderEpoch: state.leader_epoch,
      isr: shrunk,
      partitionEpoch: version + 1,
    });
    expect(await json(statePath)).toMatchObject({ leader: state.leader, isr: shrunk });
    // Sent again with the old partition epoch (its answer was lost): the state it is in.
    const again = (await alter(state.leader, state.leader_epoch, version, shrunk)).topics[0]!;
    const current = { errorCode: ErrorCode.NONE, isr: shrunk, partitionEpoch: version + 1 };
    expect(again.partitions[0]).toMatchObject(current);
    // The controller tells every broker (the leader may expand the ISR again later).
    for (const b of brokers.values()) {
      await until(async () => {
        const p = b.broker.services.metadataCache.partitionState("isr", 0);
        return p !== undefined && p.partitionEpoch >= version + 1 ? true : undefined;
      }, "the new partition epoch in every broker's cache");
    }
    // A broker that is not the controller refuses.
    const other = [...brokers.values()].find((b) => b !== via)!;
    const refused = await requestOnce(other.port, ApiKey.AlterPartition, 1, {
      brokerId: state.leader,
      topics: [],
    });
    expect(refused.errorCode).toBe(ErrorCode.NOT_CONTROLLER);
  });

  test("AlterPartition from a broker id the controller does not know: STALE_BROKER_EPOCH", async () => {
    // KIP-380: only a registration the controller knows may change an ISR; refused whole.
    const via = brokers.get(activeControllers()[0]!)!;
    const unknown = await requestOnce(via.port, ApiKey.AlterPartition, 1, {
      brokerId: 42,
      brokerEpoch: -1n,
      topics: [],
    });
    expect(unknown.errorCode).toBe(ErrorCode.STALE_BROKER_EPOCH);
  });

  test("CreatePartitions and deletion through a broker that is not the controller", async () => {
    const controllerId = activeControllers()[0]!;
    const via = [...brokers.entries()].find(([id]) => id !== controllerId)![1];
    await createTopic(via, "grown", 2);
    const grown = await requestOnce(via.port, ApiKey.CreatePartitions, 3, {
      topics: [{ name: "grown", count: 5, assignments: null }],
      timeoutMs: 5_000,
      validateOnly: false,
    });
    expect(grown.results[0]!.errorCode).toBe(ErrorCode.NONE);
    for (const b of brokers.values()) {
      await until(async () => {
        const t = (await metadata(b)).topics.find((x) => x.name === "grown");
        return t?.partitions.length === 5 ? true : undefined;
      }, "five partitions everywhere");
    }
    const leaders = await until(async () => {
      const ids = (await metadata(via)).topics
        .find((t) => t.name === "grown")!
        .partitions.map((p) => p.leaderId);
      return ids.every((id) => id >= 0) ? ids : undefined;
    }, "leaders for the new partitions");
    expect(new Set(leaders).size).toBe(3);
    // Replication factor 3: every broker holds a log of every partition. A follower makes its
    // new logs off the event loop when LeaderAndIsr reaches it, so the leaders the controller
    // announced can be in metadata before a follower's directory is on disk.
    for (const b of brokers.values()) {
      await until(
        async () => (existsSync(join(b.dataDir, "grown-4")) ? true : undefined),
        `grown-4 in ${b.dataDir}`,
      );
    }
    const deleted = await requestOnce(via.port, ApiKey.DeleteTopics, 6, {
      topics: [{ name: "grown" }],
      timeoutMs: 5_000,
    });
    expect(deleted.responses[0]!.errorCode).toBe(ErrorCode.NONE);
    for (const b of brokers.values()) {
      await until(async () => {
        const gone = (await metadata(b)).topics.every((t) => t.name !== "grown");
        const logsGone = [0, 1, 2, 3, 4].every((p) => !existsSync(join(b.dataDir, `grown-${p}`)));
        return gone && logsGone ? true : undefined;
      }, "the topic and its logs gone from every broker");
    }
  });

  test("a deletion waits while a replica's broker is offline; a new controller finishes it", async () => {
    const controllerId = activeControllers()[0]!;
    const via = brokers.get(controllerId)!;
    await createTopic(via, "pending", 1);
    const away = [1, 2, 3].find((id) => id !== controllerId)!;
    await until(
      async () => (existsSync(join(brokers.get(away)!.dataDir, "pending-0")) ? true : undefined),
      "the replica's log on the broker about to stop",
    );
    const awayDir = brokers.get(away)!.dataDir;
    keptDirs.push(awayDir);
    await brokers.get(away)!.broker.stop(); // the harness's stop would remove the data dir
    brokers.delete(away);
    await until(
      async () => ((await metadata(via)).brokers.length === 2 ? true : undefined),
      "the controller to see the broker gone",
    );
    // As kafka-topics.sh --zookeeper --delete did: only the marker.
    await zk.create("/admin/delete_topics/pending");
    await Bun.sleep(1_000);
    expect(await zk.exists("/brokers/topics/pending")).not.toBeNull();
    expect(await zk.exists("/admin/delete_topics/pending")).not.toBeNull();
    // The controller changes while the deletion waits: its successor finds the marker.
    await brokers.get(controllerId)!.stop();
    brokers.delete(controllerId);
    await until(async () => {
      const ids = activeControllers();
      return ids.length === 1 ? ids[0] : undefined;
    }, "a new controller");
    brokers.set(controllerId, await startBroker(controllerId));
    brokers.set(away, await startInProcessBroker({ ...brokerSettings(away), dataDir: awayDir }));
    await until(async () => {
      const gone = (await zk.exists("/brokers/topics/pending")) === null;
      const marker = await zk.exists("/admin/delete_topics/pending");
      const config = await zk.exists("/config/topics/pending");
      return gone && marker === null && config === null ? true : undefined;
    }, "the topic's znodes, config and marker removed");
    for (const b of brokers.values()) {
      await until(
        async () => (existsSync(join(b.dataDir, "pending-0")) ? undefined : true),
        "the log deleted on every replica, the returned one included",
      );
    }
  }, 60_000);

  test("no ISR takes a broker in controlled shutdown until it registers again", async () => {
    const via = brokers.get(activeControllers()[0]!)!;
    await createTopic(via, "draining", 1);
    const statePath = "/brokers/topics/draining/partitions/0/state";
    const fullIsr = async () => {
      const s = await json(statePath);
      return s.isr.length === 3 ? s : undefined;
    };
    const before = await until(fullIsr, "all three replicas in the ISR");
    const leaving = [1, 2, 3].find((id) => id !== before.leader && brokers.get(id) !== via)!;
    const shutdown = await requestOnce(via.port, ApiKey.ControlledShutdown, 3, {
      brokerId: leaving,
      brokerEpoch: -1n,
    });
    expect(shutdown.errorCode).toBe(ErrorCode.NONE);
    const state = await json(statePath);
    expect(state.isr).not.toContain(leaving);
    const version = (await zk.getData(statePath)).stat.version;
    const topicId = (await metadata(via)).topics.find((t) => t.name === "draining")!.topicId;
    const expand = await requestOnce(via.port, ApiKey.AlterPartition, 2, {
      brokerId: state.leader,
      brokerEpoch: -1n,
      topics: [
        {
          topicId,
          partitions: [
            {
              partitionIndex: 0,
              leaderEpoch: state.leader_epoch,
              newIsr: [...state.isr, leaving],
              leaderRecoveryState: 0,
              partitionEpoch: version,
            },
          ],
        },
      ],
    });
    expect(expand.topics[0]!.partitions[0]!.errorCode).toBe(ErrorCode.INELIGIBLE_REPLICA);
    // Nor does the leader's own proposal get it back in: the replica stopped fetching.
    await Bun.sleep(1_000);
    expect((await json(statePath)).isr).not.toContain(leaving);
    // Registered again, it is an ordinary broker: it catches up and rejoins the ISR.
    await brokers.get(leaving)!.stop();
    brokers.set(leaving, await startBroker(leaving));
    await until(fullIsr, "the restarted broker back in the ISR");
  }, 60_000);

  test("a stopped controller's successor rebuilds from ZooKeeper with a higher epoch", async () => {
    const old = activeControllers()[0]!;
    const epoch = Number(text((await zk.getData("/controller_epoch")).data));
    await brokers.get(old)!.stop();
    brokers.delete(old);
    const next = await until(async () => {
      const ids = activeControllers();
      return ids.length === 1 ? ids[0] : undefined;
    }, "a new controller");
    expect(next).not.toBe(old);
    expect(Number(text((await zk.getData("/controller_epoch")).data))).toBe(epoch + 1);
    for (const b of brokers.values()) {
      const m = await until(async () => {
        const answer = await metadata(b);
        return answer.controllerId === next && answer.brokers.length === 2 ? answer : undefined;
      }, "the new controller and two brokers in Metadata");
      for (const t of m.topics) {
        for (const p of t.partitions) expect(p.leaderId === -1 || p.leaderId !== old).toBe(true);
      }
    }
    brokers.set(old, await startBroker(old));
    for (const b of brokers.values()) {
      await until(
        async () => ((await metadata(b)).brokers.length === 3 ? true : undefined),
        "the restarted broker in everyone's Metadata",
      );
    }
  }, 60_000);

  test("leaderships return to their preferred replicas once a restarted broker is in sync", async () => {
    const via = brokers.get(1)!;
    await createTopic(via, "preferred", 3);
    const preferredOf = (m: MetadataResponse) =>
      m.topics
        .find((t) => t.name === "preferred")!
        .partitions.map((p) => [p.replicaNodes[0], p.leaderId]);
    // New partitions have leaders once the controller's LeaderAndIsr reached the brokers.
    const initial = await until(async () => {
      const led = preferredOf(await metadata(via));
      return led.every(([preferred, leader]) => leader === preferred) ? led : undefined;
    }, "the new topic led by its preferred replicas");
    const moved = initial[0]![0]!;
    await brokers.get(moved)!.stop();
    brokers.delete(moved);
    const other = [...brokers.values()][0]!;
    await until(async () => {
      const led = preferredOf(await metadata(other));
      return led.every(([, leader]) => leader !== moved) ? true : undefined;
    }, "leadership away from the stopped broker");
    brokers.set(moved, await startBroker(moved));
    await until(async () => {
      const led = preferredOf(await metadata(other));
      return led.every(([preferred, leader]) => leader === preferred) ? true : undefined;
    }, "every partition led by its preferred replica again");
  }, 60_000);
});
