import { afterAll, beforeAll, expect, test } from "bun:test";
import { ApiKey } from "../../src/protocol/generated/index.ts";
import { requestOnce, startTestBroker, type TestBroker } from "../support/kafka-client.ts";

let b: TestBroker;
beforeAll(async () => {
  b = await startTestBroker();
}, 60_000);
afterAll(async () => {
  await b.stop();
});

// The Java consumer's exclude.internal.topics and tools' --exclude-internal rely on this flag.
test("internal topics are flagged isInternal, other topics are not", async () => {
  await requestOnce(b.port, ApiKey.FindCoordinator, 3, { key: "tx", keyType: 1 });
  await requestOnce(b.port, ApiKey.CreateTopics, 5, {
    topics: [
      {
        name: "plain",
        numPartitions: 1,
        replicationFactor: 1,
        assignments: [],
        configs: [],
      },
    ],
    timeoutMs: 10_000,
    validateOnly: false,
  });
  const res = await requestOnce(b.port, ApiKey.Metadata, 12, {
    topics: null,
    allowAutoTopicCreation: false,
    includeTopicAuthorizedOperations: false,
  });
  const flags = new Map(res.topics.map((t) => [t.name, t.isInternal]));
  expect(flags.get("__transaction_state")).toBe(true);
  expect(flags.get("plain")).toBe(false);
});
