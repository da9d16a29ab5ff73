/**
 * A leader cut off from ZooKeeper and from its followers (docs/faults.md, "A leader cut off")
 * refuses produce requests once a session timeout has passed, instead of holding acks=-1 ones
 * until they time out; a ZooKeeper outage alone, with the followers still fetching, changes
 * nothing. Three broker processes on one real ZooKeeper; broker 1 reaches it through a proxy
 * that can drop its traffic; its followers are frozen with SIGSTOP.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { ErrorCode } from "../../src/protocol/errors.ts";
import { ApiKey } from "../../src/protocol/generated/index.ts";
import { buildRecordBatch } from "../../src/protocol/record-batch.ts";
import { ZooKeeperClient } from "../../src/zookeeper/zookeeper-client.ts";
import {
  type Cluster,
  consistentMetadata,
  createTopicWithAssignment,
  produceAcksAll,
  SESSION_TIMEOUT_MS,
  until,
} from "../broker/cluster-harness.ts";
import { ChildBroker } from "../support/child-broker.ts";
import { requestOnce } from "../support/kafka-client.ts";
import { startZooKeeper, type ZooKeeperServer } from "../support/zookeeper-server.ts";
import { TcpProxy } from "../zookeeper/tcp-proxy.ts";

let zkServer: ZooKeeperServer;
let proxy: TcpProxy;
let cluster: Cluster;
const TOPIC = "leased";

beforeAll(async () => {
  zkServer = await startZooKeeper();
  proxy = await TcpProxy.start(zkServer.port);
  const started = await Promise.all(
    [1, 2, 3].map((id) =>
      ChildBroker.start({
        settings: {
          // Broker 1 alone reaches ZooKeeper through the proxy.
          "zookeeper.connect": `${id === 1 ? proxy.connectString : zkServer.connectString}/lease`,
          "zookeeper.session.timeout.ms": String(SESSION_TIMEOUT_MS),
          "broker.id": String(id),
          "min.insync.replicas": "2",
        },
      }),
    ),
  );
  const zk = await ZooKeeperClient.connect(`${zkServer.connectString}/lease`, {
    sessionTimeoutMs: SESSION_TIMEOUT_MS,
    connectTimeoutMs: 5_000,
  });
  const brokers = new Map(started.map((b, i) => [i + 1, b]));
  cluster = {
    connect: zkServer.connectString,
    brokers,
    zk,
    close: async () => {
      await zk.close();
      await Promise.all(started.map((b) => b.remove()));
    },
  };
  await consistentMetadata(cluster, 3, 30_000);
  await createTopicWithAssignment(brokers.get(1)!, TOPIC, [[1, 2, 3]]);
  await until(
    async () =>
      (await produceAcksAll(brokers.get(1)!, TOPIC, 5_000)) === ErrorCode.NONE ? true : undefined,
    20_000,
    "broker 1 leading with a full ISR",
  );
}, 90_000);

afterAll(async () => {
  for (const id of [2, 3]) signal(id, "SIGCONT");
  await cluster?.close();
  await proxy?.close();
  await zkServer?.stop();
}, 30_000);

function signal(id: number, name: "SIGSTOP" | "SIGCONT") {
  const broker = cluster?.brokers.get(id);
  if (broker?.running) process.kill(broker.pid, name);
}

async function produceAcksOne(): Promise<number> {
  const records = buildRecordBatch([{ value: new TextEncoder().encode("acks=1") }]);
  const res = await requestOnce(cluster.brokers.get(1)!.port, ApiKey.Produce, 9, {
    transactionalId: null,
    acks: 1,
    timeoutMs: 5_000,
    topicData: [{ name: TOPIC, partitionData: [{ index: 0, records }] }],
  });
  return res.responses[0]!.partitionResponses[0]!.errorCode;
}

test("with ZooKeeper down but followers fetching, the leader keeps acknowledging", async () => {
  // Frozen, ZooKeeper answers no one; every broker's ZooKeeper is silent past the session.
  zkServer.pause();
  try {
    await Bun.sleep(SESSION_TIMEOUT_MS * 2);
    expect(await produceAcksAll(cluster.brokers.get(1)!, TOPIC, 10_000)).toBe(ErrorCode.NONE);
    expect(await produceAcksOne()).toBe(ErrorCode.NONE);
  } finally {
    zkServer.resume();
  }
  expect(cluster.brokers.get(1)!.stderrText).not.toContain("refusing produce requests");
  await consistentMetadata(cluster, 3, 30_000);
}, 60_000);

test("cut off from ZooKeeper and its followers, the leader refuses produces after a session", async () => {
  const leader = cluster.brokers.get(1)!;
  for (const id of [2, 3]) signal(id, "SIGSTOP");
  proxy.setMode("blackhole");
  const startMs = Date.now();
  // Without the lease this request waits its whole 30 s and ends REQUEST_TIMED_OUT.
  const code = await produceAcksAll(leader, TOPIC, 30_000);
  const answeredMs = Date.now() - startMs;
  expect(code).toBe(ErrorCode.NOT_LEADER_OR_FOLLOWER);
  expect(answeredMs).toBeLessThan(20_000);
  // acks=1, which a deposed Kafka leader would take and later truncate, is refused too.
  expect(await produceAcksOne()).toBe(ErrorCode.NOT_LEADER_OR_FOLLOWER);
  expect(leader.stderrText).toContain(
    "refusing produce requests to 1 partitions led here (leased-0)",
  );
  proxy.setMode("forward");
  for (const id of [2, 3]) signal(id, "SIGCONT");
  // Heard again, the broker leads what the controller says it leads.
  await consistentMetadata(cluster, 3, 30_000);
  await until(
    async () => {
      const m = await consistentMetadata(cluster, 3, 30_000);
      const leaderId = m.topics.find((t) => t.name === TOPIC)!.partitions[0]!.leaderId;
      const code = await produceAcksAll(cluster.brokers.get(leaderId)!, TOPIC, 5_000);
      return code === ErrorCode.NONE ? true : undefined;
    },
    30_000,
    "acknowledged again after the cut healed",
  );
}, 90_000);
