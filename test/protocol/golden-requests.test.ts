/**
 * Request bytes captured from real clients (scripts/capture-requests.ts: kcat and
 * confluent-kafka-python on librdkafka 2.0.2, kafkajs 2.2.4) decode to what the clients were
 * asked to send and re-encode to the same bytes.
 */
import { describe, expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import {
  API_SPECS,
  decodeRequest,
  decodeRequestHeader,
  encodeRequest,
  encodeRequestHeader,
} from "../../src/protocol/generated/index.ts";
import { Reader } from "../../src/protocol/reader.ts";
import { Writer } from "../../src/protocol/writer.ts";

const FIXTURES = join(import.meta.dir, "../fixtures");
const kebab = (name: string) => name.replace(/([a-z0-9])([A-Z])/g, "$1-$2").toLowerCase();
const text = (b: unknown) => new TextDecoder().decode(b as Uint8Array);

interface Fixture {
  path: string;
  apiKey: number;
  version: number;
  client: string;
  bytes: Uint8Array;
}

function fixtures(): Fixture[] {
  const out: Fixture[] = [];
  for (const api of API_SPECS) {
    const dir = join(FIXTURES, kebab(api.name));
    let files: string[];
    try {
      files = readdirSync(dir);
    } catch {
      continue;
    }
    for (const f of files) {
      const m = /^v(\d+)_request\.([a-z]+)\.hex$/.exec(f);
      if (!m) continue;
      const bytes = new Uint8Array(Buffer.from(readFileSync(join(dir, f), "utf8").trim(), "hex"));
      out.push({
        path: `${kebab(api.name)}/${f}`,
        apiKey: api.apiKey,
        version: Number(m[1]),
        client: m[2]!,
        bytes,
      });
    }
  }
  return out;
}

function decodeFixture(path: string) {
  const f = ALL.find((x) => x.path === path);
  if (f === undefined) throw new Error(`missing fixture ${path}`);
  const r = new Reader(f.bytes);
  const header = decodeRequestHeader(r);
  return {
    header,
    body: decodeRequest(f.apiKey, f.version, r) as unknown as Record<string, unknown>,
  };
}

const ALL = fixtures();

describe("golden requests from real clients", () => {
  test("fixtures from all three clients are present", () => {
    expect(ALL.length).toBeGreaterThanOrEqual(28);
    expect(new Set(ALL.map((f) => f.client))).toEqual(new Set(["kcat", "kafkajs", "librdkafka"]));
  });

  for (const f of ALL) {
    test(`${f.path} decodes whole and re-encodes to the same bytes`, () => {
      const r = new Reader(f.bytes);
      const header = decodeRequestHeader(r);
      expect(header.requestApiKey).toBe(f.apiKey);
      expect(header.requestApiVersion).toBe(f.version);
      const body = decodeRequest(f.apiKey, f.version, r);
      expect(r.remaining()).toBe(0);
      const w = new Writer();
      encodeRequestHeader(w, header);
      encodeRequest(f.apiKey, f.version, w, body);
      expect(Buffer.from(w.toBytes()).toString("hex")).toBe(Buffer.from(f.bytes).toString("hex"));
    });
  }

  test("ApiVersions v3 (flexible, header v2) from librdkafka", () => {
    const { header, body } = decodeFixture("api-versions/v3_request.kcat.hex");
    expect(header).toEqual({
      requestApiKey: 18,
      requestApiVersion: 3,
      correlationId: 1,
      clientId: "rdkafka",
    });
    expect(body).toEqual({
      clientSoftwareName: "librdkafka",
      clientSoftwareVersion: "2.0.2",
      clusterId: null,
      nodeId: -1,
    });
    const python = decodeFixture("api-versions/v3_request.librdkafka.hex");
    expect(python.body).toEqual({
      clientSoftwareName: "confluent-kafka-python",
      clientSoftwareVersion: "1.7.0-rdkafka-2.0.2",
      clusterId: null,
      nodeId: -1,
    });
  });

  test("Metadata: kcat -L asks for all topics, kafkajs for the one it produces to", () => {
    expect(decodeFixture("metadata/v4_request.kcat.hex").body).toMatchObject({
      topics: [],
      allowAutoTopicCreation: false,
    });
    const kafkajs = decodeFixture("metadata/v6_request.kafkajs.hex");
    expect(kafkajs.header.clientId).toBe("quill-golden");
    expect(kafkajs.body).toMatchObject({ topics: [{ name: "golden" }] });
  });

  test("Produce v7 carries the records as a view of a magic v2 batch", () => {
    for (const path of ["produce/v7_request.kcat.hex", "produce/v7_request.kafkajs.hex"]) {
      const { body } = decodeFixture(path);
      const { acks, timeoutMs, transactionalId, topicData } = body as {
        acks: number;
        timeoutMs: number;
        transactionalId: string | null;
        topicData: { name: string; partitionData: { index: number; records: Uint8Array }[] }[];
      };
      expect({ acks, timeoutMs, transactionalId }).toEqual({
        acks: -1,
        timeoutMs: 30000,
        transactionalId: null,
      });
      expect(topicData[0]!.name).toBe("golden");
      const records = topicData[0]!.partitionData[0]!.records;
      expect(records[16]).toBe(2); // The magic byte of a v2 batch.
      expect(text(records)).toContain("k1\nhello");
    }
  });

  test("kafkajs record headers survive in the batch", () => {
    const { body } = decodeFixture("produce/v7_request.kafkajs.hex");
    const records = (body as { topicData: { partitionData: { records: Uint8Array }[] }[] })
      .topicData[0]!.partitionData[0]!.records;
    // Record header h=v: varint key length 1, "h", varint value length 1, "v".
    expect(Buffer.from(records.subarray(-4)).toString("hex")).toBe("02680276");
  });

  test("Fetch v11 from kcat: read-committed, from offset 0 of golden", () => {
    const { body } = decodeFixture("fetch/v11_request.kcat.hex");
    expect(body).toMatchObject({
      replicaId: -1,
      maxWaitMs: 500,
      minBytes: 1,
      isolationLevel: 1,
      sessionId: 0,
      sessionEpoch: -1,
      topics: [{ topic: "golden", partitions: [{ partition: 0, fetchOffset: 0n }] }],
    });
  });

  test("ListOffsets: kcat asks for the earliest offset, kafkajs for the latest", () => {
    expect(decodeFixture("list-offsets/v2_request.kcat.hex").body).toMatchObject({
      topics: [{ name: "golden", partitions: [{ partitionIndex: 0, timestamp: -2n }] }],
    });
    expect(decodeFixture("list-offsets/v3_request.kafkajs.hex").body).toMatchObject({
      topics: [{ name: "golden", partitions: [{ partitionIndex: 0, timestamp: -1n }] }],
    });
  });

  test("group membership: FindCoordinator, JoinGroup, SyncGroup, Heartbeat, LeaveGroup", () => {
    expect(decodeFixture("find-coordinator/v2_request.kcat.hex").body).toMatchObject({
      key: "golden-group",
      keyType: 0,
    });
    expect(decodeFixture("join-group/v5_request.kcat.hex").body).toMatchObject({
      groupId: "golden-group",
      memberId: "",
      protocolType: "consumer",
      protocols: [{ name: "range" }, { name: "roundrobin" }],
    });
    expect(decodeFixture("join-group/v5_request.kafkajs.hex").body).toMatchObject({
      protocols: [{ name: "RoundRobinAssigner" }],
    });
    expect(decodeFixture("sync-group/v3_request.kafkajs.hex").body).toMatchObject({
      generationId: 1,
      memberId: "member-1",
      assignments: [{ memberId: "member-1" }],
    });
    expect(decodeFixture("heartbeat/v3_request.kcat.hex").body).toMatchObject({
      groupId: "golden-group",
      generationId: 1,
      memberId: "member-1",
    });
    expect(decodeFixture("leave-group/v3_request.kafkajs.hex").body).toMatchObject({
      groupId: "golden-group",
      members: [{ memberId: "member-1" }],
    });
    expect(decodeFixture("offset-fetch/v4_request.kafkajs.hex").body).toMatchObject({
      groupId: "golden-group",
      topics: [{ name: "golden", partitionIndexes: [0] }],
    });
  });

  test("admin requests from kafkajs and librdkafka", () => {
    expect(decodeFixture("create-topics/v3_request.kafkajs.hex").body).toMatchObject({
      topics: [{ name: "created", numPartitions: 3, replicationFactor: -1 }],
    });
    expect(decodeFixture("create-topics/v4_request.librdkafka.hex").body).toMatchObject({
      topics: [{ name: "created", numPartitions: 3, replicationFactor: 1 }],
    });
    expect(decodeFixture("create-partitions/v0_request.librdkafka.hex").body).toMatchObject({
      topics: [{ name: "created", count: 6, assignments: null }],
    });
    expect(decodeFixture("delete-topics/v1_request.librdkafka.hex").body).toMatchObject({
      topicNames: ["created"],
    });
    expect(decodeFixture("describe-configs/v1_request.librdkafka.hex").body).toMatchObject({
      resources: [{ resourceType: 2, resourceName: "golden", configurationKeys: null }],
    });
  });
});
