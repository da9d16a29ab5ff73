import { afterAll, beforeAll, expect, test } from "bun:test";
import { Kafka, logLevel } from "kafkajs";
import { ErrorCode } from "../../src/protocol/errors.ts";
import { ApiKey } from "../../src/protocol/generated/index.ts";
import { requestOnce, startTestBroker, type TestBroker } from "../support/kafka-client.ts";

let b: TestBroker;
beforeAll(async () => {
  b = await startTestBroker({ "broker.id": "3", "broker.rack": "r1" });
}, 60_000);
afterAll(async () => {
  await b.stop();
});

const NOT_REQUESTED = -(2 ** 31);

test("kafkajs describeCluster: this broker, the cluster id and the controller", async () => {
  const kafka = new Kafka({ brokers: [`127.0.0.1:${b.port}`], logLevel: logLevel.NOTHING });
  const admin = kafka.admin();
  await admin.connect();
  try {
    const cluster = await admin.describeCluster();
    expect(cluster.brokers).toEqual([{ nodeId: 3, host: "127.0.0.1", port: b.port }]);
    expect(cluster.controller).toBe(3);
    expect(cluster.clusterId).toBe(b.broker.services.clusterId);
  } finally {
    await admin.disconnect();
  }
});

test("v0 (lowest): brokers, cluster id, controller; operations only when asked", async () => {
  const describe = (includeClusterAuthorizedOperations: boolean) =>
    requestOnce(b.port, ApiKey.DescribeCluster, 0, { includeClusterAuthorizedOperations });
  const res = await describe(false);
  expect(res).toMatchObject({
    errorCode: ErrorCode.NONE,
    errorMessage: null,
    clusterId: b.broker.services.clusterId,
    controllerId: 3,
    brokers: [{ brokerId: 3, host: "127.0.0.1", port: b.port, rack: "r1" }],
    clusterAuthorizedOperations: NOT_REQUESTED,
  });
  expect(res.clusterId).toHaveLength(22);
  const asked = await describe(true);
  // CREATE, ALTER, DESCRIBE, CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS, IDEMPOTENT_WRITE.
  expect(asked.clusterAuthorizedOperations).toBe(0b1_1111_1010_0000);
});

test("v1: endpoint type BROKER; controllers or unknown types are refused", async () => {
  const res = await requestOnce(b.port, ApiKey.DescribeCluster, 1, { endpointType: 1 });
  expect(res).toMatchObject({ errorCode: ErrorCode.NONE, endpointType: 1, controllerId: 3 });
  expect(res.brokers.map((x) => x.brokerId)).toEqual([3]);
  const controllers = await requestOnce(b.port, ApiKey.DescribeCluster, 1, { endpointType: 2 });
  expect(controllers.errorCode).toBe(ErrorCode.MISMATCHED_ENDPOINT_TYPE);
  expect(controllers.brokers).toEqual([]);
  const unknown = await requestOnce(b.port, ApiKey.DescribeCluster, 1, { endpointType: 9 });
  expect(unknown).toMatchObject({
    errorCode: ErrorCode.UNSUPPORTED_ENDPOINT_TYPE,
    errorMessage: "Unsupported endpoint type 9",
  });
});

test("ApiVersions advertises exactly the admin ranges", async () => {
  const res = await requestOnce(b.port, ApiKey.ApiVersions, 3, {
    clientSoftwareName: "t",
    clientSoftwareVersion: "1",
  });
  const ranges = Object.fromEntries(
    res.apiKeys.map((k) => [k.apiKey, [k.minVersion, k.maxVersion]]),
  );
  expect(ranges).toMatchObject({
    19: [2, 7],
    20: [1, 6],
    32: [1, 4],
    33: [0, 2],
    37: [0, 3],
    44: [0, 1],
    60: [0, 2],
  });
});
