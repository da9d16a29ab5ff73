// `scripts/chaos [--quick] [--seed N] [--faults-per-kind N] [--hold-ms N] [--brokers 3-5]`
// (as root)
//
// A ZooKeeper ensemble (3 nodes) and 3 to 5 Quill brokers (3 by default; the topic's replication
// factor is 3 whatever the count), each in its own network namespace on one bridge, and the
// client (scripts/chaos-harness/client.ts) in another. Faults are drawn from the seed, one at a
// time: applied, held, healed, then the cluster gets time to recover.
//   leader-cut      the leader of a partition loses ZooKeeper and the other brokers, not clients
//   follower-cut    a follower of that partition loses everything
//   controller-cut  the controller loses everything
//   zk-minority     one ZooKeeper node loses the other two and the brokers
//   netem           100 ms delay and 10% loss on a broker's link (tc netem; skipped when the
//                   kernel has no netem, which is reported)
//   loss            10% of the packets lost each way on a partition leader's link (nftables)
//   loss-one-way    25% lost one way only, to or from a partition leader (nftables)
//   kill9           kill -9 of a broker, restarted after the hold
//   sigstop         SIGSTOP of a broker, SIGCONT after the hold
//   disk-full       a broker's data dir (a 256 MiB tmpfs) is filled, then freed
// and combinations of two at once (COMBINATIONS in cluster.ts): leader-cut+zk-minority,
// kill9+follower-cut, sigstop+controller-cut, applied in that order, healed in reverse.
// Partitions are blackhole routes inside the namespace cut off. At the end the network is healed,
// the client stops, and the checker (scripts/chaos-harness/checker.ts) reads the client's
// records and the brokers' segment files. The last line is
// `chaos: faults=N acked=M lost=L duplicates=D dirty_reads=R`; the exit code is 1 when any of
// those, a reordering, differing replicas or a committed offset moving back was found.
import { spawnSync } from "node:child_process";
import {
  appendFileSync,
  closeSync,
  existsSync,
  mkdtempSync,
  openSync,
  readFileSync,
  readSync,
  rmSync,
  statSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ErrorCode } from "../src/protocol/errors.ts";
import { ApiKey } from "../src/protocol/generated/index.ts";
import { KafkaClient } from "../test/support/kafka-client.ts";
import { checkAll, type FaultRecord, printReport } from "./chaos-harness/checker.ts";
import {
  brokerIds,
  brokerIp,
  brokerNs,
  CLIENT_IP,
  CLIENT_NS,
  COMBINATIONS,
  type CombinedKind,
  cut,
  HOST_IP,
  holdFor,
  type Kind,
  LOSS_PERCENT,
  loss,
  mountDataDir,
  netemAvailable,
  nftablesAvailable,
  ONE_WAY_LOSS_PERCENT,
  type Options,
  PARTITIONS,
  type Proc,
  parseOptions,
  REPLICATION_FACTOR,
  REPO,
  random,
  type SingleKind,
  setUpNetwork,
  sh,
  start,
  startBroker,
  startZooKeeper,
  TOPIC,
  tearDownNetwork,
  ZK_IDS,
  zkIp,
  zkNs,
} from "./chaos-harness/cluster.ts";

interface Run {
  readonly dir: string;
  /** The brokers' ids, 1 to `--brokers`. */
  readonly ids: readonly number[];
  readonly brokers: Map<number, Proc>;
  readonly dataDirs: Map<number, string>;
  readonly zooKeepers: Proc[];
  readonly notes: string[];
  client: Proc | null;
  /** Set by the first SIGINT or SIGTERM: no new fault starts, and what ran is checked. */
  stopping: boolean;
  /** One-minute load averages sampled before each fault. */
  readonly loads: number[];
  /** partition -> when the client last had it acknowledged. */
  readonly acks: () => Map<number, number>;
}

const loadAverage = () => Number(readFileSync("/proc/loadavg", "utf8").split(" ")[0]);

