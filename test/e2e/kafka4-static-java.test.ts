// KIP-848 static membership with the Kafka 4.4 Java client: a member with group.instance.id
// that closes (leaving with epoch -2) is replaced by the next consumer with its instance id,
// which gets exactly its partitions back with no rebalance of the others (the group epoch stays).
import { afterAll, beforeAll, expect, test } from "bun:test";
import { type InProcessBroker, startInProcessBroker } from "../support/broker-harness.ts";
import { ensureJava4Built, Java4Process } from "../support/java4-client.ts";

let broker: InProcessBroker;

beforeAll(async () => {
  ensureJava4Built("StaticMember");
  broker = await startInProcessBroker({
    settings: { "group.consumer.heartbeat.interval.ms": "300" },
  });
}, 300_000);

afterAll(async () => {
  await broker?.stop();
});

test("a static member's instance id gets its partitions back after it closes, with no rebalance", async () => {
  const run = new Java4Process("StaticMember", [broker.bootstrap, "static-848", "g-static"]);
  const code = await run.exited;
  if (code !== 0) console.log(run.lines.join("\n"), run.stderr);
  expect(code).toBe(0);
  expect(run.lines.at(-1)).toBe("OK");
  expect(run.lines.some((l) => l.startsWith("b2 took over [static-848-"))).toBe(true);
}, 90_000);
