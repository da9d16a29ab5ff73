/**
 * `quill group list|describe|seek|delete`, as kafka-consumer-groups.sh: describe shows each
 * partition's committed offset, log end offset and lag with the member that owns it, and the
 * total lag; seek resets a stopped group's offsets (or only prints them with --dry-run).
 */
import { ClusterError, check } from "../client/client-errors.ts";
import type { ClusterClient } from "../client/cluster-client.ts";
import {
  commitOffsets,
  describeGroup,
  fetchCommitted,
  findCoordinator,
} from "../client/group-offsets.ts";
import {
  describeTopics,
  LATEST_TIMESTAMP,
  listOffsets,
  type PartitionInfo,
  partitionKey,
} from "../client/partition-offsets.ts";
import { ErrorCode } from "../protocol/errors.ts";
import { ApiKey, decodeConsumerProtocolAssignment } from "../protocol/generated/index.ts";
import { Reader } from "../protocol/reader.ts";
import { UsageError } from "./args.ts";
import type { CommandArgs } from "./command-args.ts";
import { withClient } from "./connection-options.ts";
import { outputFormat, printJson, printTable } from "./output.ts";
import { parseStart, resolveStarts } from "./start-offsets.ts";

export async function groupList(args: CommandArgs): Promise<number> {
  args.expect([]);
  return withClient(args, async (client) => {
    const md = await client.metadata([]);
    const groups = new Map<string, { group: string; state: string; protocolType: string }>();
    for (const b of md.brokers) {
      const response = await client.request(ApiKey.ListGroups, {}, b.nodeId);
      check(response.errorCode, `listing groups on broker ${b.nodeId}`);
      for (const g of response.groups) {
        groups.set(g.groupId, {
          group: g.groupId,
          state: g.groupState,
          protocolType: g.protocolType,
        });
      }
    }
    const rows = [...groups.values()].sort((a, b) => a.group.localeCompare(b.group));
    if (outputFormat(args) === "json") printJson(rows);
    else
      printTable(
        ["GROUP", "STATE", "PROTOCOL-TYPE"],
        rows.map((g) => [g.group, g.state, g.protocolType]),
      );
    return 0;
  });
}

/** `topic:partition` to the member owning it, from the consumer protocol assignments. */
function owners(
  group: Awaited<ReturnType<typeof describeGroup>>,
): Map<string, { member: string; host: string; clientId: string }> {
  const out = new Map<string, { member: string; host: string; clientId: string }>();
  if (group.protocolType !== "consumer") return out;
  for (const m of group.members) {
    if (m.memberAssignment.length < 2) continue;
    const r = new Reader(m.memberAssignment);
    const version = r.int16();
    const assignment = decodeConsumerProtocolAssignment(r, Math.min(version, 3));
    for (const tp of assignment.assignedPartitions) {
      for (const p of tp.partitions) {
        out.set(partitionKey(tp.topic, p), {
          member: m.memberId,
          host: m.clientHost,
          clientId: m.clientId,
        });
      }
    }
  }
  return out;
}

/** Each partition the group committed or owns: committed offset, log end, lag, owner. */
async function lagRows(
  client: ClusterClient,
  name: string,
  group: Awaited<ReturnType<typeof describeGroup>>,
) {
  const committed = await fetchCommitted(client, name, null);
  const assigned = owners(group);
  const keys = [...new Set([...committed.keys(), ...assigned.keys()])].sort();
  const topics = [...new Set(keys.map((k) => k.slice(0, k.lastIndexOf(":"))))];
  const infos = (await describeTopics(client, topics)).flatMap((t) => t.partitions);
  const wanted = infos.filter((p) => keys.includes(partitionKey(p.topic, p.partition)));
  const ends = await listOffsets(client, wanted, LATEST_TIMESTAMP);
  return keys.map((key) => {
    const at = key.lastIndexOf(":");
    const current = committed.get(key) ?? null;
    const end = ends.get(key) ?? null;
    const owner = assigned.get(key);
    return {
      topic: key.slice(0, at),
      partition: Number(key.slice(at + 1)),
      currentOffset: current,
      logEndOffset: end,
      lag: current !== null && end !== null ? end - current : null,
      memberId: owner?.member ?? null,
      host: owner?.host ?? null,
      clientId: owner?.clientId ?? null,
    };
  });
}

