/**
 * Reads partitions from given offsets with Fetch requests to their leaders: one request per
 * leader at a time, all of that leader's partitions in it, yielding each answer's records.
 * A partition with an end offset stops there; without one it is followed (long polls).
 * read_committed fetches stop at the last stable offset and drop aborted transactions.
 */
import { ApiKey } from "../protocol/generated/index.ts";
import { check } from "./client-errors.ts";
import type { ClusterClient } from "./cluster-client.ts";
import { type ConsumedRecord, decodeFetched } from "./fetched-records.ts";
import { type PartitionInfo, partitionKey } from "./partition-offsets.ts";

/** Fetch's isolation level: 0 read_uncommitted, 1 read_committed (up to the LSO). */
export type IsolationLevel = 0 | 1;

export interface ConsumerOptions {
  readonly maxWaitMs: number;
  readonly partitionMaxBytes: number;
  readonly maxBytes: number;
  readonly isolationLevel: IsolationLevel;
}

export const DEFAULT_CONSUMER_OPTIONS: ConsumerOptions = {
  maxWaitMs: 500,
  partitionMaxBytes: 4 * 1024 * 1024,
  maxBytes: 64 * 1024 * 1024,
  isolationLevel: 0,
};

interface Position {
  readonly info: PartitionInfo;
  offset: bigint;
  /** Exclusive end; null follows the partition. */
  readonly end: bigint | null;
}

export interface FetchedChunk {
  readonly topic: string;
  readonly partition: number;
  readonly records: ConsumedRecord[];
  /** Where this partition's next fetch starts (commit this to resume after the chunk). */
  readonly nextOffset: bigint;
  readonly bytes: number;
  /** True when the partition reached its end offset with this chunk. */
  readonly done: boolean;
  /** Round trip of the Fetch request that brought this chunk. */
  readonly fetchMs: number;
}

export class Consumer {
  private readonly positions: Position[];
  private stopped = false;

  constructor(
    private readonly client: ClusterClient,
    partitions: readonly PartitionInfo[],
    starts: ReadonlyMap<string, bigint>,
    ends: ReadonlyMap<string, bigint> | null,
    private readonly options: ConsumerOptions = DEFAULT_CONSUMER_OPTIONS,
  ) {
    this.positions = partitions.map((info) => {
      const key = partitionKey(info.topic, info.partition);
      return { info, offset: starts.get(key)!, end: ends?.get(key) ?? null };
    });
  }

  /** Chunks of records until every partition with an end offset reached it (or forever). */
  async *chunks(): AsyncGenerator<FetchedChunk> {
    for (const p of this.positions) {
      if (p.end !== null && p.offset >= p.end) {
        yield { ...this.chunkBase(p), records: [], bytes: 0, done: true, fetchMs: 0 };
      }
    }
    let active = this.positions.filter((p) => p.end === null || p.offset < p.end);
    while (active.length > 0 && !this.stopped) {
      const byLeader = new Map<number, Position[]>();
      for (const p of active)
        byLeader.set(p.info.leader, [...(byLeader.get(p.info.leader) ?? []), p]);
      const answers = await Promise.all([...byLeader].map(([l, ps]) => this.fetch(l, ps)));
      for (const chunk of answers.flat()) yield chunk;
      active = active.filter((p) => p.end === null || p.offset < p.end);
    }
  }

  /** Ends `chunks()` after the fetch in progress. */
  stop(): void {
    this.stopped = true;
  }

  private chunkBase(p: Position) {
    return { topic: p.info.topic, partition: p.info.partition, nextOffset: p.offset };
  }

  private async fetch(leader: number, positions: Position[]): Promise<FetchedChunk[]> {
    const topics = new Map<string, Position[]>();
    for (const p of positions) topics.set(p.info.topic, [...(topics.get(p.info.topic) ?? []), p]);
    const started = performance.now();
    const response = await this.client.request(
      ApiKey.Fetch,
      {
        replicaId: -1,
        maxWaitMs: this.options.maxWaitMs,
        minBytes: 1,
        maxBytes: this.options.maxBytes,
        isolationLevel: this.options.isolationLevel,
        sessionEpoch: -1,
        topics: [...topics].map(([topic, ps]) => ({
          topic,
          partitions: ps.map((p) => ({
            partition: p.info.partition,
            fetchOffset: p.offset,
            partitionMaxBytes: this.options.partitionMaxBytes,
          })),
        })),
      },
      leader,
      this.options.maxWaitMs + this.client.config.requestTimeoutMs,
    );
    check(response.errorCode, "fetching");
    const fetchMs = performance.now() - started;
    const chunks: FetchedChunk[] = [];
    for (const t of response.responses) {
      for (const data of t.partitions) {
        const p = topics.get(t.topic)!.find((q) => q.info.partition === data.partitionIndex)!;
        check(data.errorCode, `fetching ${t.topic} partition ${data.partitionIndex}`);
        const bytes = data.records instanceof Uint8Array ? data.records : new Uint8Array(0);
        const aborted = this.options.isolationLevel === 1 ? (data.abortedTransactions ?? []) : null;
        const decoded = decodeFetched(t.topic, data.partitionIndex, bytes, p.offset, aborted);
        let records = decoded.records;
        p.offset = decoded.nextOffset;
        if (p.end !== null && p.offset >= p.end) {
          records = records.filter((r) => r.offset < p.end!);
          p.offset = p.end;
        }
        const done = p.end !== null && p.offset >= p.end;
        if (records.length === 0 && !done && decoded.bytes === 0) continue;
        chunks.push({ ...this.chunkBase(p), records, bytes: decoded.bytes, done, fetchMs });
      }
    }
    return chunks;
  }
}
