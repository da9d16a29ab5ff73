// Static membership (KIP-345) with librdkafka (python3-confluent-kafka; kafkajs has no
// group.instance.id): a static member killed and restarted within its session timeout takes
// its old place. The other member sees no rebalance, the restarted one gets the same
// partitions, and the group keeps two members.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import type { Subprocess } from "bun";
import { Kafka, logLevel } from "kafkajs";
import { type InProcessBroker, startInProcessBroker } from "../support/broker-harness.ts";

const TOPIC = "static-topic";
const GROUP = "static-group";
const SCRIPT = join(import.meta.dir, "static-member-consumer.py");
const PYTHON = "/usr/bin/python3";

let broker: InProcessBroker;

beforeAll(async () => {
  broker = await startInProcessBroker({ settings: { "group.initial.rebalance.delay.ms": "300" } });
}, 60_000);
afterAll(async () => {
  await broker.stop();
});

/** A python consumer process and the lines it printed. */
class StaticMember {
  readonly lines: string[] = [];
  readonly proc: Subprocess<"ignore", "pipe", "inherit">;

  constructor(instanceId: string) {
    this.proc = Bun.spawn([PYTHON, SCRIPT, broker.bootstrap, GROUP, instanceId, TOPIC], {
      stdin: "ignore",
      stdout: "pipe",
      stderr: "inherit",
    });
    void this.read();
  }

  private async read(): Promise<void> {
    let buffered = "";
    const decoder = new TextDecoder();
    for await (const chunk of this.proc.stdout) {
      buffered += decoder.decode(chunk);
      const lines = buffered.split("\n");
      buffered = lines.pop()!;
      this.lines.push(...lines);
    }
  }

  /** The partitions of the latest "assigned" line, or null before the first one. */
  get assignment(): string | null {
    const last = this.lines.findLast((l) => l.startsWith("assigned "));
    return last === undefined ? null : last.slice("assigned ".length);
  }

  get rebalanceEvents(): number {
    return this.lines.filter((l) => l.startsWith("assigned ") || l.startsWith("revoked ")).length;
  }

  async kill9(): Promise<void> {
    this.proc.kill("SIGKILL");
    await this.proc.exited;
  }
}

async function waitFor(
  what: string,
  condition: () => boolean | Promise<boolean>,
  timeoutMs = 30_000,
) {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await Bun.sleep(50);
  }
}

describe("static membership with librdkafka", () => {
  test("a static member restarted within its session timeout causes no rebalance", async () => {
    const brokers = [broker.bootstrap];
    const kafka = new Kafka({ clientId: "static-e2e", brokers, logLevel: logLevel.NOTHING });
    const admin = kafka.admin();
    await admin.connect();
    await admin.createTopics({ topics: [{ topic: TOPIC, numPartitions: 4 }] });
    const describe = async () => (await admin.describeGroups([GROUP])).groups[0]!;

    const x = new StaticMember("instance-x");
    let y = new StaticMember("instance-y");
    try {
      await waitFor("a stable group of two with disjoint assignments", async () => {
        const group = await describe();
        if (group.state !== "Stable" || group.members.length !== 2) return false;
        const parts = [x.assignment, y.assignment];
        if (parts.some((p) => p === null || p === "")) return false;
        return parts.join(",").split(",").sort().join(",") === "0,1,2,3";
      });
      await Bun.sleep(1_000);
      const before = await describe();
      const xEvents = x.rebalanceEvents;
      const yAssignment = y.assignment;

      await y.kill9();
      y = new StaticMember("instance-y");
      await waitFor("the restarted member's assignment", () => y.assignment !== null);
      expect(y.assignment).toBe(yAssignment);
      await Bun.sleep(2_000);
      expect(x.rebalanceEvents).toBe(xEvents);
      const after = await describe();
      expect(after.state).toBe("Stable");
      expect(after.members.length).toBe(2);
      const ids = (g: typeof after) => g.members.map((m) => m.memberId).sort();
      // The restarted instance has a new member id; the other member is untouched.
      expect(ids(after)).not.toEqual(ids(before));
      expect(ids(after).filter((id) => ids(before).includes(id))).toHaveLength(1);

      // Both still consume: records sent to every partition arrive at one of them.
      const producer = kafka.producer();
      await producer.connect();
      const messages = [0, 1, 2, 3].map((partition) => ({ partition, value: "v" }));
      await producer.send({ topic: TOPIC, messages });
      await producer.disconnect();
      await waitFor(
        "four records",
        () => [...x.lines, ...y.lines].filter((l) => l.startsWith("record ")).length === 4,
      );
    } finally {
      await Promise.all([x.kill9(), y.kill9()]);
      await admin.disconnect();
    }
  }, 90_000);
});
