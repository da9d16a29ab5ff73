/**
 * Kafka's znode JSON, byte for byte where Kafka's own examples fix it, and the decoders'
 * tolerance of what older Kafka versions and tools wrote.
 */
import { describe, expect, test } from "bun:test";
import {
  brokerIdPath,
  decodeBrokerRegistration,
  decodeClusterId,
  decodePartitionState,
  decodeTopicAssignment,
  decodeTopicConfig,
  deleteTopicPath,
  encodeBrokerRegistration,
  encodeClusterId,
  encodePartitionState,
  encodeTopicAssignment,
  encodeTopicConfig,
  isLegalTopicName,
  MalformedZnodeError,
  partitionStatePath,
  topicConfigPath,
  topicIdFromBase64,
  topicIdToBase64,
  topicPath,
} from "../../src/metadata/kafka-znodes.ts";

const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes);
const bytes = (s: string) => new TextEncoder().encode(s);

describe("paths", () => {
  test("follow Kafka's ZkData", () => {
    expect(brokerIdPath(3)).toBe("/brokers/ids/3");
    expect(topicPath("orders")).toBe("/brokers/topics/orders");
    expect(partitionStatePath("orders", 7)).toBe("/brokers/topics/orders/partitions/7/state");
    expect(topicConfigPath("orders")).toBe("/config/topics/orders");
    expect(deleteTopicPath("orders")).toBe("/admin/delete_topics/orders");
  });

  test("refuse names Kafka would refuse, which could also escape the path", () => {
    expect(isLegalTopicName("a.b_c-D9")).toBe(true);
    for (const bad of ["", ".", "..", "a/b", "a b", "x".repeat(250)]) {
      expect(isLegalTopicName(bad)).toBe(false);
    }
    expect(() => topicPath("../ids")).toThrow("not a legal Kafka name");
  });
});

describe("/cluster/id", () => {
  test("holds the version as a string, as Kafka writes it", () => {
    expect(text(encodeClusterId("1N7JbZwjS-aW9JCXTZUbGQ"))).toBe(
      '{"version":"1","id":"1N7JbZwjS-aW9JCXTZUbGQ"}',
    );
    expect(decodeClusterId(bytes('{"version":"1","id":"abc"}'))).toBe("abc");
    expect(() => decodeClusterId(bytes('{"version":"1"}'))).toThrow(MalformedZnodeError);
  });
});

describe("/brokers/ids/<id>", () => {
  test("version 5 with Kafka's keys, the timestamp a decimal string, rack only when set", () => {
    const info = {
      brokerId: 2,
      host: "10.0.0.5",
      port: 9093,
      rack: null,
      timestampMs: 1_700_000_000_123,
    };
    expect(JSON.parse(text(encodeBrokerRegistration(info)))).toEqual({
      features: {},
      listener_security_protocol_map: { PLAINTEXT: "PLAINTEXT" },
      endpoints: ["PLAINTEXT://10.0.0.5:9093"],
      jmx_port: -1,
      port: 9093,
      host: "10.0.0.5",
      version: 5,
      timestamp: "1700000000123",
    });
    const racked = JSON.parse(text(encodeBrokerRegistration({ ...info, rack: "eu-1a" })));
    expect(racked.rack).toBe("eu-1a");
    const plaintext = {
      listenerName: "PLAINTEXT",
      host: "10.0.0.5",
      port: 9093,
      securityProtocol: "PLAINTEXT" as const,
    };
    expect(
      decodeBrokerRegistration(2, encodeBrokerRegistration({ ...info, rack: "eu-1a" })),
    ).toEqual({ ...info, rack: "eu-1a", endpoints: [plaintext] });
  });

  test("reads a version 4 registration written by Kafka 2.x", () => {
    const v4 =
      '{"listener_security_protocol_map":{"PLAINTEXT":"PLAINTEXT"},' +
      '"endpoints":["PLAINTEXT://10.9.167.48:9092"],"jmx_port":9999,"host":"10.9.167.48",' +
      '"timestamp":"1543300074836","port":9092,"version":4}';
    expect(decodeBrokerRegistration(1, bytes(v4))).toEqual({
      brokerId: 1,
      host: "10.9.167.48",
      port: 9092,
      rack: null,
      timestampMs: 1543300074836,
      endpoints: [
        {
          listenerName: "PLAINTEXT",
          host: "10.9.167.48",
          port: 9092,
          securityProtocol: "PLAINTEXT",
        },
      ],
    });
  });

  test("every listener is an endpoint with its protocol; PLAINTEXT is the inter-broker one", () => {
    const endpoints = [
      { listenerName: "SSL", host: "b1.example", port: 9093, securityProtocol: "SSL" as const },
      {
        listenerName: "PLAINTEXT",
        host: "10.0.0.5",
        port: 9092,
        securityProtocol: "PLAINTEXT" as const,
      },
      { listenerName: "CLIENTS", host: "::1", port: 9094, securityProtocol: "SASL_SSL" as const },
    ];
    const info = {
      brokerId: 3,
      host: "10.0.0.5",
      port: 9092,
      endpoints,
      rack: null,
      timestampMs: 5,
    };
    const json = JSON.parse(text(encodeBrokerRegistration(info)));
    expect(json.endpoints).toEqual([
      "SSL://b1.example:9093",
      "PLAINTEXT://10.0.0.5:9092",
      "CLIENTS://[::1]:9094",
    ]);
    expect(json.listener_security_protocol_map).toEqual({
      SSL: "SSL",
      PLAINTEXT: "PLAINTEXT",
      CLIENTS: "SASL_SSL",
    });
    expect([json.host, json.port]).toEqual(["10.0.0.5", 9092]);
    expect(decodeBrokerRegistration(3, encodeBrokerRegistration(info))).toEqual(info);
  });

  test("falls back to the first endpoint when host and port are unset (non-PLAINTEXT)", () => {
    const json =
      '{"version":5,"host":null,"port":-1,"jmx_port":-1,' +
      '"endpoints":["INTERNAL://[::1]:19092"],"timestamp":"1"}';
    expect(decodeBrokerRegistration(4, bytes(json))).toMatchObject({ host: "::1", port: 19092 });
    const noEndpoint = '{"version":5,"host":null,"port":-1,"endpoints":[]}';
    expect(() => decodeBrokerRegistration(4, bytes(noEndpoint))).toThrow("/brokers/ids/4");
  });
});