interface ClusterView {
  controller: number;
  leaders: Map<number, number>;
  isr: Map<number, number[]>;
  brokers: number;
}

/** The metadata of the first of `ids` that answers within 3 s. */
async function metadata(ids: readonly number[]): Promise<ClusterView | null> {
  for (const id of ids) {
    const client = await KafkaClient.connect(9092, brokerIp(id)).catch(() => null);
    if (client === null) continue;
    try {
      const m = await Promise.race([
        client.request(ApiKey.Metadata, 12, { topics: null, allowAutoTopicCreation: false }),
        Bun.sleep(3000).then(() => null),
      ]);
      if (m === null) continue;
      const t = m.topics.find((x) => x.name === TOPIC);
      const leaders = new Map((t?.partitions ?? []).map((p) => [p.partitionIndex, p.leaderId]));
      const isr = new Map((t?.partitions ?? []).map((p) => [p.partitionIndex, p.isrNodes]));
      return { controller: m.controllerId, leaders, isr, brokers: m.brokers.length };
    } catch {
    } finally {
      client.close();
    }
  }
  return null;
}

async function waitFor(what: string, timeoutMs: number, ok: () => Promise<boolean>) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await ok().catch(() => false)) return true;
    await Bun.sleep(250);
  }
  console.error(`chaos: gave up waiting for ${what} after ${timeoutMs} ms`);
  return false;
}

const whole = (m: ClusterView | null, brokers: number): m is ClusterView =>
  m !== null &&
  m.brokers === brokers &&
  m.leaders.size === PARTITIONS &&
  [...m.isr.values()].every((isr) => isr.length === REPLICATION_FACTOR);

/**
 * Every broker answers, all name the same leaders, and every ISR is full. Asking one broker is
 * not enough: one that was frozen or cut off answers with what it knew before the fault.
 */
const healthy = async (ids: readonly number[]) => {
  const views = await Promise.all(ids.map((id) => metadata([id])));
  const leaders = (m: ClusterView) => JSON.stringify([...m.leaders].sort());
  const first = views[0];
  return views.every((m) => whole(m, ids.length) && leaders(m) === leaders(first!));
};

/**
 * When the client last had each partition acknowledged, from acked.jsonl read on from where the
 * last call stopped (the file grows to tens of MB).
 */
function ackTracker(path: string): () => Map<number, number> {
  const last = new Map<number, number>();
  let position = 0;
  let rest = "";
  return () => {
    if (!existsSync(path)) return last;
    const size = statSync(path).size;
    if (size <= position) return last;
    const fd = openSync(path, "r");
    const bytes = Buffer.alloc(size - position);
    readSync(fd, bytes, 0, bytes.length, position);
    closeSync(fd);
    position = size;
    const lines = (rest + bytes.toString("utf8")).split("\n");
    rest = lines.pop()!;
    for (const line of lines) {
      const a = JSON.parse(line) as { partition: number; atMs: number };
      last.set(a.partition, Math.max(last.get(a.partition) ?? 0, a.atMs));
    }
    return last;
  };
}

async function createTopic(): Promise<void> {
  const client = await KafkaClient.connect(9092, brokerIp(1));
  try {
    const r = await client.request(ApiKey.CreateTopics, 7, {
      topics: [{ name: TOPIC, numPartitions: PARTITIONS, replicationFactor: REPLICATION_FACTOR }],
      timeoutMs: 10_000,
    });
    const code = r.topics[0]!.errorCode;
    if (code !== ErrorCode.NONE && code !== ErrorCode.TOPIC_ALREADY_EXISTS) {
      throw new Error(`creating ${TOPIC}: error ${code}`);
    }
  } finally {
    client.close();
  }
}