export async function groupDescribe(args: CommandArgs): Promise<number> {
  const [name] = args.expect(["GROUP"]);
  return withClient(args, async (client) => {
    const group = await describeGroup(client, name);
    if (group.groupState === "Dead") {
      throw new ClusterError(
        ErrorCode.GROUP_ID_NOT_FOUND,
        `for group "${name}"`,
        "the group does not exist",
      );
    }
    const partitions = await lagRows(client, name, group);
    const totalLag = partitions.reduce((n, p) => n + (p.lag ?? 0n), 0n);
    const result = {
      group: name,
      state: group.groupState,
      protocol: group.protocolData,
      members: group.members.length,
      partitions,
      totalLag,
    };
    if (outputFormat(args) === "json") {
      printJson(result);
      return 0;
    }
    process.stdout.write(
      `group ${name}  state ${group.groupState}  members ${group.members.length}\n`,
    );
    printTable(
      [
        "TOPIC",
        "PARTITION",
        "CURRENT-OFFSET",
        "LOG-END-OFFSET",
        "LAG",
        "CONSUMER-ID",
        "HOST",
        "CLIENT-ID",
      ],
      partitions.map((p) => [
        p.topic,
        p.partition,
        p.currentOffset,
        p.logEndOffset,
        p.lag,
        p.memberId,
        p.host,
        p.clientId,
      ]),
    );
    process.stdout.write(`total lag ${totalLag}\n`);
    return 0;
  });
}

async function seekPartitions(
  client: ClusterClient,
  group: string,
  topics: readonly string[],
): Promise<PartitionInfo[]> {
  let names = topics;
  if (names.length === 0) {
    const committed = await fetchCommitted(client, group, null);
    names = [...new Set([...committed.keys()].map((k) => k.slice(0, k.lastIndexOf(":"))))];
    if (names.length === 0) throw new UsageError(`group "${group}" has no offsets; name --topic`);
  }
  return (await describeTopics(client, names)).flatMap((t) => t.partitions);
}

export async function groupSeek(args: CommandArgs): Promise<number> {
  const [name] = args.expect(["GROUP"]);
  const to = args.get("--to");
  if (to === undefined) throw new UsageError("seek needs --to earliest|latest|OFFSET|@TIME");
  const spec = parseStart(to, "--to");
  return withClient(args, async (client) => {
    const group = await describeGroup(client, name);
    if (group.groupState !== "Empty" && group.groupState !== "Dead") {
      throw new ClusterError(
        ErrorCode.NON_EMPTY_GROUP,
        `seeking group "${name}" (state ${group.groupState})`,
        "the group has active members",
      );
    }
    const partitions = await seekPartitions(client, name, args.all("--topic"));
    const offsets = await resolveStarts(client, partitions, spec);
    const dryRun = args.has("--dry-run");
    if (!dryRun) await commitOffsets(client, name, offsets);
    const rows = partitions.map((p) => ({
      topic: p.topic,
      partition: p.partition,
      newOffset: offsets.get(partitionKey(p.topic, p.partition))!,
    }));
    if (outputFormat(args) === "json") printJson({ group: name, dryRun, offsets: rows });
    else {
      printTable(
        ["TOPIC", "PARTITION", "NEW-OFFSET"],
        rows.map((r) => [r.topic, r.partition, r.newOffset]),
      );
      process.stdout.write(
        dryRun ? "dry run: nothing committed\n" : `committed for group ${name}\n`,
      );
    }
    return 0;
  });
}

export async function groupDelete(args: CommandArgs): Promise<number> {
  if (args.positionals.length === 0) throw new UsageError("expected GROUP...");
  return withClient(args, async (client) => {
    for (const name of args.positionals) {
      const coordinator = await findCoordinator(client, name);
      const response = await client.request(
        ApiKey.DeleteGroups,
        { groupsNames: [name] },
        coordinator,
      );
      for (const r of response.results) check(r.errorCode, `deleting group "${r.groupId}"`);
    }
    if (outputFormat(args) === "json") printJson({ deleted: args.positionals });
    else for (const g of args.positionals) process.stdout.write(`deleted group ${g}\n`);
    return 0;
  });
}
