import { describe, expect, test } from "bun:test";
import {
  type Assignment,
  rangeAssignor,
  uniformAssignor,
} from "../../src/coordinator/consumer-group-assignors.ts";
import {
  ConsumerGroupManager,
  type HeartbeatRequest,
} from "../../src/coordinator/consumer-group-manager.ts";
import { DEFAULT_GROUP_CONFIG } from "../../src/coordinator/group-config.ts";
import { ErrorCode } from "../../src/protocol/errors.ts";
import { waitUntil } from "../support/wait-until.ts";

const tps = (a: Assignment | null | undefined) =>
  [...(a ?? new Map())].flatMap(([t, ps]) => [...ps].sort().map((p) => `${t}-${p}`)).sort();
const owned = (...keys: string[]): Assignment => {
  const out = new Map<string, Set<number>>();
  for (const k of keys) {
    const [t, p] = k.split("-") as [string, string];
    out.set(t, (out.get(t) ?? new Set()).add(Number(p)));
  }
  return out;
};

describe("server-side assignors", () => {
  const partitionCounts = new Map([["t", 5]]);
  const members = [
    { memberId: "b", topics: ["t"] },
    { memberId: "a", topics: ["t"] },
  ];

  test("range: contiguous ranges in member id order, the first members one more", () => {
    const out = rangeAssignor({ members, partitionCounts, previous: new Map() });
    expect(tps(out.get("a"))).toEqual(["t-0", "t-1", "t-2"]);
    expect(tps(out.get("b"))).toEqual(["t-3", "t-4"]);
  });

  test("uniform: balanced, and sticky to the previous target when a member joins", () => {
    const previous = new Map([["a", owned("t-0", "t-1", "t-2", "t-3", "t-4")]]);
    const three = [...members, { memberId: "c", topics: ["t"] }];
    const out = uniformAssignor({ members: three, partitionCounts, previous });
    const sizes = ["a", "b", "c"].map((m) => tps(out.get(m)).length).sort();
    expect(sizes).toEqual([1, 2, 2]);
    // a only gave partitions away; it took none that someone else had.
    for (const tp of tps(out.get("a"))) expect(tps(previous.get("a"))).toContain(tp);
    expect(new Set(["a", "b", "c"].flatMap((m) => tps(out.get(m)))).size).toBe(5);
  });

  test("uniform: a partition goes only to members subscribed to its topic", () => {
    const counts = new Map([
      ["x", 4],
      ["y", 2],
    ]);
    const subs = [
      { memberId: "a", topics: ["x", "y"] },
      { memberId: "b", topics: ["y"] },
    ];
    const out = uniformAssignor({ members: subs, partitionCounts: counts, previous: new Map() });
    expect(tps(out.get("b")).every((tp) => tp.startsWith("y-"))).toBe(true);
    expect(tps(out.get("a")).length + tps(out.get("b")).length).toBe(6);
  });
});

function manager(config: Partial<typeof DEFAULT_GROUP_CONFIG> = {}, partitions = 4) {
  const counts = new Map([["t", partitions]]);
  return new ConsumerGroupManager({ ...DEFAULT_GROUP_CONFIG, ...config }, (topics) => {
    return new Map([...topics].filter((t) => counts.has(t)).map((t) => [t, counts.get(t)!]));
  });
}

function hb(over: Partial<HeartbeatRequest>): HeartbeatRequest {
  return {
    groupId: "g",
    memberId: "",
    memberEpoch: 0,
    instanceId: null,
    rackId: null,
    rebalanceTimeoutMs: -1,
    subscribedTopicNames: null,
    subscribedTopicRegex: null,
    serverAssignor: null,
    owned: null,
    clientId: "c",
    clientHost: "/127.0.0.1",
    ...over,
  };
}

const join = (memberId: string) =>
  hb({ memberId, memberEpoch: 0, rebalanceTimeoutMs: 60_000, subscribedTopicNames: ["t"] });

