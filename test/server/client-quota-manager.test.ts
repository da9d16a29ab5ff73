import { expect, test } from "bun:test";
import type { QuotaEntityPath } from "../../src/metadata/client-quota-store.ts";
import { ClientQuotaManager } from "../../src/server/client-quota-manager.ts";
import { QuotaSensor } from "../../src/server/quota-sensor.ts";

const path = (p: string) => p as QuotaEntityPath;
const rate = (bytes: number) => ({ producer_byte_rate: String(bytes) });

/** The limit that applies, read back as Kafka's getMaxValueInQuotaWindow / (samples - 1). */
function limitOf(m: ClientQuotaManager, principal: string, clientId: string): number {
  const perWindow = m.maxValueInQuotaWindow("producer_byte_rate", principal, clientId);
  return perWindow / ((m.window.samples - 1) * (m.window.sampleMs / 1000));
}

test("Kafka's precedence: user+client, user+<default>, user, <default>+client, ..., <default> client", () => {
  const m = new ClientQuotaManager({ samples: 11, sampleMs: 1000 });
  expect(m.active).toBe(false);
  const levels: [string, number][] = [
    ["users/alice/clients/app", 1],
    ["users/alice/clients/<default>", 2],
    ["users/alice", 3],
    ["users/<default>/clients/app", 4],
    ["users/<default>/clients/<default>", 5],
    ["users/<default>", 6],
    ["clients/app", 7],
    ["clients/<default>", 8],
  ];
  for (const [p, v] of levels) m.update(path(p), rate(v * 1000));
  expect(m.active).toBe(true);
  // Removing the most specific entity each time reveals the next one in Kafka's order.
  for (const [p, v] of levels) {
    expect(limitOf(m, "User:alice", "app")).toBe(v * 1000);
    m.update(path(p), {});
  }
  expect(limitOf(m, "User:alice", "app")).toBe(Number.POSITIVE_INFINITY);
  expect(m.active).toBe(false);
});

test("names are matched sanitized, as Kafka's znode names are", () => {
  const m = new ClientQuotaManager({ samples: 11, sampleMs: 1000 });
  m.update(path("users/CN%3Dbob%2COU%3Dx%20y"), rate(5000));
  m.update(path("clients/my%2Aapp"), rate(7000));
  expect(limitOf(m, "User:CN=bob,OU=x y", "other")).toBe(5000);
  expect(limitOf(m, "User:carol", "my*app")).toBe(7000);
  // Keys that are not quotas (a SCRAM credential beside a user's quota) are ignored.
  m.update(path("users/dave"), { "SCRAM-SHA-512": "salt=..." });
  expect(limitOf(m, "User:dave", "x")).toBe(Number.POSITIVE_INFINITY);
});

test("a user's quota is shared by its clients; a user+client quota is per client", () => {
  const m = new ClientQuotaManager({ samples: 2, sampleMs: 1000 });
  m.update(path("users/alice"), rate(1000));
  m.update(path("users/bob/clients/<default>"), rate(1000));
  const t0 = 1_000_000;
  const record = (principal: string, clientId: string) =>
    m.recordAndGetThrottleTimeMs("producer_byte_rate", principal, clientId, 800, t0);
  expect(record("User:alice", "a")).toBe(0);
  // 1,600 bytes over alice's 1 s minimum window: 60% over, so 600 ms.
  expect(record("User:alice", "b")).toBe(600);
  expect(record("User:bob", "a")).toBe(0);
  expect(record("User:bob", "b")).toBe(0);
  expect(m.throttleTimes()).toContainEqual({
    type: "producer_byte_rate",
    user: "alice",
    clientId: "",
    ms: 600,
  });
});

test("the sensor measures as Kafka's Rate: minimum window, sample roll-over, expiry", () => {
  const s = new QuotaSensor(11, 1000);
  const t0 = 5_000_000;
  // A first burst counts over 10 s (samples - 1): 10,000 bytes at 1,000/s is within.
  expect(s.recordAndThrottleMs(10_000, t0, 1000)).toBe(0);
  // Half a second on, the window is 10.5 s: 12,000 bytes is 1,142.9/s, 14.3% over: 1.5 s.
  expect(s.recordAndThrottleMs(2_000, t0 + 500, 1000)).toBe(1500);
  // Eleven seconds on, every sample is obsolete: the rate starts again from zero.
  expect(s.recordAndThrottleMs(1_000, t0 + 12_000, 1000)).toBe(0);
  // A fetch answered without records takes its bytes back.
  s.record(50_000, t0 + 12_100);
  s.record(-50_000, t0 + 12_100);
  expect(s.recordAndThrottleMs(0, t0 + 12_200, 1000)).toBe(0);
});
