/**
 * `quill topic|group|cluster` as processes against a real broker started in this process:
 * every subcommand, JSON and table output, and bad input (unknown topic, unreachable broker,
 * malformed format strings, bad flags) ending with one clean message and a documented exit code.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { partitionForKey } from "../../src/client/murmur2.ts";
import {
  type InProcessBroker,
  removeDir,
  startInProcessBroker,
  tempDir,
} from "../support/broker-harness.ts";
import { type Json, quill, quillJson } from "./quill-client.ts";

let broker: InProcessBroker;
let b: string[];
const dir = tempDir("quill-client-");

beforeAll(async () => {
  broker = await startInProcessBroker({ settings: { "num.partitions": "3" } });
  b = ["-b", broker.bootstrap];
}, 60_000);
afterAll(async () => {
  await broker.stop();
  removeDir(dir);
});

describe("quill topic", () => {
  test("create, list, describe, alter and describe configs, add partitions, delete", async () => {
    expect(
      await quillJson(["topic", "create", "t1", "-p", "2", "-c", "retention.ms=60000", ...b]),
    ).toEqual({ topic: "t1", partitions: 2, replicationFactor: 1 });
    const again = await quill(["topic", "create", "t1", ...b]);
    expect(again.code).toBe(3);
    expect(again.stderr).toContain("TOPIC_ALREADY_EXISTS (36)");
    expect(again.stderr).toContain("what to do:");
    const list = await quillJson(["topic", "list", ...b]);
    expect(list).toContainEqual({
      topic: "t1",
      partitions: 2,
      replicationFactor: 1,
      internal: false,
    });
    const described = await quillJson(["topic", "describe", "t1", ...b]);
    expect(
      described.partitions.map((p: Json) => [p.partition, p.leader, p.replicas, p.isr]),
    ).toEqual([
      [0, 0, [0], [0]],
      [1, 0, [0], [0]],
    ]);
    expect(described.partitions[0].logEndOffset).toBe(0);
    expect(described.partitions[0].sizeBytes).toBe(0);
    await quillJson(["topic", "alter-config", "t1", "--set", "cleanup.policy=compact", ...b]);
    const configs = await quillJson(["topic", "describe-config", "t1", ...b]);
    expect(configs).toContainEqual(
      expect.objectContaining({ key: "cleanup.policy", value: "compact", source: "TOPIC" }),
    );
    expect(configs).toContainEqual(
      expect.objectContaining({ key: "retention.ms", value: "60000" }),
    );
    await quillJson(["topic", "add-partitions", "t1", "-p", "4", ...b]);
    expect((await quillJson(["topic", "describe", "t1", ...b])).partitions).toHaveLength(4);
    const table = await quill(["topic", "describe", "t1", ...b]);
    expect(table.stdout).toMatch(
      /PARTITION\s+LEADER\s+EPOCH\s+REPLICAS\s+ISR\s+LOG-START\s+LOG-END/,
    );
    await quillJson(["topic", "delete", "t1", ...b]);
    const gone = await quill(["topic", "describe", "t1", ...b]);
    expect(gone.code).toBe(3);
    expect(gone.stderr).toContain("UNKNOWN_TOPIC_OR_PARTITION");
  }, 60_000);

  test("produce lines with keys, headers and codecs; consume with -f, json, -o, -p, -n", async () => {
    await quillJson(["topic", "create", "t2", "-p", "3", ...b]);
    const input = "k1\tv1\nk2\tv2\nk3\tv3\nk4\tv4\n";
    const produced = await quillJson(
      ["topic", "produce", "t2", "-K", "\\t", "-H", "h=1", "-z", "gzip", ...b],
      input,
    );
    expect(produced).toEqual({ topic: "t2", records: 4 });
    const all = await quill(["topic", "consume", "t2", "-e", "-f", "%k=%s %h p%p\\n", ...b]);
    expect(all.code).toBe(0);
    const lines = all.stdout.trim().split("\n").sort();
    const enc = new TextEncoder();
    expect(lines).toEqual(
      ["k1", "k2", "k3", "k4"].map(
        (k, i) => `${k}=v${i + 1} h=1 p${partitionForKey(enc.encode(k), 3)}`,
      ),
    );
    const file = join(dir, "lines.txt");
    writeFileSync(file, "x\ny\nz\n");
    await quillJson([
      "topic",
      "produce",
      "t2",
      "--file",
      file,
      "-p",
      "1",
      "-a",
      "0",
      "-z",
      "zstd",
      ...b,
    ]);
    await quillJson(["topic", "produce", "t2", "-p", "1", "-a", "1", "--rate", "100", ...b], "w\n");
    const p1 = await quill(["topic", "consume", "t2", "-p", "1", "-o", "-4", "-e", ...b]);
    expect(p1.stdout).toBe("x\ny\nz\nw\n");
    const json = (
      await quill(["topic", "consume", "t2", "-p", "1", "-o", "-1", "-n", "1", "-f", "json", ...b])
    ).stdout.trim();
    expect(JSON.parse(json)).toMatchObject({
      topic: "t2",
      partition: 1,
      key: null,
      value: "w",
      headers: {},
    });
    const future = await quill([
      "topic",
      "consume",
      "t2",
      "-o",
      `@${Date.now() + 3_600_000}`,
      "-e",
      ...b,
    ]);
    expect(future).toEqual({ code: 0, stdout: "", stderr: "" });
    const fromTime = await quill(["topic", "consume", "t2", "-o", "@0", "-e", "-f", "%o\\n", ...b]);
    expect(fromTime.stdout.trim().split("\n")).toHaveLength(8);
  }, 60_000);
});

describe("quill group", () => {
  test("consume with a group commits; describe shows lag and totals; seek; delete", async () => {
    await quillJson(["topic", "create", "t3", "-p", "2", ...b]);
    await quillJson(["topic", "produce", "t3", "-p", "0", ...b], "a\nb\nc\n");
    await quillJson(["topic", "produce", "t3", "-p", "1", ...b], "d\ne\n");
    const first = await quill(["topic", "consume", "t3", "-g", "g3", "-p", "0", "-n", "2", ...b]);
    expect(first.stdout).toBe("a\nb\n");
    const described = await quillJson(["group", "describe", "g3", ...b]);
    expect(described).toMatchObject({ group: "g3", state: "Empty", totalLag: 1 });
    expect(described.partitions).toEqual([
      expect.objectContaining({
        topic: "t3",
        partition: 0,
        currentOffset: 2,
        logEndOffset: 3,
        lag: 1,
      }),
    ]);
    const table = (await quill(["group", "describe", "g3", ...b])).stdout;
    expect(table).toContain("total lag 1");
    expect(table).toMatch(/CURRENT-OFFSET\s+LOG-END-OFFSET\s+LAG/);
    const resumed = await quill(["topic", "consume", "t3", "-g", "g3", "-p", "0", "-e", ...b]);
    expect(resumed.stdout).toBe("c\n");
    expect(await quillJson(["group", "list", ...b])).toContainEqual(
      expect.objectContaining({ group: "g3", state: "Empty" }),
    );
    const dry = await quillJson([
      "group",
      "seek",
      "g3",
      "--to",
      "earliest",
      "-t",
      "t3",
      "--dry-run",
      ...b,
    ]);
    expect(dry.offsets).toEqual([
      { topic: "t3", partition: 0, newOffset: 0 },
      { topic: "t3", partition: 1, newOffset: 0 },
    ]);
    expect((await quillJson(["group", "describe", "g3", ...b])).partitions[0].currentOffset).toBe(
      3,
    );
    await quillJson(["group", "seek", "g3", "--to", "1", "-t", "t3", ...b]);
    const afterSeek = await quillJson(["group", "describe", "g3", ...b]);
    expect(afterSeek.partitions.map((p: Json) => [p.partition, p.currentOffset, p.lag])).toEqual([
      [0, 1, 2],
      [1, 1, 1],
    ]);
    expect(afterSeek.totalLag).toBe(3);
    await quillJson(["group", "delete", "g3", ...b]);
    const gone = await quill(["group", "describe", "g3", ...b]);
    expect(gone.code).toBe(3);
    expect(gone.stderr).toContain("GROUP_ID_NOT_FOUND");
  }, 60_000);
});

describe("quill bench", () => {
  test("produce and consume report records, MB/s and latency percentiles, live and at the end", async () => {
    await quillJson(["topic", "create", "bench", "-p", "3", ...b]);
    const live = await quill([
      "bench",
      "produce",
      "bench",
      "-n",
      "6000",
      "-s",
      "50",
      "--rate",
      "4000",
      "-a",
      "1",
      ...b,
    ]);
    expect(live.code).toBe(0);
    expect(live.stderr).toMatch(
      /^produced \d+ records, \d+ records\/s, [\d.]+ MB\/s, latency p50 /m,
    );
    expect(live.stdout).toMatch(/RECORDS\s+SECONDS\s+RECORDS\/S\s+MB\/S\s+AVG-MS\s+P50-MS/);
    const produced = await quillJson([
      "bench",
      "produce",
      "bench",
      "-n",
      "20000",
      "-z",
      "lz4",
      ...b,
    ]);
    expect(produced.records).toBe(20_000);
    expect(produced.bytes).toBe(20_000 * 100);
    expect(produced.latencyMs.p99).toBeGreaterThanOrEqual(produced.latencyMs.p50);
    const consumed = await quillJson(["bench", "consume", "bench", ...b]);
    expect(consumed.records).toBe(26_000);
    expect(consumed.bytes).toBe(6_000 * 50 + 20_000 * 100);
    expect(consumed.mbPerSec).toBeGreaterThan(0);
    const missing = await quill(["bench", "consume", "nope", ...b]);
    expect(missing.code).toBe(3);
  }, 60_000);
});

describe("quill cluster and connection options", () => {
  test("info, health and config; QUILL_BROKERS and a profile file pick the cluster", async () => {
    const info = await quillJson(["cluster", "info", ...b]);
    expect(info).toMatchObject({
      controller: 0,
      brokers: [{ id: 0, host: "127.0.0.1", port: broker.port }],
    });
    expect(typeof info.clusterId).toBe("string");
    const health = await quillJson(["cluster", "health", ...b]);
    expect(health).toMatchObject({
      healthy: true,
      offlinePartitions: [],
      underReplicatedPartitions: [],
    });
    const config = await quillJson(["cluster", "config", ...b]);
    expect(config.configs).toContainEqual(
      expect.objectContaining({ key: "num.partitions", value: "3" }),
    );
    const byEnv = await quill(["cluster", "info", "--format", "json"], {
      env: { QUILL_BROKERS: broker.bootstrap },
    });
    expect(JSON.parse(byEnv.stdout).clusterId).toBe(info.clusterId);
    const profile = join(dir, "quill.properties");
    writeFileSync(profile, `local.bootstrap.servers=${broker.bootstrap}\nlocal.client.id=tester\n`);
    const byProfile = await quill(["cluster", "info", "--profile", "local", "--format", "json"], {
      env: { QUILL_CONFIG: profile, QUILL_BROKERS: "127.0.0.1:1" },
    });
    expect(byProfile.code).toBe(4);
    const profileOnly = await quill(["cluster", "info", "--profile", "local", "--format", "json"], {
      env: { QUILL_CONFIG: profile },
    });
    expect(JSON.parse(profileOnly.stdout).clusterId).toBe(info.clusterId);
  }, 60_000);

  test("bad input: clean one-line messages and documented exit codes", async () => {
    const cases: [string[], number, string][] = [
      [["topic", "consume", "missing", "-e", ...b], 3, "UNKNOWN_TOPIC_OR_PARTITION (3)"],
      [["topic", "produce", "missing", ...b], 3, "UNKNOWN_TOPIC_OR_PARTITION"],
      [["topic", "list", "-b", "127.0.0.1:1"], 4, "no broker reachable"],
      [
        ["topic", "consume", "x", "-f", "%k %q", ...b],
        2,
        'malformed format string: "%q" at position 3',
      ],
      [["topic", "consume", "x", "-f", "%", ...b], 2, "malformed format string"],
      [["topic", "consume", "x", "-o", "soon", ...b], 2, "-o expects beginning, end"],
      [["topic", "create", "x", "--bogus", ...b], 2, "unknown flag --bogus"],
      [["topic", "create", ...b], 2, "expected TOPIC, got none"],
      [["topic", "frobnicate"], 2, 'unknown subcommand "topic frobnicate"'],
      [["topic", "list", "-b", "nohost:"], 2, "bad broker list"],
      [["topic", "list", "-X", "security.protocol=TLS", ...b], 2, "expected one of PLAINTEXT"],
      [["topic", "list", "-X", "linger=5", ...b], 2, 'unknown client setting "linger"'],
      [["topic", "create", "bad/name", ...b], 3, "INVALID_TOPIC_EXCEPTION"],
      [["group", "seek", "g", ...b], 2, "seek needs --to"],
    ];
    for (const [args, code, message] of cases) {
      const r = await quill(args);
      expect({ args, code: r.code, hasMessage: r.stderr.includes(message) }).toEqual({
        args,
        code,
        hasMessage: true,
      });
      expect(r.stderr).not.toContain("    at ");
    }
  }, 90_000);
});