describe("KIP-848 membership and reconciliation", () => {
  test("a second member gets partitions only after the first revoked them", () => {
    const m = manager();
    const a1 = m.heartbeat(join("a"));
    expect(a1).toMatchObject({ errorCode: ErrorCode.NONE, memberId: "a", memberEpoch: 1 });
    expect(tps(a1.assignment)).toEqual(["t-0", "t-1", "t-2", "t-3"]);
    const all = owned("t-0", "t-1", "t-2", "t-3");
    m.heartbeat(hb({ memberId: "a", memberEpoch: 1, owned: all }));

    const b1 = m.heartbeat(join("b"));
    // The group is at epoch 2, but every partition is still a's: b waits with nothing.
    expect(b1.memberEpoch).toBe(2);
    expect(tps(b1.assignment)).toEqual([]);
    const a2 = m.heartbeat(hb({ memberId: "a", memberEpoch: 1 }));
    // a keeps its epoch until it confirms the revocation.
    expect(a2.memberEpoch).toBe(1);
    const kept = tps(a2.assignment);
    expect(kept.length).toBe(2);
    expect(m.get("g")!.state).toBe("Reconciling");

    const a3 = m.heartbeat(hb({ memberId: "a", memberEpoch: 1, owned: owned(...kept) }));
    expect(a3.memberEpoch).toBe(2);
    const b2 = m.heartbeat(hb({ memberId: "b", memberEpoch: 2, owned: new Map() }));
    expect(tps(b2.assignment).length).toBe(2);
    expect([...kept, ...tps(b2.assignment)].sort()).toEqual(tps(all));
    expect(m.get("g")!.state).toBe("Stable");
  });

  /**
   * Simulated clients as the Java consumer behaves: each heartbeat reports what it owns, and a
   * member whose answer changed its partitions acknowledges at once with another heartbeat.
   */
  function clients(m: ConsumerGroupManager) {
    const state = new Map<string, { epoch: number; owns: Assignment }>();
    const beat = (memberId: string) => {
      const s = state.get(memberId) ?? { epoch: 0, owns: new Map() };
      const r = m.heartbeat(
        s.epoch === 0 ? join(memberId) : hb({ memberId, memberEpoch: s.epoch, owned: s.owns }),
      );
      expect(r.errorCode).toBe(ErrorCode.NONE);
      const changed = r.assignment !== null && tps(r.assignment).join() !== tps(s.owns).join();
      state.set(memberId, { epoch: r.memberEpoch, owns: r.assignment ?? s.owns });
      return changed;
    };
    /** A regular heartbeat, and the acknowledgement it calls for (the ones that follow). */
    const heartbeat = (memberId: string) => {
      for (let n = 0; beat(memberId) && n < 3; n++);
    };
    return { heartbeat, owns: (id: string) => tps(state.get(id)?.owns) };
  }

  test("a tenth member settles in one heartbeat round: revokers get no partitions to wait for", () => {
    // 20 partitions over nine members (3,3,2,...) then ten: only the two members with three
    // give one each, and nobody both gives and receives, so after every old member's regular
    // heartbeat (and acknowledgement) the newcomer's next heartbeat completes the rebalance,
    // whatever the order. A member waiting on another's revocation would take a whole further
    // heartbeat interval (5 s by default).
    for (const reverse of [false, true]) {
      const m = manager({}, 20);
      const c = clients(m);
      const old = Array.from({ length: 9 }, (_, i) => `m${i}`);
      for (let round = 0; round < 4; round++) old.forEach(c.heartbeat);
      expect(m.get("g")!.state).toBe("Stable");
      c.heartbeat("new");
      for (const id of reverse ? [...old].reverse() : old) c.heartbeat(id);
      c.heartbeat("new");
      expect(m.get("g")!.state).toBe("Stable");
      const shares = [...old, "new"].map(c.owns);
      expect(shares.map((s) => s.length)).toEqual(Array(10).fill(2));
      expect(new Set(shares.flat()).size).toBe(20);
    }
  });

  test("leaving hands the partitions back; errors for unknown, fenced and bad requests", () => {
    const m = manager();
    m.heartbeat(join("a"));
    m.heartbeat(join("b"));
    expect(m.heartbeat(hb({ memberId: "b", memberEpoch: -1 })).memberEpoch).toBe(-1);
    const a = m.heartbeat(hb({ memberId: "a", memberEpoch: 1, owned: new Map() }));
    expect(tps(a.assignment).length).toBe(4);
    const err = (r: Partial<HeartbeatRequest>) => m.heartbeat(hb(r)).errorCode;
    expect(err({ memberId: "zz", memberEpoch: 3 })).toBe(ErrorCode.UNKNOWN_MEMBER_ID);
    expect(err({ memberId: "a", memberEpoch: 99 })).toBe(ErrorCode.FENCED_MEMBER_EPOCH);
    expect(err({ memberId: "a", memberEpoch: 0 })).toBe(ErrorCode.INVALID_REQUEST);
    expect(err({ ...join("c"), serverAssignor: "sticky" })).toBe(ErrorCode.UNSUPPORTED_ASSIGNOR);
    expect(err({ ...join("c"), groupId: "" })).toBe(ErrorCode.INVALID_GROUP_ID);
  });

  test("offsets are committed with the member's current epoch", () => {
    const m = manager();
    const a = m.heartbeat(join("a"));
    expect(m.validateCommit("g", "a", a.memberEpoch)).toBeNull();
    expect(m.validateCommit("g", "a", a.memberEpoch - 1)).toBe(ErrorCode.STALE_MEMBER_EPOCH);
    expect(m.validateCommit("g", "x", a.memberEpoch)).toBe(ErrorCode.UNKNOWN_MEMBER_ID);
    // Without a member (the admin client), only while the group is empty.
    expect(m.validateCommit("g", "", -1)).toBe(ErrorCode.UNKNOWN_MEMBER_ID);
    m.heartbeat(hb({ memberId: "a", memberEpoch: -1 }));
    expect(m.validateCommit("g", "", -1)).toBeNull();
  });

  test("a member that stops heartbeating is fenced after the session timeout", async () => {
    const m = manager({ consumerSessionTimeoutMs: 100 });
    m.heartbeat(join("a"));
    expect(m.hasMembers("g")).toBe(true);
    await waitUntil(() => !m.hasMembers("g"), 10_000, "a fenced");
    expect(m.get("g")!.state).toBe("Empty");
  });
});

