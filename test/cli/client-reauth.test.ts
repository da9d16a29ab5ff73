/**
 * The `quill` client renews its SASL session on the same connection before the broker's
 * connections.max.reauth.ms ends it (KIP-368). A broker with a 2 s session lifetime: a CLI
 * producer fed one line every 150 ms and a CLI group consumer both run for about four
 * lifetimes; neither is disconnected (the broker logs "SASL session expired" when it closes a
 * connection that did not renew), every record arrives once and in order, and the broker
 * counts the renewals' handshakes. Without renewal each process loses its connection at its
 * first request after two seconds.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { join } from "node:path";
import {
  type InProcessBroker,
  REPO_ROOT,
  removeDir,
  startInProcessBroker,
} from "../support/broker-harness.ts";
import { waitUntil } from "../support/wait-until.ts";
import { quill } from "./quill-client.ts";

// Renewal starts at 85-95 % of the lifetime, as Kafka's client: the margin must exceed how late
// a loaded broker reads a request, or a request sent in time arrives after the session ended.
const LIFETIME_MS = 2000;
const RECORDS = 56;
const LINE_EVERY_MS = 150;
let broker: InProcessBroker;
let b: string[];

beforeAll(async () => {
  broker = await startInProcessBroker({
    settings: {
      listeners: "SASL_PLAINTEXT://127.0.0.1:0",
      "admin.listeners": "127.0.0.1:0",
      "sasl.enabled.mechanisms": "PLAIN",
      "listener.name.sasl_plaintext.plain.sasl.jaas.config":
        "org.apache.kafka.common.security.plain.PlainLoginModule required " +
        'user_carol="carol-secret";',
      "connections.max.reauth.ms": String(LIFETIME_MS),
    },
  });
  b = [
    ...["-b", broker.bootstrap, "-X", "security.protocol=SASL_PLAINTEXT"],
    ...[
      "-X",
      "sasl.mechanism=PLAIN",
      "-X",
      "sasl.username=carol",
      "-X",
      "sasl.password=carol-secret",
    ],
  ];
  const created = await quill(["topic", "create", "renewed", "-p", "2", ...b]);
  expect(created).toMatchObject({ code: 0 });
}, 60_000);
afterAll(async () => {
  await broker?.stop();
  if (broker !== undefined) removeDir(broker.dataDir);
});

const spawnQuill = (args: string[], stdin: "pipe" | "ignore") =>
  Bun.spawn([process.execPath, join(REPO_ROOT, "src", "main.ts"), ...args], {
    stdin,
    stdout: "pipe",
    stderr: "pipe",
  });

/** The sum of the broker's /metrics samples whose name and labels start with `prefix`. */
async function metric(prefix: string): Promise<number> {
  const admin = `http://127.0.0.1:${broker.broker.adminListeners[0]!.port}`;
  const text = await (await fetch(`${admin}/metrics`)).text();
  let total = 0;
  for (const line of text.split("\n")) {
    if (line.startsWith(prefix)) total += Number(line.slice(line.lastIndexOf(" ") + 1));
  }
  return total;
}

const saslHandshakes = () => metric('quill_requests_total{api="SaslHandshake"');

test("a long produce and group consume outlive many SASL sessions without a disconnect", async () => {
  const before = await saslHandshakes();
  const consume = ["topic", "consume", "renewed", "-g", "renewers", "-n", String(RECORDS)];
  const consumer = spawnQuill([...consume, "-f", "%s\\n", ...b], "ignore");
  // The lifetimes are counted from the consumer's joining (a process takes seconds to start
  // on a loaded machine).
  const members = () => metric('quill_consumer_group_members{group="renewers"');
  await waitUntil(async () => (await members()) > 0, 60_000, "the consumer joined", 100);
  const startedMs = Date.now();
  const producer = spawnQuill(["topic", "produce", "renewed", "-K", ":", ...b], "pipe");
  for (let i = 0; i < RECORDS; i++) {
    producer.stdin!.write(`k${i % 4}:v${i}\n`);
    producer.stdin!.flush();
    await Bun.sleep(LINE_EVERY_MS);
  }
  producer.stdin!.end();
  const [produced, producerErr] = await Promise.all([
    producer.exited,
    new Response(producer.stderr).text(),
  ]);
  expect({ produced, producerErr }).toMatchObject({ produced: 0 });
  const [consumed, out, consumerErr] = await Promise.all([
    consumer.exited,
    new Response(consumer.stdout).text(),
    new Response(consumer.stderr).text(),
  ]);
  expect({ consumed, consumerErr }).toMatchObject({ consumed: 0 });
  expect(Date.now() - startedMs).toBeGreaterThan(4 * LIFETIME_MS);
  const values = out.trimEnd().split("\n");
  expect([...values].sort()).toEqual(Array.from({ length: RECORDS }, (_, i) => `v${i}`).sort());
  // Keys k0..k3 each stay on one partition: their values arrive in production order.
  for (const key of [0, 1, 2, 3]) {
    const ofKey = values.filter((v) => Number(v.slice(1)) % 4 === key);
    expect(ofKey).toEqual([...ofKey].sort((x, y) => Number(x.slice(1)) - Number(y.slice(1))));
  }
  expect(broker.logger.lines.filter((l) => l.includes("SASL session expired"))).toEqual([]);
  // The consumer's fetch connection alone renews about every 1.8 s for over 8 s.
  expect((await saslHandshakes()) - before).toBeGreaterThanOrEqual(7);
}, 120_000);
