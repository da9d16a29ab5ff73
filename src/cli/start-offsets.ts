/**
 * Where a consume or export starts, from `-o`/`--from`: `beginning`, `end`, an offset `N`,
 * `-N` (N before the end), or `@TIME` / a time (epoch ms or ISO-8601) looked up with ListOffsets
 * as Kafka's offsetsForTimes does.
 */
import type { ClusterClient } from "../client/cluster-client.ts";
import {
  EARLIEST_TIMESTAMP,
  LATEST_TIMESTAMP,
  listOffsets,
  type OffsetMap,
  type PartitionInfo,
  partitionKey,
} from "../client/partition-offsets.ts";
import { UsageError } from "./args.ts";

export type StartSpec =
  | { readonly kind: "beginning" | "end" }
  | { readonly kind: "offset"; readonly offset: bigint }
  | { readonly kind: "fromEnd"; readonly count: bigint }
  | { readonly kind: "time"; readonly timestampMs: bigint };

/** Epoch milliseconds, or an ISO-8601 date/time. */
export function parseTime(raw: string, flag: string): bigint {
  if (/^\d+$/.test(raw)) return BigInt(raw);
  const ms = Date.parse(raw);
  if (Number.isNaN(ms)) {
    throw new UsageError(`${flag}: "${raw}" is neither epoch milliseconds nor an ISO-8601 time`);
  }
  return BigInt(ms);
}

export function parseStart(raw: string, flag: string): StartSpec {
  if (raw === "beginning" || raw === "earliest") return { kind: "beginning" };
  if (raw === "end" || raw === "latest") return { kind: "end" };
  if (/^\d+$/.test(raw)) return { kind: "offset", offset: BigInt(raw) };
  if (/^-\d+$/.test(raw)) return { kind: "fromEnd", count: -BigInt(raw) };
  if (raw.startsWith("@")) return { kind: "time", timestampMs: parseTime(raw.slice(1), flag) };
  if (/^\d{4}-\d\d-\d\d/.test(raw)) return { kind: "time", timestampMs: parseTime(raw, flag) };
  throw new UsageError(`${flag} expects beginning, end, an offset, -N, or @TIME, got "${raw}"`);
}

/** The first offset to read in each partition; explicit offsets are clamped to the log. */
export async function resolveStarts(
  client: ClusterClient,
  partitions: readonly PartitionInfo[],
  spec: StartSpec,
): Promise<OffsetMap> {
  if (spec.kind === "time") return listOffsets(client, partitions, spec.timestampMs);
  const earliest = await listOffsets(client, partitions, EARLIEST_TIMESTAMP);
  if (spec.kind === "beginning") return earliest;
  const latest = await listOffsets(client, partitions, LATEST_TIMESTAMP);
  if (spec.kind === "end") return latest;
  const out: OffsetMap = new Map();
  const back = spec.kind === "fromEnd" ? spec.count : 0n;
  for (const p of partitions) {
    const key = partitionKey(p.topic, p.partition);
    const low = earliest.get(key)!;
    const high = latest.get(key)!;
    const wanted = spec.kind === "offset" ? spec.offset : high - back;
    out.set(key, wanted < low ? low : wanted > high ? high : wanted);
  }
  return out;
}
