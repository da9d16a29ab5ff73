/**
 * The compatibility scenario shared by the TypeScript client programs (kafkajs and
 * @platformatic/kafka, run by Node; the kcat driver, run by Bun): the records every client
 * produces, the checks on what it consumed, and the step runner that prints one JSON line per
 * step for scripts/compat.ts.
 * scenario.py, Main.java and main.go implement the same contract in their languages; keep the
 * four in step (record shape, step names, line format).
 *
 * Environment: BOOTSTRAP (host:port), TOPIC, GROUP. Over SASL_SSL (scripts/compat.ts --security
 * sasl_ssl) also SECURITY_PROTOCOL=SASL_SSL, SASL_MECHANISM=SCRAM-SHA-512, SASL_USERNAME,
 * SASL_PASSWORD and SSL_CA_LOCATION (the CA's PEM file); every client the program makes uses
 * them, and the program runs the wrong-password step first. ONLY_STEPS (comma-separated) runs
 * just those steps, the others printing no line (the tests run a few steps per client).
 * Output, one JSON object per stdout line:
 *   {"client": "kafkajs", "version": "2.2.4"}
 *   {"step": "create-topic", "ok": true, "ms": 12, "detail": "..."}
 *   {"step": "produce-zstd", "ok": false, "error": "..."}
 *   {"step": "produce-zstd", "skipped": "n/a: ..."}
 */

import { DEPENDS_ON, type Step } from "./scenario-steps.ts";

export { DEPENDS_ON, STEPS, type Step } from "./scenario-steps.ts";

export const PARTITION_COUNT = 3;
export const RECORDS_PER_CODEC = 10_000;
export const KEY_COUNT = 100;
export const SENTINEL_COUNT = PARTITION_COUNT;
/** Bounds on every wait, so a broken broker fails a step instead of hanging the matrix. */
export const CONSUME_TIMEOUT_MS = 90_000;
export const RESTART_TIMEOUT_MS = 45_000;

/** Read on use, so tests can import the checks without a broker. */
export const env = {
  get bootstrap(): string {
    return requireEnv("BOOTSTRAP");
  },
  get topic(): string {
    return requireEnv("TOPIC");
  },
  get group(): string {
    return requireEnv("GROUP");
  },
  /** The SASL_SSL settings, or undefined for plaintext. */
  get security(): ScenarioSecurity | undefined {
    const protocol = process.env.SECURITY_PROTOCOL;
    if (!protocol) return undefined;
    if (protocol !== "SASL_SSL" || process.env.SASL_MECHANISM !== "SCRAM-SHA-512") {
      throw new Error(`only SASL_SSL with SCRAM-SHA-512 is wired up, not ${protocol}`);
    }
    return {
      username: requireEnv("SASL_USERNAME"),
      password: requireEnv("SASL_PASSWORD"),
      caLocation: requireEnv("SSL_CA_LOCATION"),
    };
  },
};

export interface ScenarioSecurity {
  readonly username: string;
  readonly password: string;
  readonly caLocation: string;
}

