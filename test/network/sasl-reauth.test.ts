// connections.max.reauth.ms (KIP-368) on a SASL_PLAINTEXT listener: SaslAuthenticate tells the
// session lifetime, a connection that lets its session expire is closed at its next request,
// one that re-authenticates (raw requests, and kafkajs, which re-authenticates by itself) keeps
// working, and a re-authentication as another principal is refused and closes the connection.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { Kafka, logLevel } from "kafkajs";
import { ErrorCode } from "../../src/protocol/errors.ts";
import { ApiKey } from "../../src/protocol/generated/index.ts";
import { type InProcessBroker, startInProcessBroker } from "../support/broker-harness.ts";
import { KafkaClient } from "../support/kafka-client.ts";

const LIFETIME_MS = 1500;
let broker: InProcessBroker;
let port: number;

beforeAll(async () => {
  broker = await startInProcessBroker({
    settings: {
      listeners: "SASL_PLAINTEXT://127.0.0.1:0",
      "sasl.enabled.mechanisms": "PLAIN",
      "listener.name.sasl_plaintext.plain.sasl.jaas.config":
        "org.apache.kafka.common.security.plain.PlainLoginModule required " +
        'user_bob="bob-secret" user_eve="eve-secret";',
      "connections.max.reauth.ms": String(LIFETIME_MS),
    },
  });
  port = broker.broker.listeners[0]!.port;
}, 60_000);

afterAll(async () => {
  await broker?.stop();
});

async function authenticate(c: KafkaClient, user: string, password: string) {
  const shake = await c.request(ApiKey.SaslHandshake, 1, { mechanism: "PLAIN" });
  expect(shake.errorCode).toBe(ErrorCode.NONE);
  const token = new TextEncoder().encode(`\u0000${user}\u0000${password}`);
  return c.request(ApiKey.SaslAuthenticate, 2, { authBytes: token });
}

const metadata = (c: KafkaClient) =>
  c.request(ApiKey.Metadata, 9, {
    topics: [],
    allowAutoTopicCreation: false,
    includeClusterAuthorizedOperations: false,
    includeTopicAuthorizedOperations: false,
  });

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

test("the session lifetime is announced; an expired session is closed at its next request", async () => {
  const c = await KafkaClient.connect(port);
  try {
    const auth = await authenticate(c, "bob", "bob-secret");
    expect(auth.errorCode).toBe(ErrorCode.NONE);
    expect(auth.sessionLifetimeMs).toBe(BigInt(LIFETIME_MS));
    expect((await metadata(c)).brokers).toHaveLength(1);
    await sleep(LIFETIME_MS + 300);
    await expect(metadata(c)).rejects.toThrow("connection closed by the broker");
    expect(broker.logger.lines.some((l) => l.includes("SASL session expired"))).toBe(true);
  } finally {
    c.close();
  }
}, 30_000);

test("a connection that re-authenticates in time outlives its first session", async () => {
  const c = await KafkaClient.connect(port);
  try {
    await authenticate(c, "bob", "bob-secret");
    await sleep(LIFETIME_MS / 2);
    const again = await authenticate(c, "bob", "bob-secret");
    expect(again.errorCode).toBe(ErrorCode.NONE);
    expect(again.sessionLifetimeMs).toBe(BigInt(LIFETIME_MS));
    // Past the first session's end, inside the second's.
    await sleep(LIFETIME_MS / 2 + 300);
    expect((await metadata(c)).brokers).toHaveLength(1);
  } finally {
    c.close();
  }
}, 30_000);

test("re-authenticating as another principal fails and closes the connection", async () => {
  const c = await KafkaClient.connect(port);
  try {
    await authenticate(c, "bob", "bob-secret");
    const other = await authenticate(c, "eve", "eve-secret");
    expect(other.errorCode).toBe(ErrorCode.SASL_AUTHENTICATION_FAILED);
    expect(other.errorMessage).toBe(
      "Cannot change principals during re-authentication from User:bob: User:eve",
    );
    await expect(metadata(c)).rejects.toThrow("connection closed by the broker");
  } finally {
    c.close();
  }
}, 30_000);

test("kafkajs re-authenticates on its own and keeps producing past several lifetimes", async () => {
  const kafka = new Kafka({
    clientId: "reauth",
    brokers: [`127.0.0.1:${port}`],
    logLevel: logLevel.NOTHING,
    sasl: { mechanism: "plain", username: "bob", password: "bob-secret" },
    // Re-authenticate when less than this is left of the session.
    reauthenticationThreshold: 700,
  });
  const producer = kafka.producer();
  await producer.connect();
  const expiredBefore = broker.logger.lines.filter((l) => l.includes("SASL session expired"));
  try {
    const endMs = Date.now() + 3 * LIFETIME_MS;
    let sent = 0;
    while (Date.now() < endMs) {
      await producer.send({ topic: "reauth", acks: 1, messages: [{ value: `v${sent}` }] });
      sent++;
      await sleep(200);
    }
    expect(sent).toBeGreaterThan(5);
  } finally {
    await producer.disconnect();
  }
  // No connection of kafkajs outlived its session: it re-authenticated each time.
  const expired = broker.logger.lines.filter((l) => l.includes("SASL session expired"));
  expect(expired).toEqual(expiredBefore);
}, 60_000);

test("the lifetime is per listener and mechanism, as Kafka's listener.name.<l>.<mech>. keys", async () => {
  const jaas =
    "org.apache.kafka.common.security.plain.PlainLoginModule required " + 'user_bob="bob-secret";';
  const own = await startInProcessBroker({
    settings: {
      listeners: "A://127.0.0.1:0,B://127.0.0.1:0,C://127.0.0.1:0",
      "listener.security.protocol.map": "A:SASL_PLAINTEXT,B:SASL_PLAINTEXT,C:SASL_PLAINTEXT",
      "sasl.enabled.mechanisms": "PLAIN",
      "listener.name.a.plain.sasl.jaas.config": jaas,
      "listener.name.b.plain.sasl.jaas.config": jaas,
      "listener.name.c.plain.sasl.jaas.config": jaas,
      "connections.max.reauth.ms": String(LIFETIME_MS),
      "listener.name.a.connections.max.reauth.ms": "9000",
      "listener.name.a.plain.connections.max.reauth.ms": "5000",
      "listener.name.b.connections.max.reauth.ms": "7000",
    },
  });
  try {
    const lifetimes: Record<string, bigint> = {};
    for (const listener of own.broker.listeners) {
      const c = await KafkaClient.connect(listener.port);
      try {
        const auth = await authenticate(c, "bob", "bob-secret");
        expect(auth.errorCode).toBe(ErrorCode.NONE);
        lifetimes[listener.listenerName] = auth.sessionLifetimeMs;
      } finally {
        c.close();
      }
    }
    expect(lifetimes).toEqual({ A: 5000n, B: 7000n, C: BigInt(LIFETIME_MS) });
  } finally {
    await own.stop();
  }
}, 30_000);
