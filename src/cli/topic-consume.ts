/**
 * `quill topic consume TOPIC`: prints records as kcat -C does, from `-o` (default beginning),
 * of every partition or `-p N`, until `-n` records, the end (`-e`), or Ctrl-C. With `-g GROUP`
 * it consumes as a member of the group (`group-consume.ts`); with `-g GROUP -p N` it reads the
 * one partition it was given, starts from the group's committed offset and commits what it
 * printed (at the end and every few seconds) as a simple consumer (generation -1, as Kafka's
 * consumer after assign()), which the group accepts only while it has no active members.
 */

import { ClusterError } from "../client/client-errors.ts";
import type { ClusterClient } from "../client/cluster-client.ts";
import { Consumer, DEFAULT_CONSUMER_OPTIONS } from "../client/consumer.ts";
import { commitOffsets, fetchCommitted } from "../client/group-offsets.ts";
import {
  describeTopics,
  LATEST_TIMESTAMP,
  listOffsets,
  type OffsetMap,
  type PartitionInfo,
  partitionKey,
} from "../client/partition-offsets.ts";
import type { CommandArgs } from "./command-args.ts";
import { clientSettings, groupMemberOptions, withClient } from "./connection-options.ts";
import { groupConsume } from "./group-consume.ts";
import { isolationLevel } from "./isolation-level.ts";
import { jsonText } from "./output.ts";
import { compileFormat, type RecordFormatter, recordJson } from "./record-format.ts";
import { parseStart, resolveStarts, type StartSpec } from "./start-offsets.ts";

const COMMIT_INTERVAL_MS = 5_000;

function formatter(args: CommandArgs): RecordFormatter {
  const format = args.get("--format");
  if (format === "json") return (r) => `${jsonText(recordJson(r))}\n`;
  return compileFormat(format === undefined || format === "table" ? "%s\\n" : format);
}

async function startOffsets(
  client: ClusterClient,
  args: CommandArgs,
  partitions: readonly PartitionInfo[],
  spec: StartSpec,
): Promise<OffsetMap> {
  const group = args.get("--group");
  const starts = await resolveStarts(client, partitions, spec);
  if (group === undefined || args.has("--offset")) return starts;
  const topics = [{ name: partitions[0]!.topic, partitions: partitions.map((p) => p.partition) }];
  const committed = await fetchCommitted(client, group, topics);
  for (const [key, offset] of committed) starts.set(key, offset);
  return starts;
}

export async function topicConsume(args: CommandArgs): Promise<number> {
  const [topic] = args.expect(["TOPIC"]);
  const format = formatter(args);
  const limit = args.int("--count", 0, 0);
  const only = args.has("--partition") ? args.int("--partition", 0, 0, 1_000_000) : null;
  const spec = parseStart(args.get("--offset") ?? "beginning", "-o");
  const level = isolationLevel(args);
  const group = args.get("--group");
  if (group !== undefined && only === null) {
    const member = groupMemberOptions(clientSettings(args));
    const exitAtEnd = args.has("--exit");
    const o = { topic, group, format, limit, spec, exitAtEnd, member, isolationLevel: level };
    return withClient(args, (client) => groupConsume(client, o));
  }
  return withClient(args, async (client) => {
    const [info] = await describeTopics(client, [topic]);
    const partitions = info!.partitions.filter((p) => only === null || p.partition === only);
    if (partitions.length === 0) throw new ClusterError(3, `for ${topic} partition ${only}`);
    const starts = await startOffsets(client, args, partitions, spec);
    const ends = args.has("--exit")
      ? await listOffsets(client, partitions, LATEST_TIMESTAMP, level)
      : null;
    const consumer = new Consumer(client, partitions, starts, ends, {
      ...DEFAULT_CONSUMER_OPTIONS,
      isolationLevel: level,
    });
    return consumeLoop(client, consumer, format, limit, args.get("--group"));
  });
}

async function consumeLoop(
  client: ClusterClient,
  consumer: Consumer,
  format: RecordFormatter,
  limit: number,
  group: string | undefined,
): Promise<number> {
  const out = Bun.stdout.writer();
  const positions = new Map<string, bigint>();
  let printed = 0;
  let stopping = false;
  const stop = () => {
    stopping = true;
    consumer.stop();
  };
  process.on("SIGINT", stop);
  process.on("SIGTERM", stop);
  let lastCommit = performance.now();
  try {
    for await (const chunk of consumer.chunks()) {
      let text = "";
      let next = chunk.nextOffset;
      for (const r of chunk.records) {
        if (limit > 0 && printed >= limit) {
          next = r.offset;
          break;
        }
        text += format(r);
        printed++;
        next = r.offset + 1n;
      }
      out.write(text);
      await out.flush();
      positions.set(partitionKey(chunk.topic, chunk.partition), next);
      if (group !== undefined && performance.now() - lastCommit > COMMIT_INTERVAL_MS) {
        await commitOffsets(client, group, positions);
        lastCommit = performance.now();
      }
      if (stopping || (limit > 0 && printed >= limit)) break;
    }
    if (group !== undefined) await commitOffsets(client, group, positions);
  } finally {
    process.off("SIGINT", stop);
    process.off("SIGTERM", stop);
    await out.flush();
  }
  return 0;
}
