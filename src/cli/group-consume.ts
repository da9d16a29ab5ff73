/**
 * `quill topic consume TOPIC -g GROUP`: consumes as a member of the group, as Kafka's console
 * consumer with `--group` does: the partitions are shared with the group's other members by
 * the range assignor and move on each rebalance. Before rejoining, the member commits what it
 * printed (with its generation), so a partition changing hands is neither skipped nor repeated.
 * Committed offsets win over `-o`, which applies to partitions the group has none for (Kafka's
 * `auto.offset.reset`).
 */
import type { ClusterClient } from "../client/cluster-client.ts";
import {
  Consumer,
  DEFAULT_CONSUMER_OPTIONS,
  type FetchedChunk,
  type IsolationLevel,
} from "../client/consumer.ts";
import { GroupMember, type GroupMemberOptions } from "../client/group-member.ts";
import { fetchCommitted } from "../client/group-offsets.ts";
import {
  describeTopics,
  LATEST_TIMESTAMP,
  listOffsets,
  type PartitionInfo,
  partitionKey,
} from "../client/partition-offsets.ts";
import type { Assignment } from "../client/range-assignor.ts";
import type { RecordFormatter } from "./record-format.ts";
import { resolveStarts, type StartSpec } from "./start-offsets.ts";

const COMMIT_INTERVAL_MS = 5_000;

export interface GroupConsumeOptions {
  readonly topic: string;
  readonly group: string;
  readonly format: RecordFormatter;
  /** Records to print before stopping; 0 for no limit. */
  readonly limit: number;
  readonly spec: StartSpec;
  /** Stop when the assigned partitions reach their end offsets (`-e`). */
  readonly exitAtEnd: boolean;
  readonly member: GroupMemberOptions;
  readonly isolationLevel: IsolationLevel;
}

/** One generation's consumption: the member's partitions from their starting offsets. */
async function generationConsumer(
  client: ClusterClient,
  o: GroupConsumeOptions,
  assignment: Assignment,
): Promise<Consumer> {
  const [info] = await describeTopics(client, [o.topic]);
  const mine = new Set(assignment.get(o.topic) ?? []);
  const partitions: PartitionInfo[] = info!.partitions.filter((p) => mine.has(p.partition));
  const options = { ...DEFAULT_CONSUMER_OPTIONS, isolationLevel: o.isolationLevel };
  if (partitions.length === 0) return new Consumer(client, [], new Map(), new Map(), options);
  const starts = await resolveStarts(client, partitions, o.spec);
  const topics = [{ name: o.topic, partitions: [...mine] }];
  for (const [key, offset] of await fetchCommitted(client, o.group, topics)) {
    starts.set(key, offset);
  }
  const ends = o.exitAtEnd
    ? await listOffsets(client, partitions, LATEST_TIMESTAMP, o.isolationLevel)
    : null;
  return new Consumer(client, partitions, starts, ends, options);
}

export async function groupConsume(client: ClusterClient, o: GroupConsumeOptions) {
  const member = new GroupMember(client, o.group, [o.topic], o.member);
  const out = Bun.stdout.writer();
  let consumer: Consumer | null = null;
  let stopping = false;
  let wake = () => {};
  const stop = () => {
    stopping = true;
    consumer?.stop();
    wake();
  };
  member.onRebalance = () => {
    consumer?.stop();
    wake();
  };
  process.on("SIGINT", stop);
  process.on("SIGTERM", stop);
  const printed = { count: 0 };
  try {
    while (!stopping) {
      const assignment = await member.join();
      consumer = await generationConsumer(client, o, assignment);
      if (stopping) consumer.stop();
      const positions = new Map<string, bigint>();
      const ended = await consumeGeneration(consumer, member, o, printed, positions, out);
      await member.commit(positions).catch((error: Error) => {
        process.stderr.write(`quill: commit before rebalance failed: ${error.message}\n`);
      });
      if (ended || (o.limit > 0 && printed.count >= o.limit)) break;
      // No partition (more members than partitions): wait for the next rebalance.
      if (!member.needsRejoin && !stopping) await new Promise<void>((r) => (wake = r));
      wake = () => {};
    }
  } finally {
    process.off("SIGINT", stop);
    process.off("SIGTERM", stop);
    await out.flush();
    await member.leave().catch((error: Error) => {
      process.stderr.write(`quill: leaving group "${o.group}" failed: ${error.message}\n`);
    });
  }
  return 0;
}

/**
 * Prints one generation's records until the consumer stops (rebalance, signal, end, limit);
 * true when the run is over because the assigned partitions reached their ends.
 */
async function consumeGeneration(
  consumer: Consumer,
  member: GroupMember,
  o: GroupConsumeOptions,
  printed: { count: number },
  positions: Map<string, bigint>,
  out: ReturnType<typeof Bun.stdout.writer>,
): Promise<boolean> {
  let lastCommit = performance.now();
  for await (const chunk of consumer.chunks()) {
    out.write(formatChunk(chunk, o, printed, positions));
    await out.flush();
    if (performance.now() - lastCommit > COMMIT_INTERVAL_MS && !member.needsRejoin) {
      await member.commit(positions);
      lastCommit = performance.now();
    }
    if (o.limit > 0 && printed.count >= o.limit) return true;
  }
  // Without a rebalance, chunks() ends when every assigned partition reached its end (-e),
  // on a signal, or at once when nothing is assigned.
  return o.exitAtEnd && !member.needsRejoin;
}

function formatChunk(
  chunk: FetchedChunk,
  o: GroupConsumeOptions,
  printed: { count: number },
  positions: Map<string, bigint>,
): string {
  let text = "";
  let next = chunk.nextOffset;
  for (const r of chunk.records) {
    if (o.limit > 0 && printed.count >= o.limit) {
      next = r.offset;
      break;
    }
    text += o.format(r);
    printed.count++;
    next = r.offset + 1n;
  }
  positions.set(partitionKey(chunk.topic, chunk.partition), next);
  return text;
}
