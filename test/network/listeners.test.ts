import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { ApiKey } from "../../src/protocol/generated/index.ts";
import { type InProcessBroker, startInProcessBroker } from "../support/broker-harness.ts";
import { requestOnce } from "../support/kafka-client.ts";

// Two PLAINTEXT listeners advertising different names: each client must be told the endpoints
// of the listener it came through, as Kafka's Metadata does (clients behind NAT, split DNS).
describe("several named listeners", () => {
  let broker: InProcessBroker;
  beforeAll(async () => {
    broker = await startInProcessBroker({
      settings: {
        listeners: "PLAINTEXT://127.0.0.1:0,EXTERNAL://127.0.0.1:0",
        "advertised.listeners": "EXTERNAL://external.example:19092",
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,EXTERNAL:PLAINTEXT",
      },
    });
  }, 60_000);
  afterAll(() => broker.stop());

  test("both bind; Metadata, DescribeCluster and FindCoordinator answer per listener", async () => {
    const [internal, external] = broker.broker.listeners;
    expect(internal!.listenerName).toBe("PLAINTEXT");
    expect(external!.listenerName).toBe("EXTERNAL");
    expect(external!.port).not.toBe(internal!.port);
    const viaInternal = await requestOnce(internal!.port, ApiKey.Metadata, 12, { topics: [] });
    expect(viaInternal.brokers).toEqual([
      { nodeId: 0, host: "127.0.0.1", port: internal!.port, rack: null },
    ]);
    const viaExternal = await requestOnce(external!.port, ApiKey.Metadata, 12, { topics: [] });
    expect(viaExternal.brokers).toEqual([
      { nodeId: 0, host: "external.example", port: 19092, rack: null },
    ]);
    const cluster = await requestOnce(external!.port, ApiKey.DescribeCluster, 0, {});
    expect(cluster.brokers.map((b) => `${b.host}:${b.port}`)).toEqual(["external.example:19092"]);
    const coordinator = await requestOnce(external!.port, ApiKey.FindCoordinator, 3, {
      key: "g",
      keyType: 0,
    });
    expect(`${coordinator.host}:${coordinator.port}`).toBe("external.example:19092");
    expect(broker.logger.lines.join("\n")).toMatch(
      /listening on 127\.0\.0\.1:\d+ \(PLAINTEXT\), 127\.0\.0\.1:\d+ \(EXTERNAL\)/,
    );
  });
});
