import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { ErrorCode } from "../../src/protocol/errors.ts";
import { ApiKey } from "../../src/protocol/generated/index.ts";
import {
  LocalProducerIdBlockStore,
  PRODUCER_ID_BLOCK_ZNODE,
  ProducerIdManager,
  ZooKeeperProducerIdBlockStore,
} from "../../src/server/producer-id-manager.ts";
import { ZooKeeperClient } from "../../src/zookeeper/zookeeper-client.ts";
import { startInProcessBroker } from "../support/broker-harness.ts";
import { requestOnce } from "../support/kafka-client.ts";
import { startZooKeeper, type ZooKeeperServer } from "../support/zookeeper-server.ts";

const CLIENT_OPTIONS = { sessionTimeoutMs: 2_000, connectTimeoutMs: 5_000 };
const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes);

async function take(manager: ProducerIdManager, count: number): Promise<bigint[]> {
  const ids: bigint[] = [];
  for (let i = 0; i < count; i++) ids.push(await manager.generateProducerId());
  return ids;
}

describe("embedded mode: a block file in the log dir", () => {
  test("ids are unique and increasing across blocks and restarts", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "quill-pid-"));
    try {
      const first = await take(new ProducerIdManager(0, new LocalProducerIdBlockStore(dir)), 1001);
      expect(first[0]).toBe(0n);
      expect(first[1000]).toBe(1000n);
      expect(new Set(first).size).toBe(1001);
      const file = JSON.parse(fs.readFileSync(path.join(dir, "latest_producer_id_block"), "utf8"));
      expect(file).toEqual({ version: 1, broker: 0, block_start: "1000", block_end: "1999" });
      // A restart (or crash) skips the rest of the recorded block rather than reuse an id.
      const second = await take(new ProducerIdManager(0, new LocalProducerIdBlockStore(dir)), 3);
      expect(second).toEqual([2000n, 2001n, 2002n]);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  test("concurrent requests share one block claim", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "quill-pid-"));
    try {
      const manager = new ProducerIdManager(0, new LocalProducerIdBlockStore(dir));
      const ids = await Promise.all(Array.from({ length: 50 }, () => manager.generateProducerId()));
      expect(new Set(ids).size).toBe(50);
      expect(ids.every((id) => id < 1000n)).toBe(true);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe("ZooKeeper mode: /latest_producer_id_block", () => {
  let server: ZooKeeperServer;
  beforeAll(async () => {
    server = await startZooKeeper();
  }, 60_000);
  afterAll(async () => {
    await server.stop();
  });

  async function chrootClient(name: string): Promise<ZooKeeperClient> {
    const root = await ZooKeeperClient.connect(server.connectString, CLIENT_OPTIONS);
    await root.mkdirp(`/${name}`);
    await root.close();
    return ZooKeeperClient.connect(`${server.connectString}/${name}`, CLIENT_OPTIONS);
  }

  test("two brokers claim disjoint blocks, in Kafka's JSON, from an empty znode", async () => {
    const a = await chrootClient("pid-a");
    const b = await chrootClient("pid-a");
    try {
      // Kafka creates the znode empty at startup (a persistent top-level path).
      await a.create(PRODUCER_ID_BLOCK_ZNODE);
      const brokerA = new ProducerIdManager(1, new ZooKeeperProducerIdBlockStore(a));
      const brokerB = new ProducerIdManager(2, new ZooKeeperProducerIdBlockStore(b));
      const [idsA, idsB] = await Promise.all([take(brokerA, 1200), take(brokerB, 1200)]);
      const all = new Set([...idsA, ...idsB]);
      expect(all.size).toBe(2400);
      const { data } = await a.getData(PRODUCER_ID_BLOCK_ZNODE);
      const latest = JSON.parse(text(data));
      expect(latest.version).toBe(1);
      expect([1, 2]).toContain(latest.broker);
      expect(latest.block_start).toBe("3000");
      expect(latest.block_end).toBe("3999");
    } finally {
      await a.close();
      await b.close();
    }
  });

  test("a missing znode is created with the first block", async () => {
    const zk = await chrootClient("pid-b");
    try {
      const manager = new ProducerIdManager(5, new ZooKeeperProducerIdBlockStore(zk));
      expect(await take(manager, 2)).toEqual([0n, 1n]);
      const { data } = await zk.getData(PRODUCER_ID_BLOCK_ZNODE);
      expect(JSON.parse(text(data))).toEqual({
        version: 1,
        broker: 5,
        block_start: "0",
        block_end: "999",
      });
    } finally {
      await zk.close();
    }
  });

  test("a broker in ZooKeeper mode answers InitProducerId from the cluster's block", async () => {
    const zk = await chrootClient("pid-c");
    const broker = await startInProcessBroker({
      settings: {
        "zookeeper.connect": `${server.connectString}/pid-c`,
        "broker.id": "3",
      },
    });
    try {
      const init = () =>
        requestOnce(broker.port, ApiKey.InitProducerId, 4, {
          transactionalId: null,
          transactionTimeoutMs: 60_000,
        });
      const [first, second] = [await init(), await init()];
      expect(first.errorCode).toBe(ErrorCode.NONE);
      expect([first.producerId, second.producerId]).toEqual([0n, 1n]);
      const { data } = await zk.getData(PRODUCER_ID_BLOCK_ZNODE);
      expect(JSON.parse(text(data))).toEqual({
        version: 1,
        broker: 3,
        block_start: "0",
        block_end: "999",
      });
    } finally {
      await broker.stop();
      await zk.close();
    }
  });
});
