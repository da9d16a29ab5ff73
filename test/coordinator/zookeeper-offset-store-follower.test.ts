/**
 * A coordinator taking a group over reads its offsets and membership from ZooKeeper through
 * whichever server its session is connected to, and a follower may be behind the leader: the
 * chaos harness saw a committed offset read back move from 3843 to 3735. Here a real
 * three-node ensemble has one follower's link to its leader run through a proxy that is cut
 * (bytes dropped, no reset): the follower goes on serving its clients for syncLimit (5 s with
 * the test tick) with the data it had, while the leader and the other follower commit newer
 * offsets. The store must not answer with the old ones.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { topicPartitionKey } from "../../src/common/topic-partition.ts";
import { ZooKeeperOffsetStore } from "../../src/coordinator/zookeeper-offset-store.ts";
import { ErrorCode, KafkaError } from "../../src/protocol/errors.ts";
import { ZooKeeperClient } from "../../src/zookeeper/zookeeper-client.ts";
import { waitUntil } from "../support/wait-until.ts";
import {
  fourLetterWord,
  startZooKeeperEnsemble,
  type ZooKeeperEnsemble,
  type ZooKeeperNode,
} from "../support/zookeeper-server.ts";
import { TcpProxy } from "../zookeeper/tcp-proxy.ts";

/** Long sessions: the cut follower cannot pass the reader's pings on to the leader. */
const CLIENT_OPTIONS = { sessionTimeoutMs: 30_000, connectTimeoutMs: 10_000 };
const STORE_OPTIONS = { offsetCommitTimeoutMs: 1_500 };
const GROUP = "takeover";
const KEY = topicPartitionKey("orders", 0);

let ensemble: ZooKeeperEnsemble;
/** `${from}->${to}`: the proxy server `from` reaches server `to`'s quorum port through. */
const links = new Map<string, TcpProxy>();
let leader: number;
let follower: number;
let writer: ZooKeeperOffsetStore;
let readerZk: ZooKeeperClient;
let reader: ZooKeeperOffsetStore;

async function mode(node: ZooKeeperNode): Promise<string> {
  const answer = await fourLetterWord(node.port, "srvr").catch(() => "");
  return /^Mode: (\w+)/m.exec(answer)?.[1] ?? "down";
}

const commit = (offset: number) => ({
  topic: "orders",
  partition: 0,
  committed: { offset: BigInt(offset), leaderEpoch: 1, metadata: "", commitTimestampMs: 1 },
});

/** The offset the store loads, or the error it fails with. */
const loaded = (store: ZooKeeperOffsetStore) =>
  store.loadGroup(GROUP).then(
    (offsets) => offsets.get(KEY)?.offset ?? null,
    (error: unknown) => error,
  );

beforeAll(async () => {
  ensemble = await startZooKeeperEnsemble(3, {
    quorumRoute: async (from, to, port) => {
      const proxy = await TcpProxy.start(port);
      links.set(`${from}->${to}`, proxy);
      return proxy.port;
    },
  });
  const modes = await Promise.all(ensemble.nodes.map(mode));
  leader = modes.indexOf("leader") + 1;
  follower = modes.indexOf("follower") + 1;
  const node = (id: number) => ensemble.nodes[id - 1]!;
  writer = await ZooKeeperOffsetStore.connect(
    node(leader).connectString,
    CLIENT_OPTIONS,
    STORE_OPTIONS,
  );
  readerZk = await ZooKeeperClient.connect(node(follower).connectString, CLIENT_OPTIONS);
  reader = new ZooKeeperOffsetStore(readerZk, STORE_OPTIONS);
}, 60_000);

afterAll(async () => {
  await writer?.close();
  await readerZk?.close();
  await ensemble?.stop();
  await Promise.all([...links.values()].map((proxy) => proxy.close()));
});

test("offsets and membership are not read from a follower cut off from its leader", async () => {
  expect(leader).toBeGreaterThan(0);
  expect(follower).toBeGreaterThan(0);
  await writer.commit(GROUP, [commit(100)]);
  await writer.storeMembership(GROUP, new TextEncoder().encode("generation 1"));
  expect(await loaded(reader)).toBe(100n);

  // The follower's link to the leader drops every byte from now on; it does not know yet.
  links.get(`${follower}->${leader}`)!.setMode("blackhole");
  // Acknowledged by a quorum: the leader and the other follower.
  await writer.commit(GROUP, [commit(200)]);
  await writer.storeMembership(GROUP, new TextEncoder().encode("generation 2"));

  // What a plain read on the reader's session answers: the follower's old data.
  const raw = await readerZk.getData("/consumers/takeover/offsets/orders/0");
  expect(new TextDecoder().decode(raw.data)).toBe("100");
  // The store cannot get its barrier through the follower, so it says it cannot answer
  // (retriable) rather than answer 100. Without the barrier it returned 100n.
  const offset = await loaded(reader);
  expect(offset).toBeInstanceOf(KafkaError);
  expect((offset as KafkaError).code).toBe(ErrorCode.COORDINATOR_NOT_AVAILABLE);
  const membership = await reader.loadMembership(GROUP).then(
    (bytes) => (bytes === null ? null : new TextDecoder().decode(bytes)),
    (error: unknown) => error,
  );
  expect(membership).not.toBe("generation 1");
  expect((membership as KafkaError).code).toBe(ErrorCode.COORDINATOR_NOT_AVAILABLE);

  // Healed: the follower rejoins and catches up, and the store reads the new offset.
  links.get(`${follower}->${leader}`)!.setMode("forward");
  await waitUntil(async () => (await loaded(reader)) === 200n, 30_000, "offset 200 loaded");
  const bytes = await reader.loadMembership(GROUP);
  expect(new TextDecoder().decode(bytes!)).toBe("generation 2");
}, 60_000);