describe("KIP-848 static membership (group.instance.id)", () => {
  /** Members a and b (instances ia and ib), settled at epoch 2 with two partitions each. */
  function settled(config: Partial<typeof DEFAULT_GROUP_CONFIG> = {}) {
    const m = manager(config);
    const joinAs = (memberId: string, instanceId: string) =>
      m.heartbeat({ ...join(memberId), instanceId });
    const a1 = joinAs("a", "ia");
    m.heartbeat(hb({ memberId: "a", memberEpoch: 1, owned: a1.assignment }));
    joinAs("b", "ib");
    const a2 = m.heartbeat(hb({ memberId: "a", memberEpoch: 1 }));
    m.heartbeat(hb({ memberId: "a", memberEpoch: 1, owned: a2.assignment }));
    const b2 = m.heartbeat(hb({ memberId: "b", memberEpoch: 2, owned: new Map() }));
    expect(b2.memberEpoch).toBe(2);
    expect(m.get("g")!.state).toBe("Stable");
    return { m, joinAs, bPartitions: tps(b2.assignment) };
  }

  test("a static member that leaves with epoch -2 keeps its partitions for its next member", () => {
    const { m, joinAs, bPartitions } = settled();
    const groupEpoch = m.get("g")!.groupEpoch;
    expect(m.heartbeat(hb({ memberId: "b", memberEpoch: -2 })).memberEpoch).toBe(-2);
    // Still a member, at epoch -2, holding its partitions; nothing is reassigned.
    expect(m.get("g")!.members.get("b")?.memberEpoch).toBe(-2);
    expect(m.get("g")!.groupEpoch).toBe(groupEpoch);
    const a = m.heartbeat(hb({ memberId: "a", memberEpoch: 2 }));
    expect(a.assignment).toBeNull();
    const back = joinAs("b2", "ib");
    expect(back).toMatchObject({ errorCode: ErrorCode.NONE, memberId: "b2", memberEpoch: 2 });
    expect(tps(back.assignment)).toEqual(bPartitions);
    expect(m.get("g")!.groupEpoch).toBe(groupEpoch);
    expect([...m.get("g")!.members.keys()].sort()).toEqual(["a", "b2"]);
  });

  test("an instance id held by a live member is UNRELEASED_INSTANCE_ID", () => {
    const { joinAs } = settled();
    expect(joinAs("a2", "ia").errorCode).toBe(ErrorCode.UNRELEASED_INSTANCE_ID);
  });

  test("a static member that does not come back is fenced after the session timeout", async () => {
    const { m } = settled({ consumerSessionTimeoutMs: 200 });
    m.heartbeat(hb({ memberId: "b", memberEpoch: -2 }));
    const keepAlive = setInterval(() => m.heartbeat(hb({ memberId: "a", memberEpoch: 2 })), 50);
    try {
      await waitUntil(() => !m.get("g")!.members.has("b"), 5_000, "b fenced");
    } finally {
      clearInterval(keepAlive);
    }
    // a now gets b's partitions too, at a new epoch.
    m.heartbeat(hb({ memberId: "a", memberEpoch: 2 }));
    const a = m.get("g")!.members.get("a")!;
    expect(a.memberEpoch).toBe(3);
    expect(tps(a.assigned)).toHaveLength(4);
  });
});

