/**
 * The compatibility scenario with kcat, a second librdkafka client, driven as a shell user would:
 * `kcat -P` with -z and -H to produce, two `kcat -G` balanced consumers for the group, `kcat -Q`
 * for offsets. kcat has no admin commands, so its topic comes from auto-creation (the matrix's
 * broker runs with num.partitions=3) and describe-group and delete-topic are not applicable; it
 * commits on its own (auto-commit, and a final commit when it exits), so the restart step is
 * what checks its commits. `-H` gives every record of a run the same headers, so only the codec
 * header is checked per record.
 */
import type { Subprocess } from "bun";
import {
  CONSUME_TIMEOUT_MS,
  type Codec,
  type ConsumedRecord,
  check,
  env,
  isSentinel,
  PARTITION_COUNT,
  RECORDS_PER_CODEC,
  RESTART_TIMEOUT_MS,
  recordsFor,
  SENTINEL_COUNT,
  StepRunner,
  verifyConsumed,
  waitFor,
} from "../support/scenario.ts";

const KCAT = "kcat";
const FORMAT = "%p\\t%k\\t%s\\t%h\\n";

function kcatVersion(): string {
  const result = Bun.spawnSync([KCAT, "-V"]);
  const text = new TextDecoder().decode(result.stdout) + new TextDecoder().decode(result.stderr);
  const match = /Version (\S+) .*librdkafka (\S+)/.exec(text);
  return match ? `${match[1]} (librdkafka ${match[2]})` : "unknown";
}

/** Runs kcat to completion with `input` on stdin; throws with its stderr when it fails. */
async function kcat(args: string[], input = ""): Promise<string> {
  const child = Bun.spawn([KCAT, "-b", env.bootstrap, ...args], {
    stdin: "pipe",
    stdout: "pipe",
    stderr: "pipe",
  });
  child.stdin.write(input);
  await child.stdin.end();
  const timer = setTimeout(() => child.kill("SIGKILL"), 60_000);
  const [stdout, stderr, code] = await Promise.all([
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
    child.exited,
  ]);
  clearTimeout(timer);
  if (code !== 0)
    throw new Error(`kcat ${args.join(" ")} exited with ${code}: ${stderr.trim().slice(-300)}`);
  return stdout;
}

async function produce(codec: Codec): Promise<string> {
  const lines = recordsFor(codec)
    .map((record) => `${record.key}\t${record.value}\n`)
    .join("");
  await kcat(["-P", "-t", env.topic, "-K", "\t", "-z", codec, "-H", `codec=${codec}`], lines);
  return `${RECORDS_PER_CODEC} records`;
}

/** A `kcat -G` group member whose output lines are parsed as they arrive. */
class Member {
  readonly records: ConsumedRecord[] = [];
  stderr = "";
  exitCode: number | null = null;
  private readonly child: Subprocess<"ignore", "pipe", "pipe">;

  constructor(
    readonly index: number,
    exitAtEnd: boolean,
  ) {
    // -u: unbuffered output, or records sit in stdio's buffer until kcat exits.
    const args = [
      "-b",
      env.bootstrap,
      "-G",
      env.group,
      "-X",
      "auto.offset.reset=earliest",
      "-u",
      "-f",
      FORMAT,
    ];
    this.child = Bun.spawn([KCAT, ...args, ...(exitAtEnd ? ["-e"] : []), env.topic], {
      stdin: "ignore",
      stdout: "pipe",
      stderr: "pipe",
    });
    void this.readStdout();
    void this.readStderr();
    void this.child.exited.then((code) => {
      this.exitCode = code;
    });
  }

  get assigned(): boolean {
    return /assigned: /.test(this.stderr);
  }

  private async readStdout(): Promise<void> {
    let pending = "";
    for await (const chunk of this.child.stdout.pipeThrough(new TextDecoderStream())) {
      const lines = (pending + chunk).split("\n");
      pending = lines.pop() ?? "";
      for (const line of lines) this.records.push(this.parse(line));
    }
  }

  private async readStderr(): Promise<void> {
    for await (const chunk of this.child.stderr.pipeThrough(new TextDecoderStream())) {
      this.stderr += chunk;
      process.stderr.write(chunk);
    }
  }

  private parse(line: string): ConsumedRecord {
    const [partition, key, value, headers] = line.split("\t");
    const pairs = (headers ?? "")
      .split(",")
      .filter(Boolean)
      .map((pair) => {
        const at = pair.indexOf("=");
        return [pair.slice(0, at), pair.slice(at + 1)] as const;
      });
    return {
      member: this.index,
      partition: Number(partition),
      key: key ?? null,
      value: value ?? null,
      headers: pairs,
    };
  }

  /** SIGTERM makes kcat leave the group cleanly, committing what it consumed. */
  async stop(): Promise<void> {
    this.child.kill("SIGTERM");
    await this.child.exited;
  }

  lastError(): string {
    return (
      this.stderr
        .trim()
        .split("\n")
        .filter((line) => /ERROR|error/i.test(line))
        .pop() ?? ""
    );
  }
}