async function startAll(run: Run): Promise<void> {
  setUpNetwork(run.ids.length);
  for (const id of ZK_IDS) run.zooKeepers.push(startZooKeeper(run.dir, id));
  for (const id of run.ids) {
    run.dataDirs.set(id, mountDataDir(run.dir, id));
    run.brokers.set(id, startBroker(run.dir, id));
  }
  const up = await waitFor(`${run.ids.length} brokers`, 120_000, async () => {
    for (const id of run.ids) restartIfDead(run, id);
    return (await metadata(run.ids))?.brokers === run.ids.length;
  });
  if (!up) throw new Error("the cluster did not start");
  await createTopic();
  await waitFor("a healthy topic", 60_000, () => healthy(run.ids));
  const bootstrap = run.ids.map((id) => `${brokerIp(id)}:9092`).join(",");
  const argv = [process.execPath, join(REPO, "scripts", "chaos-harness", "client.ts")];
  run.client = start(
    CLIENT_NS,
    [...argv, bootstrap, TOPIC, String(PARTITIONS), run.dir],
    join(run.dir, "client.log"),
  );
}

function restartIfDead(run: Run, id: number): void {
  const proc = run.brokers.get(id)!;
  if (spawnSync("kill", ["-0", String(proc.pid)]).status === 0) return;
  run.brokers.set(id, startBroker(run.dir, id));
}

/** Applies one fault or a combination; returns what heals it and a description of the target. */
async function apply(run: Run, kind: Kind, pick: () => number): Promise<[() => void, string]> {
  if (!(kind in COMBINATIONS)) return await applyOne(run, kind as SingleKind, pick);
  const heals: (() => void)[] = [];
  const targets: string[] = [];
  // The second fault picks another broker than the first: two faults, not one twice.
  const hit = new Set<number>();
  for (const part of COMBINATIONS[kind as CombinedKind]) {
    const [heal, target] = await applyOne(run, part, pick, hit);
    heals.unshift(heal);
    targets.push(`${part} on ${target}`);
  }
  const healAll = () => {
    for (const heal of heals) heal();
  };
  return [healAll, targets.join(", ")];
}

/** One fault; `hit` holds the brokers earlier faults of a combination took, and gets its own. */
async function applyOne(
  run: Run,
  kind: SingleKind,
  pick: () => number,
  hit = new Set<number>(),
): Promise<[() => void, string]> {
  const m = await metadata(run.ids);
  const partition = Math.floor(pick() * PARTITIONS);
  const leader = m?.leaders.get(partition) ?? 1;
  const spare = run.ids.filter((b) => !hit.has(b));
  const onLeader = ["leader-cut", "kill9", "sigstop", "disk-full", "loss", "loss-one-way"];
  if (onLeader.includes(kind)) {
    hit.add(leader);
  }
  const others = (id: number) => run.ids.filter((b) => b !== id).map(brokerIp);
  const zks = ZK_IDS.map(zkIp);
  const brokerPid = (id: number) => run.brokers.get(id)!.pid;
  switch (kind) {
    case "leader-cut":
      return [cut(brokerNs(leader), [...zks, ...others(leader)]), `broker ${leader}`];
    case "follower-cut": {
      // A replica of the partition that is not its leader (its ISR, else any other broker).
      const isr = (m?.isr.get(partition) ?? []).filter((b) => b !== leader && !hit.has(b));
      const candidates = isr.length > 0 ? isr : spare.filter((b) => b !== leader);
      const follower = candidates[Math.floor(pick() * candidates.length)]!;
      hit.add(follower);
      return [
        cut(brokerNs(follower), [...zks, ...others(follower), CLIENT_IP]),
        `broker ${follower}`,
      ];
    }
    case "controller-cut": {
      // When a combination's first fault took the controller, another broker is cut instead.
      const known = m?.controller ?? 1;
      const c = hit.has(known) ? spare[Math.floor(pick() * spare.length)]! : known;
      hit.add(c);
      return [cut(brokerNs(c), [...zks, ...others(c), CLIENT_IP]), `broker ${c}`];
    }
    case "zk-minority": {
      const z = ZK_IDS[Math.floor(pick() * 3)]!;
      const rest = [...zks.filter((ip) => ip !== zkIp(z)), ...run.ids.map(brokerIp)];
      return [cut(zkNs(z), rest), `zookeeper ${z}`];
    }
    case "netem": {
      const b = run.ids[Math.floor(pick() * run.ids.length)]!;
      sh(`tc qdisc add dev ${brokerNs(b)}h root netem delay 100ms loss 10%`);
      return [() => sh(`tc qdisc del dev ${brokerNs(b)}h root`, true), `broker ${b}`];
    }
    case "loss":
    case "loss-one-way":
      return applyLoss(kind, leader, pick);
    case "kill9":
      process.kill(brokerPid(leader), "SIGKILL");
      return [() => restartIfDead(run, leader), `broker ${leader}`];
    case "sigstop":
      process.kill(brokerPid(leader), "SIGSTOP");
      return [() => process.kill(brokerPid(leader), "SIGCONT"), `broker ${leader}`];
    case "disk-full": {
      const dir = run.dataDirs.get(leader)!;
      sh(`dd if=/dev/zero of=${dir}/filler bs=1M count=512 2>/dev/null`, true);
      const heal = () => {
        rmSync(join(dir, "filler"), { force: true });
        restartIfDead(run, leader);
      };
      return [heal, `broker ${leader}`];
    }
  }
}

