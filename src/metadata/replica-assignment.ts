/**
 * Kafka's automatic replica placement (`AdminUtils.assignReplicasToBrokers`): partition leaders
 * go round robin over the brokers from a random start, and each partition's followers follow
 * the leader at a shift that grows every time the partitions wrap around the brokers, so
 * leaders and followers both spread evenly. When every broker has a rack, the brokers are
 * first ordered so that racks alternate, and a follower is skipped while a rack (or a broker)
 * still has no replica of the partition: replicas land in as many racks as possible.
 */
import { ErrorCode, KafkaError } from "../protocol/errors.ts";
import { assert } from "../util/assert.ts";

export interface BrokerPlacement {
  readonly id: number;
  readonly rack: string | null;
}

export interface AssignmentOptions {
  /** Where the round robin starts; random when unset, as Kafka's default. */
  readonly fixedStartIndex?: number;
  /** The first partition to assign (CreatePartitions continues after the existing ones). */
  readonly startPartition?: number;
}

/** Replica lists for `count` partitions numbered from `startPartition` (default 0). */
export function assignReplicasToBrokers(
  brokers: readonly BrokerPlacement[],
  count: number,
  replicationFactor: number,
  options: AssignmentOptions = {},
): number[][] {
  if (replicationFactor <= 0) {
    throw new KafkaError(
      ErrorCode.INVALID_REPLICATION_FACTOR,
      "Replication factor must be larger than 0.",
    );
  }
  if (replicationFactor > brokers.length) {
    throw new KafkaError(
      ErrorCode.INVALID_REPLICATION_FACTOR,
      `Replication factor: ${replicationFactor} larger than available brokers: ` +
        `${brokers.length}.`,
    );
  }
  assert(count >= 0, `partition count ${count} must be >= 0`);
  const sorted = [...brokers].sort((a, b) => a.id - b.id);
  if (sorted.every((b) => b.rack === null)) {
    return rackUnaware(
      sorted.map((b) => b.id),
      count,
      replicationFactor,
      options,
    );
  }
  if (sorted.some((b) => b.rack === null)) {
    throw new KafkaError(
      ErrorCode.INVALID_REPLICA_ASSIGNMENT,
      "Not all brokers have rack information for replica rack aware assignment.",
    );
  }
  return rackAware(sorted, count, replicationFactor, options);
}

function startOf(options: AssignmentOptions, brokerCount: number) {
  const fixed = options.fixedStartIndex ?? -1;
  const random = () => Math.floor(Math.random() * brokerCount);
  return {
    startIndex: fixed >= 0 ? fixed : random(),
    shift: fixed >= 0 ? fixed : random(),
    firstPartition: Math.max(0, options.startPartition ?? 0),
  };
}

/** Kafka's `replicaIndex`: the j-th follower's position, never the leader's. */
function replicaIndex(first: number, shift: number, j: number, brokerCount: number): number {
  return (first + 1 + ((shift + j) % (brokerCount - 1))) % brokerCount;
}

function rackUnaware(
  ids: readonly number[],
  count: number,
  replicationFactor: number,
  options: AssignmentOptions,
): number[][] {
  const n = ids.length;
  let { startIndex, shift, firstPartition } = startOf(options, n);
  const result: number[][] = [];
  for (let partition = firstPartition; partition < firstPartition + count; partition++) {
    if (partition > 0 && partition % n === 0) shift++;
    const first = (partition + startIndex) % n;
    const replicas = [ids[first]!];
    for (let j = 0; j < replicationFactor - 1; j++) {
      replicas.push(ids[replicaIndex(first, shift, j, n)]!);
    }
    result.push(replicas);
  }
  return result;
}

function rackAware(
  brokers: readonly BrokerPlacement[],
  count: number,
  replicationFactor: number,
  options: AssignmentOptions,
): number[][] {
  const rackOf = new Map(brokers.map((b) => [b.id, b.rack!]));
  const rackCount = new Set(rackOf.values()).size;
  const arranged = rackAlternatedBrokers(brokers);
  const n = arranged.length;
  let { startIndex, shift, firstPartition } = startOf(options, n);
  const result: number[][] = [];
  for (let partition = firstPartition; partition < firstPartition + count; partition++) {
    if (partition > 0 && partition % n === 0) shift++;
    const first = (partition + startIndex) % n;
    const leader = arranged[first]!;
    const replicas = [leader];
    const racksUsed = new Set([rackOf.get(leader)!]);
    const brokersUsed = new Set([leader]);
    let k = 0;
    for (let r = 0; r < replicationFactor - 1; r++) {
      for (;;) {
        const broker = arranged[replicaIndex(first, shift * rackCount, k, n)]!;
        const rack = rackOf.get(broker)!;
        k++;
        const rackOk = !racksUsed.has(rack) || racksUsed.size === rackCount;
        const brokerOk = !brokersUsed.has(broker) || brokersUsed.size === n;
        if (!rackOk || !brokerOk) continue;
        replicas.push(broker);
        racksUsed.add(rack);
        brokersUsed.add(broker);
        break;
      }
    }
    result.push(replicas);
  }
  return result;
}

/** Kafka's `getRackAlternatedBrokerList`: one broker per rack in turn, racks in name order. */
export function rackAlternatedBrokers(brokers: readonly BrokerPlacement[]): number[] {
  const byRack = new Map<string, number[]>();
  for (const b of [...brokers].sort((x, y) => x.id - y.id)) {
    const list = byRack.get(b.rack!) ?? [];
    list.push(b.id);
    byRack.set(b.rack!, list);
  }
  const racks = [...byRack.keys()].sort();
  const result: number[] = [];
  for (let round = 0; result.length < brokers.length; round++) {
    for (const rack of racks) {
      const id = byRack.get(rack)![round];
      if (id !== undefined) result.push(id);
    }
  }
  return result;
}
