// The Kafka 4.4 Java client (test/compat/java4): a KafkaConsumer with group.protocol=consumer
// (KIP-848) joins, is rebalanced when a second member joins and leaves (revoke before assign),
// commits with its member epoch, and a later member of the group reads only the new records.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { type InProcessBroker, startInProcessBroker } from "../support/broker-harness.ts";
import { ensureJava4Built, runJava4 } from "../support/java4-client.ts";

let broker: InProcessBroker;

beforeAll(async () => {
  ensureJava4Built("ConsumerProtocol");
  // A short heartbeat interval: members hear of a rebalance within half a second.
  broker = await startInProcessBroker({
    settings: { "group.consumer.heartbeat.interval.ms": "300" },
  });
}, 300_000);

afterAll(async () => {
  await broker?.stop();
});

for (const assignor of ["uniform", "range"]) {
  test(`KIP-848 consumers with the ${assignor} assignor: join, rebalance, commit, resume`, async () => {
    const args = [broker.bootstrap, `kip848-${assignor}`, `g-${assignor}`, assignor];
    const lines = await runJava4("quill.compat4.ConsumerProtocol", args);
    // b got its half only after a gave it up: a's revocation comes first.
    const revokedA = lines.findIndex((l) => l.startsWith("a revoked [") && l !== "a revoked []");
    const assignedB = lines.findIndex((l) => l.startsWith("b assigned [") && l !== "b assigned []");
    expect(revokedA).toBeGreaterThanOrEqual(0);
    expect(assignedB).toBeGreaterThan(revokedA);
    expect(lines.join("\n")).toContain("described Stable");
  }, 90_000);
}
