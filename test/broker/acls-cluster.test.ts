/**
 * ACLs on three brokers with a real ZooKeeper: an ACL created through one broker's SASL
 * listener takes effect on every broker (the partitions' leaders are spread over all three), and
 * its deletion through another broker too, through Kafka's /kafka-acl znodes and change notices.
 * Brokers reach each other as User:ANONYMOUS on the PLAINTEXT inter-broker listener, listed in
 * super.users as Kafka's docs advise for such a listener.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import {
  AclOperationTypes,
  AclPermissionTypes,
  AclResourceTypes,
  Kafka,
  logLevel,
  ResourcePatternTypes,
} from "kafkajs";
import type { ChildBroker } from "../support/child-broker.ts";
import { waitUntil } from "../support/wait-until.ts";
import { startZooKeeper, type ZooKeeperServer } from "../support/zookeeper-server.ts";
import { type Cluster, consistentMetadata, startCluster } from "./cluster-harness.ts";

let zkServer: ZooKeeperServer;
let cluster: Cluster;

const saslPort = (b: ChildBroker) => {
  const match = b.stderrText.match(/127\.0\.0\.1:(\d+) \(SASL_PLAINTEXT\)/);
  if (match === null) throw new Error("no SASL_PLAINTEXT listener in the broker's log");
  return Number(match[1]);
};

const kafkaAs = (username: string, broker: number) =>
  new Kafka({
    clientId: `acl-cluster-${username}`,
    brokers: [`127.0.0.1:${saslPort(cluster.brokers.get(broker)!)}`],
    logLevel: logLevel.NOTHING,
    sasl: { mechanism: "plain", username, password: `${username}-secret` },
    retry: { retries: 2, initialRetryTime: 100 },
  });

beforeAll(async () => {
  zkServer = await startZooKeeper();
  cluster = await startCluster(`${zkServer.connectString}/acls`, {
    listeners: "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
    "sasl.enabled.mechanisms": "PLAIN",
    "listener.name.sasl_plaintext.plain.sasl.jaas.config":
      "org.apache.kafka.common.security.plain.PlainLoginModule required " +
      'user_admin="admin-secret" user_alice="alice-secret";',
    "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
    "super.users": "User:ANONYMOUS;User:admin",
  });
  await consistentMetadata(cluster, 3);
}, 120_000);

afterAll(async () => {
  await cluster?.close();
  await zkServer?.stop();
});

/** Sends one record to each of the topic's three partitions as alice through broker 3. */
async function aliceProducesEverywhere(): Promise<boolean> {
  const producer = kafkaAs("alice", 3).producer();
  try {
    await producer.connect();
    const messages = [0, 1, 2].map((partition) => ({ partition, value: `p${partition}` }));
    await producer.send({ topic: "shared", acks: -1, messages });
    return true;
  } catch {
    return false;
  } finally {
    await producer.disconnect().catch(() => {});
  }
}

const aliceWrites = [AclOperationTypes.WRITE, AclOperationTypes.DESCRIBE].map((operation) => ({
  resourceType: AclResourceTypes.TOPIC,
  resourceName: "shared",
  resourcePatternType: ResourcePatternTypes.LITERAL,
  principal: "User:alice",
  host: "*",
  operation,
  permissionType: AclPermissionTypes.ALLOW,
}));

test("an ACL added through one broker takes effect on the others, and so does its removal", async () => {
  const admin1 = kafkaAs("admin", 1).admin();
  await admin1.connect();
  await admin1.createTopics({
    topics: [{ topic: "shared", numPartitions: 3, replicationFactor: 3 }],
    waitForLeaders: true,
  });
  const leaders = new Set(
    (await admin1.fetchTopicMetadata({ topics: ["shared"] })).topics[0]!.partitions.map(
      (p) => p.leader,
    ),
  );
  expect(leaders.size).toBe(3); // every broker leads a partition alice must write to
  expect(await aliceProducesEverywhere()).toBe(false);
  await admin1.createAcls({ acl: aliceWrites });
  await admin1.disconnect();
  await waitUntil(aliceProducesEverywhere, 20_000, "alice's WRITE on every broker", 250);
  const admin2 = kafkaAs("admin", 2).admin();
  await admin2.connect();
  const described = await admin2.describeAcls({
    resourceType: AclResourceTypes.TOPIC,
    resourceName: "shared",
    resourcePatternType: ResourcePatternTypes.LITERAL,
    operation: AclOperationTypes.ANY,
    permissionType: AclPermissionTypes.ANY,
  });
  expect(described.resources[0]!.acls).toHaveLength(2);
  await admin2.deleteAcls({
    filters: [
      {
        resourceType: AclResourceTypes.TOPIC,
        resourceName: "shared",
        resourcePatternType: ResourcePatternTypes.LITERAL,
        operation: AclOperationTypes.WRITE,
        permissionType: AclPermissionTypes.ALLOW,
      },
    ],
  });
  await admin2.disconnect();
  const refused = async () => !(await aliceProducesEverywhere());
  await waitUntil(refused, 20_000, "the removal on every broker", 250);
}, 120_000);
