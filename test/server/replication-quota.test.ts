import { expect, test } from "bun:test";
import type { TopicConfigOverrides } from "../../src/config/topic-config.ts";
import { ReplicationQuota } from "../../src/server/replication-quota.ts";

const configs: Record<string, TopicConfigOverrides> = {
  listed: { "leader.replication.throttled.replicas": ["0:1", "1:2"] },
  all: { "leader.replication.throttled.replicas": ["*"] },
  none: {},
};

test("only partitions listed for this broker (or *) are throttled", () => {
  const quota = new ReplicationQuota(
    1,
    () => 1000,
    (t) => configs[t],
  );
  expect(quota.isThrottled("listed", 0)).toBe(true);
  expect(quota.isThrottled("listed", 1)).toBe(false);
  expect(quota.isThrottled("all", 7)).toBe(true);
  expect(quota.isThrottled("none", 0)).toBe(false);
  expect(quota.isThrottled("unknown", 0)).toBe(false);
});

test("the rate over the window decides; an unlimited rate never throttles", () => {
  let rate = 1000;
  const quota = new ReplicationQuota(
    1,
    () => rate,
    (t) => configs[t],
  );
  const t0 = 1_000_000;
  expect(quota.isExceeded(t0)).toBe(false);
  quota.record(900, t0);
  expect(quota.isExceeded(t0 + 500)).toBe(false);
  quota.record(500, t0 + 600);
  expect(quota.isExceeded(t0 + 700)).toBe(true);
  // Two seconds later the 1400 bytes spread over the window fall under 1000/s.
  expect(quota.isExceeded(t0 + 2_000)).toBe(false);
  // Eleven seconds later the samples have left the window.
  quota.record(5_000, t0 + 2_100);
  expect(quota.isExceeded(t0 + 2_200)).toBe(true);
  expect(quota.isExceeded(t0 + 14_000)).toBe(false);
  rate = Number.MAX_SAFE_INTEGER;
  quota.record(1e9, t0 + 14_000);
  expect(quota.isExceeded(t0 + 14_000)).toBe(false);
});

test("the follower side reads follower.replication.throttled.replicas, not the leader's", () => {
  const follower = new ReplicationQuota(
    2,
    () => 1000,
    (t) =>
      t === "moving"
        ? {
            "leader.replication.throttled.replicas": ["0:1"],
            "follower.replication.throttled.replicas": ["0:2"],
          }
        : undefined,
    "follower",
  );
  expect(follower.isThrottled("moving", 0)).toBe(true);
  expect(follower.isThrottled("moving", 1)).toBe(false);
  expect(
    new ReplicationQuota(
      2,
      () => 1000,
      () => undefined,
    ).isThrottled("moving", 0),
  ).toBe(false);
});
