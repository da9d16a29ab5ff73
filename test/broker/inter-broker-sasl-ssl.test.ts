/**
 * Three brokers whose inter-broker listener is SASL_SSL with SCRAM-SHA-512: the replica
 * fetchers, the controller's channels, AlterPartition and the transaction markers all reach the
 * other brokers over TLS as User:broker, the only super user. Clients use a PLAINTEXT listener
 * as User:ANONYMOUS, allowed everything on topics but not ClusterAction, so a replica that
 * reached its leader anonymously could not replicate, and a forged controller request or
 * replica fetch from that client is refused. Sessions last 3 s (connections.max.reauth.ms):
 * the brokers renew them on their connections (KIP-368) instead of being disconnected.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { Kafka, logLevel } from "kafkajs";
import { ErrorCode } from "../../src/protocol/errors.ts";
import { ApiKey } from "../../src/protocol/generated/index.ts";
import { scramCredential } from "../../src/security/scram.ts";
import { ZooKeeperScramCredentialStore } from "../../src/security/scram-credential-store.ts";
import { ZooKeeperClient } from "../../src/zookeeper/zookeeper-client.ts";
import { requestOnce } from "../support/kafka-client.ts";
import { makeCertificates } from "../support/tls-certificates.ts";
import { startZooKeeper, type ZooKeeperServer } from "../support/zookeeper-server.ts";
import {
  type Cluster,
  consistentMetadata,
  createTopic,
  metadata,
  startCluster,
  until,
} from "./cluster-harness.ts";

// Renewal starts at 85-95 % of the lifetime, as Kafka's client: the margin must exceed how late
// a loaded broker reads a request, or a request sent in time arrives after the session ended.
const SESSION_LIFETIME_MS = 3000;
let zkServer: ZooKeeperServer;
let cluster: Cluster;

const ANONYMOUS_ON_TOPICS = {
  version: 1,
  acls: [{ principal: "User:ANONYMOUS", permissionType: "Allow", operation: "All", host: "*" }],
};

beforeAll(async () => {
  const certs = makeCertificates();
  zkServer = await startZooKeeper();
  const connect = zkServer.connectString;
  // The brokers' credential and the clients' ACL exist before any broker starts.
  const zk = await ZooKeeperClient.connect(connect, {
    sessionTimeoutMs: 4_000,
    connectTimeoutMs: 5_000,
  });
  const credential = scramCredential("SCRAM-SHA-512", "broker-secret", 4096);
  await new ZooKeeperScramCredentialStore(zk).set("broker", "SCRAM-SHA-512", credential);
  const acl = new TextEncoder().encode(JSON.stringify(ANONYMOUS_ON_TOPICS));
  await zk.create("/kafka-acl/Topic/*", acl, { createParents: true });
  await zk.close();
  cluster = await startCluster(connect, {
    listeners: "PLAINTEXT://127.0.0.1:0,INTERNAL://127.0.0.1:0",
    "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,INTERNAL:SASL_SSL",
    "inter.broker.listener.name": "INTERNAL",
    "sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-512",
    "listener.name.internal.sasl.enabled.mechanisms": "SCRAM-SHA-512",
    "listener.name.internal.scram-sha-512.sasl.jaas.config":
      "org.apache.kafka.common.security.scram.ScramLoginModule required " +
      'username="broker" password="broker-secret";',
    "listener.name.internal.ssl.keystore.location": certs.serverKeystore,
    "listener.name.internal.ssl.truststore.location": `${certs.dir}/ca.pem`,
    "listener.name.internal.ssl.client.auth": "required",
    "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
    "super.users": "User:broker",
    "connections.max.reauth.ms": String(SESSION_LIFETIME_MS),
  });
  await consistentMetadata(cluster, 3, 20_000);
}, 60_000);

afterAll(async () => {
  await cluster?.close();
  await zkServer?.stop();
});

test("acks=all with min.insync.replicas=3 succeeds: every follower fetches over SASL_SSL", async () => {
  const b1 = cluster.brokers.get(1)!;
  await createTopic(b1, "replicated", 3, [{ name: "min.insync.replicas", value: "3" }]);
  await consistentMetadata(cluster, 3, 20_000);
  const kafka = new Kafka({
    clientId: "inter-broker-sasl-ssl",
    brokers: [b1.bootstrap],
    logLevel: logLevel.NOTHING,
  });
  const producer = kafka.producer();
  await producer.connect();
  try {
    const messages = [0, 1, 2].map((partition) => ({ partition, value: `v${partition}` }));
    const sent = await producer.send({ topic: "replicated", acks: -1, timeout: 15_000, messages });
    expect(sent.map((r) => r.errorCode)).toEqual([0, 0, 0]);
  } finally {
    await producer.disconnect();
  }
  const topic = await until(
    async () => {
      const m = await metadata(b1);
      const t = m.topics.find((x) => x.name === "replicated");
      return t?.partitions.every((p) => p.isrNodes.length === 3) ? t : undefined;
    },
    10_000,
    "a full ISR for every partition",
  );
  expect(topic.partitions).toHaveLength(3);
  // Followers fetch without pause: over two lifetimes each fetcher renews its session.
  await Bun.sleep(2 * SESSION_LIFETIME_MS);
  for (const b of cluster.brokers.values()) {
    expect(b.stderrText).not.toMatch(/authenticating to .* failed|SASL_AUTHENTICATION_FAILED/);
    const expired = b.stderrText.split("\n").filter((l) => l.includes("SASL session expired"));
    expect(expired).toEqual([]);
  }
}, 40_000);

test("a client without ClusterAction is refused a forged LeaderAndIsr and a replica fetch", async () => {
  const port = cluster.brokers.get(2)!.port;
  const leaderAndIsr = await requestOnce(port, ApiKey.LeaderAndIsr, 7, {
    controllerId: 1,
    controllerEpoch: 1_000_000,
    brokerEpoch: -1n,
    topicStates: [],
    liveLeaders: [],
  });
  expect(leaderAndIsr.errorCode).toBe(ErrorCode.CLUSTER_AUTHORIZATION_FAILED);
  const fetch = await requestOnce(port, ApiKey.Fetch, 11, {
    replicaId: 1,
    maxWaitMs: 0,
    minBytes: 0,
    maxBytes: 1 << 20,
    isolationLevel: 0,
    sessionId: 0,
    sessionEpoch: -1,
    topics: [
      {
        topic: "replicated",
        partitions: [
          {
            partition: 0,
            currentLeaderEpoch: -1,
            fetchOffset: 0n,
            lastFetchedEpoch: -1,
            logStartOffset: -1n,
            partitionMaxBytes: 1 << 20,
          },
        ],
      },
    ],
    forgottenTopicsData: [],
    rackId: "",
  });
  expect(fetch.responses[0]!.partitions[0]!.errorCode).toBe(ErrorCode.TOPIC_AUTHORIZATION_FAILED);
});
