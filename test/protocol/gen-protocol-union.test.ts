import { describe, expect, test } from "bun:test";
import type { FieldSpec, MessageSpec } from "../../scripts/gen-protocol.ts";
import { unionSpecs } from "../../scripts/gen-protocol.ts";
import {
  API_SPECS,
  ApiKey,
  decodeRequest,
  encodeRequest,
} from "../../src/protocol/generated/index.ts";
import { Reader } from "../../src/protocol/reader.ts";
import { Writer } from "../../src/protocol/writer.ts";

const field = (name: string, versions: string, extra: Partial<FieldSpec> = {}): FieldSpec => ({
  name,
  type: "int32",
  versions,
  ...extra,
});

function request(validVersions: string, fields: FieldSpec[], extra: Partial<MessageSpec> = {}) {
  const spec: MessageSpec = {
    name: "FooRequest",
    type: "request",
    apiKey: 90,
    validVersions,
    flexibleVersions: "2+",
    fields,
  };
  return { ...spec, ...extra };
}

describe("the union of an older and a newer spec set", () => {
  test("old versions come from the older set, new ones from the newer, fields in wire order", () => {
    const older = request("0-3", [
      field("A", "0+"),
      field("Dropped", "0-1"),
      field("Renamed", "2+"),
      field("B", "0+", { nullableVersions: "1+", type: "string" }),
    ]);
    const newer = request("2-4", [
      field("A", "0+"),
      field("RenamedNow", "2+"),
      field("B", "0-3", { nullableVersions: "1+", type: "string", ignorable: true }),
      field("TopicId", "4+", { type: "uuid" }),
    ]);
    const [foo] = unionSpecs([older], [newer]);
    expect(foo!.validVersions).toBe("0-4");
    expect(foo!.flexibleVersions).toBe("2+");
    expect(foo!.fields).toEqual([
      field("A", "0+"),
      // Only the older set has it, and only below the newer set's first version.
      field("Dropped", "0-1"),
      field("RenamedNow", "2+"),
      field("B", "0-3", { nullableVersions: "1+", type: "string", ignorable: true }),
      field("TopicId", "4+", { type: "uuid" }),
    ]);
  });

  test("what the newer set no longer serves stays; a renamed API key takes the new name", () => {
    const zk = { ...request("0-7", [field("A", "0+")]), name: "LeaderAndIsrRequest", apiKey: 4 };
    const gone = { ...zk, validVersions: "none", fields: [] };
    const oldName = { ...request("0", []), name: "ListClientMetricsResourcesRequest" };
    const newName = { ...request("0-1", []), name: "ListConfigResourcesRequest" };
    const union = unionSpecs([zk, oldName], [gone, newName]);
    expect(union.map((s) => `${s.name} ${s.validVersions}`)).toEqual([
      "LeaderAndIsrRequest 0-7",
      "ListConfigResourcesRequest 0-1",
    ]);
  });

  test("an unstable older version is not kept below the newer set's released ones", () => {
    const older = request("0", [field("A", "0+")], { latestVersionUnstable: true });
    const newer = request("1-2", [field("A", "1+")]);
    expect(unionSpecs([older], [newer])[0]!.validVersions).toBe("1-2");
  });

  test("sets that would leave a hole in a message's versions are refused", () => {
    const older = request("0-1", [field("A", "0+")]);
    const newer = request("3-4", [field("A", "3+")]);
    expect(() => unionSpecs([older], [newer])).toThrow("gap");
    const moved = request("1-4", [field("X", "0+"), field("A", "0+")]);
    const swapped = request("2-4", [field("A", "0+"), field("X", "0+")]);
    expect(() => unionSpecs([moved], [swapped])).toThrow("different order");
  });
});

describe("the committed codecs serve both sets", () => {
  const spec = (key: number) => API_SPECS[key]!;

  test("Produce v2 (gone from Kafka 4) and v13 (topic ids, Kafka 4) both encode and decode", () => {
    expect(spec(ApiKey.Produce)).toMatchObject({ minVersion: 0, latestVersion: 13 });
    const topicId = new Uint8Array(16).fill(7);
    for (const version of [2, 13]) {
      const w = new Writer();
      const body = {
        acks: 1,
        timeoutMs: 5,
        topicData: [{ name: "t", topicId, partitionData: [] }],
      };
      encodeRequest(ApiKey.Produce, version, w, version === 2 ? { ...body, topicData: [] } : body);
      const decoded = decodeRequest(ApiKey.Produce, version, new Reader(w.toBytes()));
      expect(decoded.acks).toBe(1);
      if (version === 13) expect(decoded.topicData[0]).toMatchObject({ name: "", topicId });
    }
  });

  test("the ZooKeeper-mode APIs Kafka 4 removed are still there", () => {
    expect(spec(ApiKey.LeaderAndIsr)).toMatchObject({ minVersion: 0, latestVersion: 7 });
    expect(spec(ApiKey.UpdateMetadata)).toMatchObject({ minVersion: 0, latestVersion: 8 });
    expect(spec(ApiKey.StopReplica)).toMatchObject({ minVersion: 0, latestVersion: 4 });
    expect(spec(ApiKey.ControlledShutdown)).toMatchObject({ minVersion: 0, latestVersion: 3 });
  });
});