/** Random loss on a leader's link: both ways, or one way (the direction drawn). */
function applyLoss(kind: "loss" | "loss-one-way", leader: number, pick: () => number) {
  if (kind === "loss") {
    const heal = loss(leader, LOSS_PERCENT, { toBroker: true, fromBroker: true });
    return [heal, `broker ${leader}`] as [() => void, string];
  }
  const toBroker = pick() < 0.5;
  const heal = loss(leader, ONE_WAY_LOSS_PERCENT, { toBroker, fromBroker: !toBroker });
  return [heal, `broker ${leader} (${toBroker ? "to it" : "from it"})`] as [() => void, string];
}

function schedule(options: Options, netem: boolean, nftables: boolean): Kind[] {
  const pick = random(options.seed);
  const kinds = options.kinds.filter(
    (k) => (netem || k !== "netem") && (nftables || (k !== "loss" && k !== "loss-one-way")),
  );
  const all = kinds.flatMap((k) => Array.from({ length: options.perKind }, () => k));
  for (let i = all.length - 1; i > 0; i--) {
    const j = Math.floor(pick() * (i + 1));
    [all[i], all[j]] = [all[j]!, all[i]!];
  }
  return all;
}

async function runFaults(run: Run, options: Options): Promise<FaultRecord[]> {
  const netem = netemAvailable();
  if (!netem) {
    run.notes.push(
      "tc netem is not available on this kernel: netem faults (delay and loss) skipped; " +
        "packet loss runs as the loss kinds (nftables), delay cannot be injected",
    );
  }
  const nftables = nftablesAvailable();
  if (!nftables) run.notes.push("nft is not available: loss and loss-one-way faults skipped");
  const pick = random(options.seed * 7 + 1);
  const faults: FaultRecord[] = [];
  const deadlineMs = Date.now() + options.minutes * 60_000;
  const planned = schedule(options, netem, nftables);
  for (const kind of planned) {
    if (run.stopping || Date.now() > deadlineMs) {
      const why = run.stopping ? "stopped by a signal" : `--minutes ${options.minutes} reached`;
      run.notes.push(`${why} after ${faults.length} of ${planned.length} faults`);
      break;
    }
    run.loads.push(loadAverage());
    const startMs = Date.now();
    const [heal, target] = await apply(run, kind, pick);
    console.error(`chaos: ${faults.length + 1}/${planned.length} ${kind} on ${target}`);
    await Bun.sleep(holdFor(options, kind));
    const healMs = Date.now();
    heal();
    for (const id of run.ids) restartIfDead(run, id);
    // Recovered once the cluster is whole again and the client has had every partition
    // acknowledged since the heal, so that no gap runs from one fault into the next.
    await waitFor(`recovery after ${kind}`, options.recoverMs * 4, async () => {
      const acked = run.acks();
      const all = Array.from({ length: PARTITIONS }, (_, p) => (acked.get(p) ?? 0) > healMs);
      return all.every(Boolean) && (await healthy(run.ids));
    });
    const fault = { kind, target, startMs, healMs, endMs: Date.now() };
    faults.push(fault);
    // For replaying a gap against the faults around it (the checker reads only the list).
    appendFileSync(join(run.dir, "faults.jsonl"), `${JSON.stringify(fault)}\n`);
  }
  return faults;
}