describe("KIP-848 regex subscriptions", () => {
  /** A manager over a topic list the test changes (each change a new version). */
  function regexManager(initial: string[]) {
    const counts = new Map<string, number>(initial.map((t) => [t, 2]));
    let topics = { version: 1, names: [...counts.keys()].sort() };
    const m = new ConsumerGroupManager(
      DEFAULT_GROUP_CONFIG,
      (wanted) => new Map([...wanted].filter((t) => counts.has(t)).map((t) => [t, counts.get(t)!])),
      () => {},
      () => topics,
    );
    const setTopics = (names: string[]) => {
      counts.clear();
      for (const t of names) counts.set(t, 2);
      topics = { version: topics.version + 1, names: [...names].sort() };
    };
    return { m, setTopics };
  }
  const joinRegex = (regex: string) =>
    hb({ memberId: "a", memberEpoch: 0, rebalanceTimeoutMs: 60_000, subscribedTopicRegex: regex });

  test("the regex is resolved against the topics, and re-resolved when they change", () => {
    const { m, setTopics } = regexManager(["orders-eu", "orders-us", "billing"]);
    const a1 = m.heartbeat(joinRegex("orders-.*"));
    expect(a1.errorCode).toBe(ErrorCode.NONE);
    expect(tps(a1.assignment)).toEqual([
      "orders-eu-0",
      "orders-eu-1",
      "orders-us-0",
      "orders-us-1",
    ]);
    const held = owned("orders-eu-0", "orders-eu-1", "orders-us-0", "orders-us-1");
    m.heartbeat(hb({ memberId: "a", memberEpoch: 1, owned: held }));
    // Unchanged topics: nothing moves.
    expect(m.heartbeat(hb({ memberId: "a", memberEpoch: 1 })).memberEpoch).toBe(1);

    setTopics(["orders-eu", "billing", "orders-apac"]);
    const a2 = m.heartbeat(hb({ memberId: "a", memberEpoch: 1 }));
    // orders-us vanished (the member is told to drop it first), orders-apac appeared.
    expect(tps(a2.assignment)).toEqual(["orders-eu-0", "orders-eu-1"]);
    const a3 = m.heartbeat(hb({ memberId: "a", memberEpoch: 1, owned: a2.assignment }));
    expect(a3.memberEpoch).toBe(2);
    expect(tps(a3.assignment)).toEqual([
      "orders-apac-0",
      "orders-apac-1",
      "orders-eu-0",
      "orders-eu-1",
    ]);
    expect(m.get("g")!.members.get("a")!.subscribedTopicRegex).toBe("orders-.*");
  });

  test("a regex RE2/J would read otherwise, or unsafe, is INVALID_REGULAR_EXPRESSION; (?i) works", () => {
    const { m } = regexManager(["t"]);
    for (const bad of ["(a*)*b", "(?P<n>x)", "\\Qa\\E", "x(?=y)", "[unclosed"]) {
      const r = m.heartbeat(joinRegex(bad));
      expect(r.errorCode).toBe(ErrorCode.INVALID_REGULAR_EXPRESSION);
      expect(r.errorMessage).toContain(bad);
    }
    expect(m.get("g")).toBeUndefined();
    const r = m.heartbeat(joinRegex("(?i)T"));
    expect(tps(r.assignment)).toEqual(["t-0", "t-1"]);
  });
});