function failIfExited(members: readonly Member[], what: string): void {
  const crashed = members.find((member) => member.exitCode !== null && member.exitCode !== 0);
  if (crashed)
    throw new Error(
      `kcat -G exited with ${crashed.exitCode} waiting for ${what}: ${crashed.lastError()}`,
    );
}

async function waitForMembers(
  members: readonly Member[],
  what: string,
  timeoutMs: number,
  done: () => boolean,
) {
  try {
    await waitFor(what, timeoutMs, () => {
      failIfExited(members, what);
      return done();
    });
  } catch (error) {
    const last = members.map((member) => member.lastError()).find(Boolean);
    throw new Error(`${(error as Error).message}${last ? `; last kcat error: ${last}` : ""}`);
  }
}

async function listOffsets(at: -1 | -2): Promise<number[]> {
  const partitions = Array.from({ length: PARTITION_COUNT }, (_, p) => [
    "-t",
    `${env.topic}:${p}:${at}`,
  ]).flat();
  const output = await kcat(["-Q", ...partitions]);
  const offsets = [...output.matchAll(/\[(\d+)\]\s+offset (-?\d+)/g)].map((m) => [
    Number(m[1]),
    Number(m[2]),
  ]);
  check(offsets.length === PARTITION_COUNT, `kcat -Q printed: ${output.trim()}`);
  return offsets.sort((a, b) => (a[0] ?? 0) - (b[0] ?? 0)).map(([, offset]) => offset ?? -1);
}

async function main(): Promise<void> {
  const steps = new StepRunner("kcat", kcatVersion());
  let producedCount = 0;
  steps.markNotApplicable(
    "create-topic",
    "kcat has no admin commands; the topic is auto-created with num.partitions=3",
  );
  await steps.run("produce-gzip", async () => {
    const detail = await produce("gzip");
    producedCount += RECORDS_PER_CODEC;
    const metadata = JSON.parse(await kcat(["-L", "-J", "-t", env.topic]));
    const partitions = metadata.topics?.[0]?.partitions?.length;
    check(partitions === PARTITION_COUNT, `auto-created topic has ${partitions} partitions`);
    return detail;
  });
  await steps.run("produce-zstd", async () => {
    const detail = await produce("zstd");
    producedCount += RECORDS_PER_CODEC;
    return detail;
  });

  await steps.run("consume-group", async () => {
    const members = [new Member(0, true), new Member(1, true)];
    const all = () => members.flatMap((member) => member.records);
    const exited = () => members.every((member) => member.exitCode !== null);
    try {
      await waitForMembers(members, "both members to be assigned", RESTART_TIMEOUT_MS, () =>
        members.every((member) => member.assigned),
      );
      await waitForMembers(members, "both members to reach the end", CONSUME_TIMEOUT_MS, exited);
    } finally {
      await Promise.all(members.map((member) => member.stop()));
    }
    const problems = verifyConsumed(all(), ["gzip", "zstd"], false);
    check(problems.length === 0, problems.join("; "));
    return members.map((member) => `member ${member.index}: ${member.records.length}`).join(", ");
  });
  steps.markNotApplicable(
    "commit",
    "kcat -G commits by itself when it exits; restart-no-redelivery checks it",
  );

  await steps.run("restart-no-redelivery", async () => {
    const members = [new Member(0, false), new Member(1, false)];
    try {
      await waitForMembers(members, "both members to be assigned", RESTART_TIMEOUT_MS, () =>
        members.every((member) => member.assigned),
      );
      for (let partition = 0; partition < SENTINEL_COUNT; partition++) {
        await kcat(
          ["-P", "-t", env.topic, "-p", String(partition), "-K", "\t"],
          `sentinel-${partition}\tsentinel\n`,
        );
      }
      producedCount += SENTINEL_COUNT;
      const all = () => members.flatMap((member) => member.records);
      await waitForMembers(
        members,
        "the sentinels",
        RESTART_TIMEOUT_MS,
        () => all().filter(isSentinel).length >= SENTINEL_COUNT,
      );
      const again = all().filter((record) => !isSentinel(record));
      check(again.length === 0, `${again.length} records delivered again after the restart`);
    } finally {
      await Promise.all(members.map((member) => member.stop()));
    }
  });
  steps.markNotApplicable("describe-group", "kcat cannot describe groups");

  await steps.run("list-offsets", async () => {
    const earliest = await listOffsets(-2);
    const latest = await listOffsets(-1);
    check(
      earliest.every((offset) => offset === 0),
      `earliest ${earliest}`,
    );
    const total = latest.reduce((sum, offset) => sum + offset, 0);
    check(total === producedCount, `latest offsets add up to ${total}, produced ${producedCount}`);
    return `earliest 0, latest ${latest.join("/")}`;
  });
  steps.markNotApplicable(
    "transactions",
    "kcat -X transactional.id commits all of stdin as one transaction; it cannot abort one",
  );
  steps.markNotApplicable(
    "consume-transform-produce",
    "kcat cannot send consumer offsets to a transaction",
  );
  steps.markNotApplicable("delete-topic", "kcat has no admin commands");
}

await main();
process.exit(0);