async function stopAll(run: Run): Promise<void> {
  const procs = [run.client, ...run.brokers.values(), ...run.zooKeepers];
  for (const p of procs) if (p !== null) spawnSync("kill", ["-CONT", String(p.pid)]);
  for (const p of procs) if (p !== null) spawnSync("kill", ["-KILL", String(p.pid)]);
  await Promise.all(procs.map((p) => p?.exited));
  for (const dir of run.dataDirs.values()) sh(`umount ${dir}`, true);
  tearDownNetwork();
}

async function main(): Promise<number> {
  const options = parseOptions(process.argv.slice(2));
  const dir = mkdtempSync(join(tmpdir(), "quill-chaos-"));
  const run: Run = {
    dir,
    ids: brokerIds(options.brokers),
    brokers: new Map(),
    dataDirs: new Map(),
    zooKeepers: [],
    notes: [
      `seed ${options.seed} (replay with --seed ${options.seed} --brokers ${options.brokers})`,
      `${options.brokers} brokers, host ${HOST_IP}`,
    ],
    client: null,
    stopping: false,
    loads: [],
    acks: ackTracker(join(dir, "acked.jsonl")),
  };
  // The first signal ends the schedule after the fault in progress, which is then checked like
  // a finished run; a second one stops everything at once, unchecked.
  const interrupted = async () => {
    if (!run.stopping) {
      run.stopping = true;
      console.error("chaos: stopping after this fault; signal again to abort unchecked");
      return;
    }
    await stopAll(run);
    process.exit(130);
  };
  process.on("SIGINT", interrupted);
  process.on("SIGTERM", interrupted);
  try {
    await startAll(run);
    const startMs = Date.now();
    await Bun.sleep(2000);
    const faults = await runFaults(run, options);
    await Bun.sleep(2000);
    const endMs = Date.now();
    if (run.client !== null) process.kill(run.client.pid, "SIGTERM");
    const stopped = await Promise.race([run.client?.exited, Bun.sleep(15_000).then(() => null)]);
    if (stopped === null && run.client !== null) process.kill(run.client.pid, "SIGKILL");
    const input = { outDir: run.dir, dataDirs: run.dataDirs, topic: TOPIC, faults, startMs, endMs };
    const check = () => checkAll({ ...input, partitions: PARTITIONS });
    await waitFor("identical replicas", 60_000, async () => check().replicasDiffer.length === 0);
    const report = check();
    const loads = run.loads.length === 0 ? [loadAverage()] : run.loads;
    run.notes.push(
      `load average (1 min, before each fault) ${Math.min(...loads)}-${Math.max(...loads)}, ` +
        `${Math.round((endMs - startMs) / 1000)} s of faults`,
    );
    printReport(report, faults.length, run.notes);
    const bad = report.lost + report.duplicates + report.dirtyReads + report.reordered;
    return bad + report.commitsBackwards + report.replicasDiffer.length > 0 ? 1 : 0;
  } finally {
    await stopAll(run);
    console.error(`chaos: logs and client records in ${run.dir}`);
  }
}

process.exit(await main());
