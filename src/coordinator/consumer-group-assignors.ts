/**
 * The server-side assignors of KIP-848 consumer groups (`group.consumer.assignors`): `uniform`
 * (Kafka's UniformAssignor: balanced and sticky) and `range` (Kafka's RangeAssignor: each
 * topic's partitions in contiguous ranges over its subscribers, in member id order). Both are
 * pure functions of the members' subscriptions, the topics' partition counts and, for
 * stickiness, the previous target assignment.
 */

/** Partitions by topic name. */
export type Assignment = ReadonlyMap<string, ReadonlySet<number>>;

export interface AssignorMember {
  readonly memberId: string;
  readonly topics: readonly string[];
}

export interface AssignorInput {
  readonly members: readonly AssignorMember[];
  /** Partition count of each subscribed topic that exists. */
  readonly partitionCounts: ReadonlyMap<string, number>;
  /** The previous target, by member id (kept where balance allows: uniform is sticky). */
  readonly previous: ReadonlyMap<string, Assignment>;
}

export type Assignor = (input: AssignorInput) => Map<string, Assignment>;

export const UNIFORM_ASSIGNOR = "uniform";
export const RANGE_ASSIGNOR = "range";

/** Moves a partition between members at most this many times per topic, bounding the work. */
const BALANCE_PASSES_MAX = 1_000;

const byId = (a: AssignorMember, b: AssignorMember) => (a.memberId < b.memberId ? -1 : 1);

function subscribersByTopic(input: AssignorInput): Map<string, AssignorMember[]> {
  const out = new Map<string, AssignorMember[]>();
  for (const m of [...input.members].sort(byId)) {
    for (const topic of new Set(m.topics)) {
      if (!input.partitionCounts.has(topic)) continue;
      let list = out.get(topic);
      if (list === undefined) out.set(topic, (list = []));
      list.push(m);
    }
  }
  return out;
}

function toAssignments(
  members: readonly AssignorMember[],
  owner: ReadonlyMap<string, Map<number, string>>,
): Map<string, Assignment> {
  const out = new Map<string, Map<string, Set<number>>>();
  for (const m of members) out.set(m.memberId, new Map());
  for (const [topic, partitions] of owner) {
    for (const [partition, memberId] of partitions) {
      const a = out.get(memberId)!;
      let set = a.get(topic);
      if (set === undefined) a.set(topic, (set = new Set()));
      set.add(partition);
    }
  }
  return out;
}

/** Each topic's partitions split into contiguous ranges over its subscribers. */
export const rangeAssignor: Assignor = (input) => {
  const owner = new Map<string, Map<number, string>>();
  for (const [topic, subscribers] of subscribersByTopic(input)) {
    const count = input.partitionCounts.get(topic)!;
    const share = Math.floor(count / subscribers.length);
    const extra = count % subscribers.length;
    const partitions = new Map<number, string>();
    let next = 0;
    subscribers.forEach((m, i) => {
      const n = share + (i < extra ? 1 : 0);
      for (let p = next; p < next + n; p++) partitions.set(p, m.memberId);
      next += n;
    });
    owner.set(topic, partitions);
  }
  return toAssignments(input.members, owner);
};

/**
 * Balanced over all topics and sticky: a partition stays with its previous owner while that
 * member still subscribes, new partitions go to the least loaded subscriber, then partitions
 * move from the most to the least loaded subscriber of their topic until no move helps.
 */
export const uniformAssignor: Assignor = (input) => {
  const load = new Map(input.members.map((m) => [m.memberId, 0]));
  const owner = new Map<string, Map<number, string>>();
  const subscribers = subscribersByTopic(input);
  const previousOwner = (topic: string, p: number, allowed: readonly AssignorMember[]) =>
    allowed.find((m) => input.previous.get(m.memberId)?.get(topic)?.has(p) === true)?.memberId;
  const leastLoaded = (allowed: readonly AssignorMember[]) =>
    allowed.reduce((best, m) => (load.get(m.memberId)! < load.get(best.memberId)! ? m : best));
  for (const [topic, allowed] of subscribers) {
    const partitions = new Map<number, string>();
    const count = input.partitionCounts.get(topic)!;
    for (let p = 0; p < count; p++) {
      const kept = previousOwner(topic, p, allowed);
      if (kept === undefined) continue;
      partitions.set(p, kept);
      load.set(kept, load.get(kept)! + 1);
    }
    for (let p = 0; p < count; p++) {
      if (partitions.has(p)) continue;
      const m = leastLoaded(allowed).memberId;
      partitions.set(p, m);
      load.set(m, load.get(m)! + 1);
    }
    owner.set(topic, partitions);
  }
  balance(owner, subscribers, load);
  return toAssignments(input.members, owner);
};

/**
 * Moves partitions from the most to the least loaded subscriber of their topic while the two
 * differ by two or more. Taking from the most loaded member only (as Kafka's uniform assignor
 * revokes only what exceeds a member's quota) means no member both gives up and receives a
 * partition of a topic in one rebalance: such a receiver would wait for the giver's
 * revocation, a whole heartbeat interval longer than the rest of the group.
 */
function balance(
  owner: Map<string, Map<number, string>>,
  subscribers: ReadonlyMap<string, AssignorMember[]>,
  load: Map<string, number>,
): void {
  for (let moved = true, passes = 0; moved && passes < BALANCE_PASSES_MAX; passes++) {
    moved = false;
    for (const [topic, partitions] of owner) {
      if (balanceTopic(partitions, subscribers.get(topic)!, load)) moved = true;
    }
  }
}

/** One topic's moves; whether any. Each partition moves at most once (receivers never give). */
function balanceTopic(
  partitions: Map<number, string>,
  allowed: readonly AssignorMember[],
  load: Map<string, number>,
): boolean {
  const held = new Map<string, number[]>(allowed.map((m) => [m.memberId, []]));
  for (const [p, memberId] of partitions) held.get(memberId)!.push(p);
  const loadOf = (memberId: string) => load.get(memberId)!;
  let moves = 0;
  for (; moves < partitions.size; moves++) {
    let from: string | null = null;
    let to = allowed[0]!.memberId;
    for (const { memberId } of allowed) {
      if (held.get(memberId)!.length > 0 && (from === null || loadOf(memberId) > loadOf(from))) {
        from = memberId;
      }
      if (loadOf(memberId) < loadOf(to)) to = memberId;
    }
    if (from === null || loadOf(from) - loadOf(to) < 2) break;
    const p = held.get(from)!.pop()!;
    held.get(to)!.push(p);
    partitions.set(p, to);
    load.set(from, loadOf(from) - 1);
    load.set(to, loadOf(to) + 1);
  }
  return moves > 0;
}

export const ASSIGNORS: ReadonlyMap<string, Assignor> = new Map([
  [UNIFORM_ASSIGNOR, uniformAssignor],
  [RANGE_ASSIGNOR, rangeAssignor],
]);
