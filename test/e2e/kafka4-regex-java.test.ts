// KIP-848 regex subscriptions with the Kafka 4.4 Java client (subscribe(SubscriptionPattern),
// resolved by the coordinator): a topic created after the subscription is picked up and read, a
// deleted one is revoked, and ConsumerGroupDescribe shows the member's regex.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { ErrorCode } from "../../src/protocol/errors.ts";
import { ApiKey } from "../../src/protocol/generated/index.ts";
import { type InProcessBroker, startInProcessBroker } from "../support/broker-harness.ts";
import { ensureJava4Built, Java4Process } from "../support/java4-client.ts";
import { KafkaClient } from "../support/kafka-client.ts";

let broker: InProcessBroker;

beforeAll(async () => {
  ensureJava4Built("RegexSubscription");
  broker = await startInProcessBroker({
    settings: { "group.consumer.heartbeat.interval.ms": "300" },
  });
}, 300_000);

afterAll(async () => {
  await broker?.stop();
});

test("a regex subscription picks up a topic created later and gives up a deleted one", async () => {
  const run = new Java4Process("RegexSubscription", [broker.bootstrap, "rx", "g-regex"]);
  await run.line("subscribed ", 60_000).catch((e) => {
    console.log(run.lines.join("\n"), run.stderr);
    throw e;
  });
  const client = await KafkaClient.connect(broker.port);
  try {
    const described = await client.request(ApiKey.ConsumerGroupDescribe, 1, {
      groupIds: ["g-regex"],
      includeAuthorizedOperations: false,
    });
    const group = described.groups[0]!;
    expect(group.errorCode).toBe(ErrorCode.NONE);
    expect(group.members.map((m) => m.subscribedTopicRegex)).toEqual(["rx-.*"]);
  } finally {
    client.close();
  }
  const code = await run.exited;
  if (code !== 0) console.log(run.lines.join("\n"), run.stderr);
  expect(code).toBe(0);
  expect(run.lines.at(-1)).toBe("OK");
  expect(run.lines.find((l) => l.startsWith("assignment "))).toBe("assignment [rx-b-0]");
}, 120_000);
