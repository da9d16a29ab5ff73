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
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ErrorCode } from "../src/protocol/errors.ts";
import { ApiKey } from "../src/protocol/generated/index.ts";
import { KafkaClient } from "../test/support/kafka-client.ts";
import { checkAll, type FaultRecord, printReport } from "./chaos-harness/checker.ts";
import {
  brokerIds,
  brokerIp,
  CLIENT_IP,
  COMBINATIONS,
  type CombinedKind,
  cut,
  HOST_IP,
  KINDS,
  type Kind,
  mountDataDir,
  netemAvailable,
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
}

async function metadata(ids: readonly number[]): Promise<{
  controller: number;
  leaders: Map<number, number>;
  isr: Map<number, number[]>;
  brokers: number;
} | null> {
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

const healthy = async (ids: readonly number[]) => {
  const m = await metadata(ids);
  return (
    m !== null &&
    m.brokers === ids.length &&
    m.leaders.size === PARTITIONS &&
    [...m.isr.values()].every((isr) => isr.length === REPLICATION_FACTOR)
  );
};

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
    "qchcl",
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
  if (kind === "leader-cut" || kind === "kill9" || kind === "sigstop" || kind === "disk-full") {
    hit.add(leader);
  }
  const others = (id: number) => run.ids.filter((b) => b !== id).map(brokerIp);
  const zks = ZK_IDS.map(zkIp);
  const brokerPid = (id: number) => run.brokers.get(id)!.pid;
  switch (kind) {
    case "leader-cut":
      return [cut(`qchb${leader}`, [...zks, ...others(leader)]), `broker ${leader}`];
    case "follower-cut": {
      // A replica of the partition that is not its leader (its ISR, else any other broker).
      const isr = (m?.isr.get(partition) ?? []).filter((b) => b !== leader && !hit.has(b));
      const candidates = isr.length > 0 ? isr : spare.filter((b) => b !== leader);
      const follower = candidates[Math.floor(pick() * candidates.length)]!;
      hit.add(follower);
      return [
        cut(`qchb${follower}`, [...zks, ...others(follower), CLIENT_IP]),
        `broker ${follower}`,
      ];
    }
    case "controller-cut": {
      // When a combination's first fault took the controller, another broker is cut instead.
      const known = m?.controller ?? 1;
      const c = hit.has(known) ? spare[Math.floor(pick() * spare.length)]! : known;
      hit.add(c);
      return [cut(`qchb${c}`, [...zks, ...others(c), CLIENT_IP]), `broker ${c}`];
    }
    case "zk-minority": {
      const z = ZK_IDS[Math.floor(pick() * 3)]!;
      const rest = [...zks.filter((ip) => ip !== zkIp(z)), ...run.ids.map(brokerIp)];
      return [cut(`qchzk${z}`, rest), `zookeeper ${z}`];
    }
    case "netem": {
      const b = run.ids[Math.floor(pick() * run.ids.length)]!;
      sh(`tc qdisc add dev qchb${b}h root netem delay 100ms loss 10%`);
      return [() => sh(`tc qdisc del dev qchb${b}h root`, true), `broker ${b}`];
    }
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

function schedule(options: Options, netem: boolean): Kind[] {
  const pick = random(options.seed);
  const kinds = KINDS.filter((k) => netem || k !== "netem");
  const all = kinds.flatMap((k) => Array.from({ length: options.perKind }, () => k));
  for (let i = all.length - 1; i > 0; i--) {
    const j = Math.floor(pick() * (i + 1));
    [all[i], all[j]] = [all[j]!, all[i]!];
  }
  return all;
}

async function runFaults(run: Run, options: Options): Promise<FaultRecord[]> {
  const netem = netemAvailable();
  if (!netem) run.notes.push("tc netem is not available on this kernel: netem faults skipped");
  const pick = random(options.seed * 7 + 1);
  const faults: FaultRecord[] = [];
  for (const kind of schedule(options, netem)) {
    const startMs = Date.now();
    const [heal, target] = await apply(run, kind, pick);
    console.error(`chaos: ${kind} on ${target}`);
    await Bun.sleep(options.holdMs);
    heal();
    for (const id of run.ids) restartIfDead(run, id);
    await waitFor(`recovery after ${kind}`, options.recoverMs * 4, () => healthy(run.ids));
    faults.push({ kind, target, startMs, endMs: Date.now() });
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
  const run: Run = {
    dir: mkdtempSync(join(tmpdir(), "quill-chaos-")),
    ids: brokerIds(options.brokers),
    brokers: new Map(),
    dataDirs: new Map(),
    zooKeepers: [],
    notes: [
      `seed ${options.seed} (replay with --seed ${options.seed} --brokers ${options.brokers})`,
      `${options.brokers} brokers, host ${HOST_IP}`,
    ],
    client: null,
  };
  const interrupted = async () => {
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
    printReport(report, faults.length, run.notes);
    const bad = report.lost + report.duplicates + report.dirtyReads + report.reordered;
    return bad + report.commitsBackwards + report.replicasDiffer.length > 0 ? 1 : 0;
  } finally {
    await stopAll(run);
    console.error(`chaos: logs and client records in ${run.dir}`);
  }
}

process.exit(await main());
