import { afterAll, beforeAll, expect, test } from "bun:test";
import { formatScramCredential, scramCredential } from "../../src/security/scram.ts";
import { ZooKeeperScramCredentialStore } from "../../src/security/scram-credential-store.ts";
import { ZooKeeperClient } from "../../src/zookeeper/zookeeper-client.ts";
import { startZooKeeper, type ZooKeeperServer } from "../support/zookeeper-server.ts";

let server: ZooKeeperServer;
let zk: ZooKeeperClient;

beforeAll(async () => {
  server = await startZooKeeper();
  zk = await ZooKeeperClient.connect(server.connectString, {
    sessionTimeoutMs: 6000,
    connectTimeoutMs: 10_000,
  });
}, 60_000);

afterAll(async () => {
  await zk.close();
  await server.stop();
});

test("SCRAM credentials in ZooKeeper as Kafka keeps them at /config/users/<user>", async () => {
  const store = new ZooKeeperScramCredentialStore(zk);
  const credential = scramCredential("SCRAM-SHA-512", "s3cret", 4096);
  await store.set("alice", "SCRAM-SHA-512", credential);
  const { data } = await zk.getData("/config/users/alice");
  expect(JSON.parse(new TextDecoder().decode(data))).toEqual({
    version: 1,
    config: { "SCRAM-SHA-512": formatScramCredential(credential) },
  });
  // A credential written the way Kafka's kafka-configs.sh writes one is read back.
  const sha256 = scramCredential("SCRAM-SHA-256", "other", 8192);
  const kafkaJson = { version: 1, config: { "SCRAM-SHA-256": formatScramCredential(sha256) } };
  await zk.create("/config/users/bob", new TextEncoder().encode(JSON.stringify(kafkaJson)));
  expect(await store.get("bob", "SCRAM-SHA-256")).toEqual(sha256);
  expect(await store.describe("bob")).toEqual([{ mechanism: "SCRAM-SHA-256", iterations: 8192 }]);
  expect((await store.users()).sort()).toEqual(["alice", "bob"]);
  expect(await store.delete("alice", "SCRAM-SHA-512")).toBe(true);
  expect(await store.get("alice", "SCRAM-SHA-512")).toBeUndefined();
  expect(await zk.getChildren("/config/changes")).not.toHaveLength(0);
}, 30_000);
