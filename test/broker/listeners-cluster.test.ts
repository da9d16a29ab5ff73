/**
 * Two `quill serve --zookeeper` processes, each with a client listener (EXTERNAL, advertised
 * under a name of its own) and the PLAINTEXT inter-broker listener: the registrations carry both
 * endpoints as Kafka's do, and a client that came through EXTERNAL is told every broker's
 * EXTERNAL address, learnt through the controller's UpdateMetadata.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { ApiKey } from "../../src/protocol/generated/index.ts";
import { ZooKeeperClient } from "../../src/zookeeper/zookeeper-client.ts";
import { ChildBroker } from "../support/child-broker.ts";
import { requestOnce } from "../support/kafka-client.ts";
import { startZooKeeper, type ZooKeeperServer } from "../support/zookeeper-server.ts";
import { until } from "./cluster-harness.ts";

let zkServer: ZooKeeperServer;
const brokers: ChildBroker[] = [];

beforeAll(async () => {
  zkServer = await startZooKeeper();
  const connect = `${zkServer.connectString}/listeners`;
  for (const id of [1, 2]) {
    brokers.push(
      await ChildBroker.start({
        settings: {
          "zookeeper.connect": connect,
          "zookeeper.session.timeout.ms": "4000",
          "broker.id": String(id),
          // The first listener is the one the harness reads the port of.
          listeners: "EXTERNAL://127.0.0.1:0,PLAINTEXT://127.0.0.1:0",
          "advertised.listeners": `EXTERNAL://broker${id}.example:1900${id}`,
          "listener.security.protocol.map": "EXTERNAL:PLAINTEXT,PLAINTEXT:PLAINTEXT",
        },
      }),
    );
  }
}, 60_000);

afterAll(async () => {
  await Promise.all(brokers.map((b) => b.remove()));
  await zkServer.stop();
});

test("registrations list every endpoint; Metadata answers with the client's listener", async () => {
  const zk = await ZooKeeperClient.connect(`${zkServer.connectString}/listeners`, {
    sessionTimeoutMs: 4_000,
    connectTimeoutMs: 5_000,
  });
  try {
    const { data } = await zk.getData("/brokers/ids/2");
    const json = JSON.parse(new TextDecoder().decode(data));
    expect(json.endpoints[0]).toBe("EXTERNAL://broker2.example:19002");
    expect(json.endpoints[1]).toMatch(/^PLAINTEXT:\/\/127\.0\.0\.1:\d+$/);
    expect(json.listener_security_protocol_map).toEqual({
      EXTERNAL: "PLAINTEXT",
      PLAINTEXT: "PLAINTEXT",
    });
  } finally {
    await zk.close();
  }
  const brokersSeen = await until(
    async () => {
      const answer = await requestOnce(brokers[0]!.port, ApiKey.Metadata, 12, { topics: null });
      return answer.brokers.length === 2 ? answer.brokers : undefined;
    },
    20_000,
    "broker 1 to know both brokers",
  );
  expect(brokersSeen.map((b) => `${b.nodeId}=${b.host}:${b.port}`).sort()).toEqual([
    "1=broker1.example:19001",
    "2=broker2.example:19002",
  ]);
}, 60_000);