function requireEnv(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set (scripts/compat.ts sets it)`);
  return value;
}

/** Record `seq` (0..19,999) of the scenario: the gzip phase is 0..9,999, the zstd phase after. */
export interface ScenarioRecord {
  readonly seq: number;
  readonly key: string;
  readonly value: string;
  readonly headers: ReadonlyArray<readonly [string, string]>;
}

export const CODECS = ["gzip", "zstd"] as const;
export type Codec = (typeof CODECS)[number];

export function keyFor(seq: number): string {
  return `key-${seq % KEY_COUNT}`;
}

export function valueFor(seq: number): string {
  return `value ${seq} of ${keyFor(seq)} ${"abcdefghij".repeat(8)}`;
}

export function codecFor(seq: number): Codec {
  return seq < RECORDS_PER_CODEC ? "gzip" : "zstd";
}

export function recordsFor(codec: Codec): ScenarioRecord[] {
  const first = CODECS.indexOf(codec) * RECORDS_PER_CODEC;
  return Array.from({ length: RECORDS_PER_CODEC }, (_, i) => {
    const seq = first + i;
    return {
      seq,
      key: keyFor(seq),
      value: valueFor(seq),
      headers: [
        ["seq", String(seq)],
        ["codec", codec],
      ],
    };
  });
}

/**
 * The transactions steps use a topic of their own (one partition): an aborted transaction of
 * TXN_RECORDS "aborted <i>" values, then a committed one of "committed <i>", so the log ends at
 * TXN_END_OFFSET (both batches and both markers). consume-transform-produce reads the committed
 * ones in the group `<GROUP>-txn` and writes "out committed <i>" back to the same topic in a
 * transaction that also commits the group's offset (TXN_INPUT_END: after the last committed input).
 */
export const TXN_RECORDS = 5;
export const TXN_END_OFFSET = 2 * TXN_RECORDS + 2;
export const TXN_INPUT_END = 2 * TXN_RECORDS + 1;
export const TXN_WAIT_MS = 30_000;
export const txnTopic = (): string => `${env.topic}-txn`;
export const txnGroup = (): string => `${env.group}-txn`;
export const txnValues = (prefix: "aborted" | "committed" | "out committed"): string[] =>
  Array.from({ length: TXN_RECORDS }, (_, i) => `${prefix} ${i}`);

/** Fails unless a read_committed reader saw exactly `expected`, in order. */
export function checkSeen(what: string, seen: readonly string[], expected: readonly string[]) {
  check(
    JSON.stringify(seen) === JSON.stringify(expected),
    `${what}: read_committed saw ${JSON.stringify(seen)}`,
  );
}

/** One record as a consumer saw it, decoded to strings. */
export interface ConsumedRecord {
  readonly member: number;
  readonly partition: number;
  readonly key: string | null;
  readonly value: string | null;
  readonly headers: ReadonlyArray<readonly [string, string]>;
}

export function isSentinel(record: ConsumedRecord): boolean {
  return record.key?.startsWith("sentinel-") ?? false;
}

/**
 * Checks everything consumed in the group step: each record's key, value and headers, no
 * duplicates, nothing missing, each key in one partition and in order within each member, and
 * both members having received records. Returns the problems found (empty when all is well).
 * `headersPerRecord` is false for kcat, which can only give every record of a run the same
 * headers, so only the codec header is checked there.
 */
export function verifyConsumed(
  records: readonly ConsumedRecord[],
  codecs: readonly Codec[],
  headersPerRecord = true,
): string[] {
  const problems: string[] = [];
  const seen = new Set<number>();
  const lastSeqByMemberKey = new Map<string, number>();
  const partitionByKey = new Map<string, number>();
  const countByMember = new Map<number, number>();
  for (const record of records) {
    countByMember.set(record.member, (countByMember.get(record.member) ?? 0) + 1);
    const seq = Number(/^value (\d+) of /.exec(record.value ?? "")?.[1] ?? Number.NaN);
    if (!Number.isInteger(seq) || !codecs.includes(codecFor(seq))) {
      problems.push(`unexpected record key=${record.key} value=${record.value?.slice(0, 40)}`);
      continue;
    }
    problems.push(...checkRecord(record, seq, headersPerRecord));
    if (seen.has(seq)) problems.push(`record ${seq} delivered twice`);
    seen.add(seq);
    const memberKey = `${record.member}/${record.key}`;
    const last = lastSeqByMemberKey.get(memberKey) ?? -1;
    if (seq <= last) problems.push(`key ${record.key}: record ${seq} after ${last}`);
    lastSeqByMemberKey.set(memberKey, seq);
    const partition = partitionByKey.get(record.key ?? "");
    if (partition !== undefined && partition !== record.partition) {
      problems.push(`key ${record.key} in partitions ${partition} and ${record.partition}`);
    }
    partitionByKey.set(record.key ?? "", record.partition);
  }
  const expected = codecs.length * RECORDS_PER_CODEC;
  if (seen.size !== expected)
    problems.push(`${expected - seen.size} of ${expected} records missing`);
  for (const member of [0, 1]) {
    if (!countByMember.get(member)) problems.push(`member ${member} received no records`);
  }
  return summarize(problems);
}

function checkRecord(record: ConsumedRecord, seq: number, headersPerRecord: boolean): string[] {
  const problems: string[] = [];
  if (record.key !== keyFor(seq)) problems.push(`record ${seq}: key ${record.key}`);
  if (record.value !== valueFor(seq)) problems.push(`record ${seq}: value differs`);
  const expectedHeaders = headersPerRecord
    ? [
        ["seq", String(seq)],
        ["codec", codecFor(seq)],
      ]
    : [["codec", codecFor(seq)]];
  const got = JSON.stringify(record.headers);
  if (got !== JSON.stringify(expectedHeaders)) problems.push(`record ${seq}: headers ${got}`);
  return problems;
}

/**
 * Checks the assignments DescribeGroups reported, one list of the topic's partitions per
 * member: two members, each with some, every partition owned exactly once.
 */
export function checkAssignments(assigned: readonly (readonly number[])[]): string {
  const owned = assigned.flat().sort((x, y) => x - y);
  const all = Array.from({ length: PARTITION_COUNT }, (_, partition) => partition);
  check(assigned.length === 2, `${assigned.length} member assignments`);
  check(
    assigned.every((partitions) => partitions.length > 0),
    `assignments ${JSON.stringify(assigned)}`,
  );
  check(JSON.stringify(owned) === JSON.stringify(all), `assignments ${JSON.stringify(assigned)}`);
  return assigned.map((partitions) => partitions.join("+")).join(" / ");
}

/** Keeps an error line readable: the first few problems and how many there were. */
function summarize(problems: string[]): string[] {
  if (problems.length <= 5) return problems;
  return [...problems.slice(0, 5), `... ${problems.length} problems in all`];
}

/** Runs steps in order, printing one line each; a step whose dependency failed is skipped. */
export class StepRunner {
  private readonly failed = new Set<Step>();

  constructor(client: string, version: string) {
    emit({ client, version });
  }

  /** Marks a step the client cannot do at all (for example kafkajs has no zstd codec). */
  markNotApplicable(step: Step, reason: string): void {
    emit({ step, skipped: `n/a: ${reason}` });
  }

  /** Runs `body`; it returns an optional detail string and throws to fail the step. */
  // biome-ignore lint/suspicious/noConfusingVoidType: bodies without a detail return Promise<void>.
  async run(step: Step, body: () => Promise<string | undefined | void>): Promise<boolean> {
    const only = process.env.ONLY_STEPS?.split(",");
    if (only && !only.includes(step)) return false;
    const blocker = DEPENDS_ON[step].find((dependency) => this.failed.has(dependency));
    if (blocker) {
      this.failed.add(step);
      emit({ step, skipped: `skipped (after ${blocker} failed)` });
      return false;
    }
    const startedMs = Date.now();
    try {
      const detail = await body();
      emit({ step, ok: true, ms: Date.now() - startedMs, ...(detail ? { detail } : {}) });
      return true;
    } catch (error) {
      this.failed.add(step);
      emit({ step, ok: false, ms: Date.now() - startedMs, error: describeError(error) });
      return false;
    }
  }

  hasFailed(step: Step): boolean {
    return this.failed.has(step);
  }
}

export function describeError(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const extra = [error.name !== "Error" ? error.name : "", (error as { type?: string }).type ?? ""]
    .filter(Boolean)
    .join(" ");
  const inner = error instanceof AggregateError ? error.errors[0] : error.cause;
  const cause = inner instanceof Error ? ` (cause: ${describeError(inner)})` : "";
  return `${extra ? `${extra}: ` : ""}${error.message}${cause}`;
}

function emit(line: object): void {
  process.stdout.write(`${JSON.stringify(line)}\n`);
}

/** Fails with `message` unless `condition` holds. */
export function check(condition: boolean, message: string): asserts condition {
  if (!condition) throw new Error(message);
}

/** The programs run under Node (their users' runtime), so no Bun APIs here or in them. */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Polls `probe` until it returns true or the deadline passes. */
export async function waitFor(
  what: string,
  timeoutMs: number,
  probe: () => boolean | Promise<boolean>,
): Promise<void> {
  const deadlineMs = Date.now() + timeoutMs;
  while (!(await probe())) {
    if (Date.now() > deadlineMs)
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(50);
  }
}