describe("/brokers/topics/<topic>", () => {
  const idHex = "15da5eca914f99b99c0517fce58c6aa8";

  test("version 3 with the topic id in Kafka's base64url form", () => {
    const topicIdBase64 = topicIdToBase64(idHex);
    expect(topicIdBase64).toBe("FdpeypFPmbmcBRf85YxqqA");
    expect(topicIdFromBase64(topicIdBase64)).toBe(idHex);
    const data = encodeTopicAssignment({
      topicIdBase64,
      assignment: [
        [1, 2],
        [2, 1],
      ],
    });
    expect(text(data)).toBe(
      '{"partitions":{"0":[1,2],"1":[2,1]},"adding_replicas":{},' +
        '"removing_replicas":{},"version":3,"topic_id":"FdpeypFPmbmcBRf85YxqqA"}',
    );
    expect(decodeTopicAssignment("t", data)).toEqual({
      topicIdBase64,
      assignment: [
        [1, 2],
        [2, 1],
      ],
    });
  });

  test("reads a version 1 znode without a topic id (older Kafka, hand-written)", () => {
    const v1 = '{"version":1,"partitions":{"1":[0],"0":[0]}}';
    expect(decodeTopicAssignment("t", bytes(v1))).toEqual({
      topicIdBase64: null,
      assignment: [[0], [0]],
    });
  });

  test("refuses gaps, empty replica lists and bad ids, naming the znode", () => {
    const cases = [
      '{"version":3,"partitions":{"0":[0],"2":[0]}}',
      '{"version":3,"partitions":{"0":[]}}',
      '{"version":3,"partitions":{}}',
      '{"version":3,"partitions":{"0":[0]},"topic_id":"short"}',
      '{"version":3,"partitions":{"x":[0]}}',
      "not json",
    ];
    for (const json of cases) {
      expect(() => decodeTopicAssignment("t", bytes(json))).toThrow(
        "malformed znode /brokers/topics/t",
      );
    }
    expect(topicIdFromBase64("AAAA")).toBeNull();
  });
});

describe("partition state and topic config", () => {
  test("partition state is Kafka's version 1 JSON", () => {
    const state = { leader: 0, leaderEpoch: 0, isr: [0], controllerEpoch: 1 };
    const data = encodePartitionState(state);
    expect(text(data)).toBe(
      '{"controller_epoch":1,"leader":0,"version":1,"leader_epoch":0,"isr":[0]}',
    );
    expect(decodePartitionState("/p", data)).toEqual(state);
  });

  test("a leader outside its ISR is a bug, not a state to write", () => {
    expect(() =>
      encodePartitionState({ leader: 2, leaderEpoch: 0, isr: [0], controllerEpoch: 1 }),
    ).toThrow("must be in the ISR");
  });

  test("topic config values are strings; an empty znode means no overrides", () => {
    const data = encodeTopicConfig({ "retention.ms": "1000", "cleanup.policy": "compact" });
    expect(text(data)).toBe(
      '{"version":1,"config":{"retention.ms":"1000","cleanup.policy":"compact"}}',
    );
    expect(decodeTopicConfig("t", data)).toEqual({
      "retention.ms": "1000",
      "cleanup.policy": "compact",
    });
    expect(decodeTopicConfig("t", new Uint8Array(0))).toEqual({});
    expect(() =>
      decodeTopicConfig("t", bytes('{"version":1,"config":{"retention.ms":1000}}')),
    ).toThrow("malformed znode /config/topics/t");
  });
});
