// franz-go's KIP-848 consumer (kgo.ServerSideBalancer, test/compat/franz-go/kip848): it uses
// the consumer group protocol only when the broker serves ConsumerGroupHeartbeat v1, and the
// program checks the group through ConsumerGroupDescribe, which fails for a classic group. A
// member joins and owns every partition, a second joins and the partitions are split (the
// first gives its half up before the second gets it), the second leaves, offsets are
// committed, and a later member reads only the records produced after the commit.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { join } from "node:path";
import {
  type InProcessBroker,
  REPO_ROOT,
  startInProcessBroker,
} from "../support/broker-harness.ts";

let broker: InProcessBroker;

beforeAll(async () => {
  // A short heartbeat interval: members hear of a rebalance within half a second.
  broker = await startInProcessBroker({
    settings: { "group.consumer.heartbeat.interval.ms": "300" },
  });
}, 60_000);

afterAll(async () => {
  await broker?.stop();
});

test("franz-go KIP-848 consumers: join, rebalance on join and leave, commit, resume", async () => {
  const proc = Bun.spawn(["go", "run", "./kip848"], {
    cwd: join(REPO_ROOT, "test", "compat", "franz-go"),
    env: { ...process.env, BOOTSTRAP: broker.bootstrap, TOPIC: "kip848-franz", GROUP: "g-franz" },
    stdout: "pipe",
    stderr: "pipe",
  });
  const [out, err, code] = await Promise.all([
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
    proc.exited,
  ]);
  if (code !== 0) console.log(out, err);
  const lines = out.trim().split("\n");
  expect(lines.at(-1)).toBe("OK");
  // b got its half only after a gave it up: a's revocation comes first.
  const revokedA = lines.findIndex((l) => l.startsWith("a revoked [") && l !== "a revoked []");
  const assignedB = lines.findIndex((l) => l.startsWith("b assigned [") && l !== "b assigned []");
  expect(revokedA).toBeGreaterThanOrEqual(0);
  expect(assignedB).toBeGreaterThan(revokedA);
  expect(lines).toContain("done: a owns all again");
  expect(lines.some((l) => /^described Stable epoch \d+, 2 members$/.test(l))).toBe(true);
}, 180_000);
