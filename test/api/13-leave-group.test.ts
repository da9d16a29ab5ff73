// LeaveGroup with real clients: the group is Empty by the time the last member's LeaveGroup is
// answered, so what admin tools and test suites do right after a consumer's close (DeleteGroups,
// DescribeGroups) sees an Empty group, as against Kafka. Only the pipelined test is certain to
// catch a group that empties a moment after the answer; the kafkajs one is the user's view.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { Kafka, logLevel } from "kafkajs";
import { ErrorCode } from "../../src/protocol/errors.ts";
import { ApiKey } from "../../src/protocol/generated/index.ts";
import { KafkaClient, type TestBroker } from "../support/kafka-client.ts";
import { joinAlone, startGroupBroker } from "./group-api-support.ts";

let broker: TestBroker;

beforeAll(async () => {
  broker = await startGroupBroker();
}, 60_000);
afterAll(async () => {
  await broker.stop();
});

test("kafkajs: DeleteGroups right after a consumer's disconnect succeeds", async () => {
  const kafka = new Kafka({
    clientId: "leave-test",
    brokers: [`127.0.0.1:${broker.port}`],
    logLevel: logLevel.NOTHING,
  });
  const admin = kafka.admin();
  await admin.connect();
  try {
    for (const groupId of ["closing-1", "closing-2"]) {
      const consumer = kafka.consumer({ groupId, sessionTimeout: 10_000, maxWaitTimeInMs: 100 });
      await consumer.connect();
      await consumer.subscribe({ topic: "t", fromBeginning: true });
      const joined = new Promise<void>((resolve) => {
        consumer.on(consumer.events.GROUP_JOIN, () => resolve());
      });
      await consumer.run({ eachMessage: async () => {} });
      await joined;
      await consumer.disconnect();
      await admin.deleteGroups([groupId]);
      const { groups } = await admin.describeGroups([groupId]);
      expect(groups[0]!.state).toBe("Dead");
    }
  } finally {
    await admin.disconnect();
  }
}, 60_000);

test("LeaveGroup and DescribeGroups pipelined on one connection: Empty at once", async () => {
  const client = await KafkaClient.connect(broker.port);
  try {
    const { memberId } = await joinAlone(client, "pipelined", 5, 5);
    const left = client.request(ApiKey.LeaveGroup, 4, {
      groupId: "pipelined",
      members: [{ memberId, groupInstanceId: null, reason: "closing" }],
    });
    // Sent before the LeaveGroup response arrives: the broker handles it right after.
    const described = client.request(ApiKey.DescribeGroups, 5, {
      groups: ["pipelined"],
      includeAuthorizedOperations: false,
    });
    const deleted = client.request(ApiKey.DeleteGroups, 2, { groupsNames: ["pipelined"] });
    expect((await left).members[0]!.errorCode).toBe(ErrorCode.NONE);
    expect((await described).groups[0]!.groupState).toBe("Empty");
    expect((await deleted).results[0]!.errorCode).toBe(ErrorCode.NONE);
  } finally {
    client.close();
  }
});
