/**
 * `quill topic consume -g` as a real group member: two CLI consumers share a topic's
 * partitions by the range assignor, kafkajs's admin sees both members and their assignments in
 * DescribeGroups, records produced across a rebalance are printed exactly once between them,
 * and when one stops (LeaveGroup) the other takes its partitions from the committed offsets.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import { AssignerProtocol, Kafka, logLevel } from "kafkajs";
import {
  type InProcessBroker,
  REPO_ROOT,
  removeDir,
  startInProcessBroker,
} from "../support/broker-harness.ts";
import { waitUntil } from "../support/wait-until.ts";
import { quill, quillJson } from "./quill-client.ts";

let broker: InProcessBroker;
let b: string[];

beforeAll(async () => {
  broker = await startInProcessBroker({ settings: { "group.initial.rebalance.delay.ms": "0" } });
  b = ["-b", broker.bootstrap];
}, 60_000);
afterAll(async () => {
  await broker.stop();
  removeDir(broker.dataDir);
});

interface RunningConsumer {
  readonly proc: ReturnType<typeof Bun.spawn>;
  readonly lines: string[];
}

/** A `quill topic consume` process whose stdout lines are collected as they come. */
function startConsumer(args: string[]): RunningConsumer {
  const env = Object.fromEntries(
    Object.entries(process.env).filter(([k]) => !k.startsWith("QUILL_")),
  );
  const proc = Bun.spawn([process.execPath, join(REPO_ROOT, "src", "main.ts"), ...args], {
    cwd: REPO_ROOT,
    env,
    stdout: "pipe",
    stderr: "inherit",
  });
  const lines: string[] = [];
  void (async () => {
    const decoder = new TextDecoder();
    let buffered = "";
    for await (const chunk of proc.stdout as ReadableStream<Uint8Array>) {
      buffered += decoder.decode(chunk, { stream: true });
      const parts = buffered.split("\n");
      buffered = parts.pop()!;
      lines.push(...parts);
    }
  })();
  return { proc, lines };
}

const produce = (from: number, to: number) =>
  quillJson(
    ["topic", "produce", "shared", "-K", ":", ...b],
    Array.from({ length: to - from }, (_, i) => `k${from + i}:v${from + i}\n`).join(""),
  );

describe("quill topic consume -g", () => {
  test("two CLI consumers share partitions, kafkajs sees them, a leaving one hands over", async () => {
    await quillJson(["topic", "create", "shared", "-p", "4", ...b]);
    await produce(0, 40);
    const member = ["-X", "heartbeat.interval.ms=200", "-X", "session.timeout.ms=6000"];
    const consume = ["topic", "consume", "shared", "-g", "cli", "-f", "%p %s\\n", ...member, ...b];
    const first = startConsumer(consume);
    await waitUntil(() => first.lines.length >= 40, 30_000, "first consumer read 40 records");
    const second = startConsumer(consume);

    const admin = new Kafka({ brokers: [broker.bootstrap], logLevel: logLevel.NOTHING }).admin();
    await admin.connect();
    let owned: number[][] = [];
    await waitUntil(
      async () => {
        const { groups } = await admin.describeGroups(["cli"]);
        const group = groups[0]!;
        if (group.state !== "Stable" || group.members.length !== 2) return false;
        expect(group.protocol).toBe("range");
        owned = group.members.map((m) => {
          const decoded = AssignerProtocol.MemberAssignment.decode(m.memberAssignment);
          return (decoded?.assignment.shared ?? []).sort();
        });
        return owned.every((ps) => ps.length === 2);
      },
      30_000,
      "two members with two partitions each",
    );
    await admin.disconnect();
    expect(owned.flat().sort()).toEqual([0, 1, 2, 3]);

    await produce(40, 80);
    const values = () => [...first.lines, ...second.lines].map((l) => l.split(" ")[1]!);
    await waitUntil(() => values().length >= 80, 30_000, "80 records printed");
    // The second member printed only its own partitions' records, and none twice.
    const secondPartitions = new Set(second.lines.map((l) => Number(l.split(" ")[0])));
    expect(secondPartitions.size).toBe(2);
    first.proc.kill("SIGINT");
    expect(await first.proc.exited).toBe(0);

    await produce(80, 100);
    await waitUntil(() => values().length >= 100, 30_000, "100 records printed");
    second.proc.kill("SIGINT");
    expect(await second.proc.exited).toBe(0);
    const expected = Array.from({ length: 100 }, (_, i) => `v${i}`).sort();
    expect(values().sort()).toEqual(expected);
    const described = await quillJson(["group", "describe", "cli", ...b]);
    expect(described).toMatchObject({ state: "Empty", totalLag: 0 });
  }, 120_000);

  test("-e with a group: one member reads everything to the end, commits and leaves", async () => {
    const r = await quill(["topic", "consume", "shared", "-g", "once", "-e", "-f", "%s\\n", ...b]);
    expect(r.code).toBe(0);
    expect(r.stdout.trim().split("\n").length).toBe(100);
    const described = await quillJson(["group", "describe", "once", ...b]);
    expect(described).toMatchObject({ state: "Empty", totalLag: 0 });
  }, 60_000);
});
