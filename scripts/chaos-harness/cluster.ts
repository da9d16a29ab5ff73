// The chaos harness's cluster (scripts/chaos.ts): network namespaces on one bridge, blackhole
// routes for partitions, nftables rules for packet loss, tc netem for delay, and the ZooKeeper
// and broker processes inside the namespaces.
// The addresses are private ones on a bridge with no route out, so nothing is reachable from
// outside this machine.
import { spawn, spawnSync } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";

export const REPO = join(import.meta.dir, "..", "..");
/**
 * `--net N` (0 to 9, 0 by default): which of ten separate networks a run uses (its subnet and
 * its namespaces' and links' names), so that two runs can go at once on one machine.
 */
const NET = (() => {
  const i = process.argv.indexOf("--net");
  const n = i < 0 ? 0 : Number(process.argv[i + 1]);
  if (!Number.isInteger(n) || n < 0 || n > 9) throw new Error(`--net takes 0 to 9, got ${n}`);
  return n;
})();
const PREFIX = NET === 0 ? "qch" : `qc${NET}`;
export const SUBNET = `10.77.${NET}`;
export const BRIDGE = `${PREFIX}br`;
export const brokerNs = (id: number) => `${PREFIX}b${id}`;
export const zkNs = (id: number) => `${PREFIX}zk${id}`;
export const CLIENT_NS = `${PREFIX}cl`;
export const TOPIC = "chaos";
export const PARTITIONS = 3;
export const ZK_IDS = [1, 2, 3];
/** `--brokers N`: 3 (the default) to BROKERS_MAX brokers; the topic's replication factor is 3. */
export const BROKERS_MIN = 3;
export const BROKERS_MAX = 5;
export const REPLICATION_FACTOR = 3;
export const brokerIds = (count: number) => Array.from({ length: count }, (_, i) => i + 1);
export const zkIp = (id: number) => `${SUBNET}.${10 + id}`;
export const brokerIp = (id: number) => `${SUBNET}.${20 + id}`;
export const CLIENT_IP = `${SUBNET}.100`;
export const HOST_IP = `${SUBNET}.254`;
export const SINGLE_KINDS = [
  "leader-cut",
  "follower-cut",
  "controller-cut",
  "zk-minority",
  "netem",
  "loss",
  "loss-one-way",
  "kill9",
  "sigstop",
  "disk-full",
] as const;
export type SingleKind = (typeof SINGLE_KINDS)[number];

/** Two faults at once: applied one after the other, held together, healed in reverse order. */
export const COMBINATIONS = {
  "leader-cut+zk-minority": ["leader-cut", "zk-minority"],
  "kill9+follower-cut": ["kill9", "follower-cut"],
  "sigstop+controller-cut": ["sigstop", "controller-cut"],
} as const satisfies Record<string, readonly [SingleKind, SingleKind]>;
export type CombinedKind = keyof typeof COMBINATIONS;

export const KINDS = [...SINGLE_KINDS, ...(Object.keys(COMBINATIONS) as CombinedKind[])] as const;
export type Kind = SingleKind | CombinedKind;

export interface Options {
  readonly seed: number;
  readonly perKind: number;
  /** `--hold-ms N` for every kind; null: HOLD_MS per kind (QUICK_HOLD_MS in `--quick`). */
  readonly holdMs: number | null;
  readonly quick: boolean;
  readonly recoverMs: number;
  readonly brokers: number;
  /** `--kinds a,b`: only these kinds (all by default). */
  readonly kinds: readonly Kind[];
  /** `--minutes N`: no fault starts after N minutes; what ran is checked. */
  readonly minutes: number;
}

/**
 * How long the full schedule holds each kind. A fault that matters only once ZooKeeper has
 * expired the session (6 s, ended by the server within one 500 ms tick after that) is held 8 s,
 * so the controller has acted before it heals. A kill -9 is over when the process is gone (the
 * port probes fail the leader over in about half a second), and a full disk when the broker's
 * next write fails, so those are held 2 and 3 s.
 */
export const HOLD_MS: Record<Kind, number> = {
  "leader-cut": 8_000,
  "follower-cut": 8_000,
  "controller-cut": 8_000,
  "zk-minority": 8_000,
  netem: 8_000,
  loss: 8_000,
  "loss-one-way": 8_000,
  kill9: 2_000,
  sigstop: 8_000,
  "disk-full": 3_000,
  "leader-cut+zk-minority": 8_000,
  "kill9+follower-cut": 8_000,
  "sigstop+controller-cut": 8_000,
};

/**
 * `--quick` (CI) holds each kind 6 s, except: kill9 and disk-full as long as the full schedule
 * (2 and 3 s: the fault is the crash, or the first failed write), and the loss kinds 3 s (a
 * lossy link shows what it does to the client and to replication within a second; no session
 * has to expire). CI's run so stays at about a minute and a half of faults with them.
 */
const QUICK_HOLD_MS: Partial<Record<Kind, number>> = {
  kill9: HOLD_MS.kill9,
  "disk-full": HOLD_MS["disk-full"],
  loss: 3_000,
  "loss-one-way": 3_000,
};

export const holdFor = (options: Options, kind: Kind) =>
  options.holdMs ?? (options.quick ? (QUICK_HOLD_MS[kind] ?? 6_000) : HOLD_MS[kind]);

export function parseOptions(argv: readonly string[]): Options {
  const value = (flag: string, fallback: number) => {
    const i = argv.indexOf(flag);
    return i < 0 ? fallback : Number(argv[i + 1]);
  };
  const quick = argv.includes("--quick");
  const kinds = (argv.includes("--kinds") ? argv[argv.indexOf("--kinds") + 1]! : KINDS.join(","))
    .split(",")
    .map((k) => k as Kind);
  const unknown = kinds.filter((k) => !(KINDS as readonly string[]).includes(k));
  if (unknown.length > 0) throw new Error(`--kinds: unknown ${unknown} (known: ${KINDS})`);
  const brokers = value("--brokers", BROKERS_MIN);
  if (!Number.isInteger(brokers) || brokers < BROKERS_MIN || brokers > BROKERS_MAX) {
    throw new Error(`--brokers takes ${BROKERS_MIN} to ${BROKERS_MAX}, got ${brokers}`);
  }
  return {
    brokers,
    seed: value("--seed", Date.now() % 100_000),
    perKind: value("--faults-per-kind", quick ? 1 : 50),
    holdMs: argv.includes("--hold-ms") ? value("--hold-ms", 6_000) : null,
    quick,
    recoverMs: quick ? 8_000 : 15_000,
    kinds,
    minutes: value("--minutes", Number.POSITIVE_INFINITY),
  };
}

/** mulberry32: a small seeded generator, so a schedule can be replayed from its seed. */
export function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export function sh(command: string, allowFailure = false): string {
  const r = spawnSync("sh", ["-c", command], { encoding: "utf8" });
  if (r.status !== 0 && !allowFailure) {
    throw new Error(`${command}: exit ${r.status}: ${r.stderr.trim()}`);
  }
  return r.stdout;
}

// ---- network ------------------------------------------------------------------------------

const namespaces = (brokers: number) => [
  ...ZK_IDS.map((id) => ({ ns: zkNs(id), ip: zkIp(id) })),
  ...brokerIds(brokers).map((id) => ({ ns: brokerNs(id), ip: brokerIp(id) })),
  { ns: CLIENT_NS, ip: CLIENT_IP },
];

export function setUpNetwork(brokers: number): void {
  tearDownNetwork();
  sh(`ip link add ${BRIDGE} type bridge && ip link set ${BRIDGE} up`);
  sh(`ip addr add ${HOST_IP}/24 dev ${BRIDGE}`);
  for (const { ns, ip } of namespaces(brokers)) {
    sh(`ip netns add ${ns}`);
    sh(`ip link add ${ns}h type veth peer name ${ns}n`);
    sh(`ip link set ${ns}h master ${BRIDGE} && ip link set ${ns}h up`);
    sh(`ip link set ${ns}n netns ${ns}`);
    sh(`ip netns exec ${ns} ip addr add ${ip}/24 dev ${ns}n`);
    sh(`ip netns exec ${ns} ip link set ${ns}n up && ip netns exec ${ns} ip link set lo up`);
  }
}

/** Removes what any earlier run made, whatever its broker count. */
export function tearDownNetwork(): void {
  for (const { ns } of namespaces(BROKERS_MAX)) {
    // A loss fault's table on the bridge's end of the link (the namespace's goes with it).
    nft(null, `delete table netdev ${ns}_loss\n`, true);
    sh(`ip netns del ${ns}`, true);
    sh(`ip link del ${ns}h`, true);
  }
  sh(`ip link del ${BRIDGE}`, true);
}

export function cut(ns: string, ips: readonly string[]): () => void {
  for (const ip of ips) sh(`ip netns exec ${ns} ip route add blackhole ${ip}/32`);
  return () => {
    for (const ip of ips) sh(`ip netns exec ${ns} ip route del blackhole ${ip}/32`, true);
  };
}

/** `loss`: this share of the packets each way on a broker's link is dropped. */
export const LOSS_PERCENT = 10;
/** `loss-one-way`: this share of the packets one way (to or from the broker) is dropped. */
export const ONE_WAY_LOSS_PERCENT = 25;

/**
 * Drops `percent` of the packets reaching the broker (`toBroker`) and of those it sends
 * (`fromBroker`), at random, with nftables: netdev ingress hooks, so a packet is lost on the
 * wire as on a bad link, and no sender is told (a drop on the sender's own output would fail
 * its send with EPERM instead). What reaches the broker is filtered in its namespace, at its
 * end of the veth pair; what it sends, at the bridge's end, in the host's namespace.
 */
export function loss(
  id: number,
  percent: number,
  { toBroker, fromBroker }: { toBroker: boolean; fromBroker: boolean },
): () => void {
  const ns = brokerNs(id);
  const table = `${ns}_loss`;
  const ruleset = (device: string) =>
    `add table netdev ${table}\n` +
    `add chain netdev ${table} in { type filter hook ingress device "${device}" priority 0; ` +
    "policy accept; }\n" +
    `add rule netdev ${table} in numgen random mod 100 < ${percent} counter drop\n`;
  const sides = [
    ...(toBroker ? [{ ns, device: `${ns}n`, way: "to" }] : []),
    ...(fromBroker ? [{ ns: null, device: `${ns}h`, way: "from" }] : []),
  ];
  for (const side of sides) nft(side.ns, ruleset(side.device));
  return () => {
    // What the rules dropped, to show the fault did something.
    const dropped = sides.map((side) => {
      const list = nft(side.ns, `list table netdev ${table}\n`, true);
      const packets = /packets (\d+)/.exec(list)?.[1] ?? "?";
      nft(side.ns, `delete table netdev ${table}\n`, true);
      return `${packets} packets ${side.way} broker ${id}`;
    });
    console.error(`chaos: loss healed, dropped ${dropped.join(", ")}`);
  };
}

/** Runs an nft script in namespace `ns` (null: the host's). */
function nft(ns: string | null, script: string, allowFailure = false): string {
  const argv = ns === null ? ["nft", "-f", "-"] : ["ip", "netns", "exec", ns, "nft", "-f", "-"];
  const r = spawnSync(argv[0]!, argv.slice(1), { input: script, encoding: "utf8" });
  if (r.status !== 0 && !allowFailure) {
    throw new Error(`nft ${script.trim()}: exit ${r.status}: ${r.stderr?.trim()}`);
  }
  return r.stdout ?? "";
}

/** Whether `nft` is installed and the kernel has nftables' netdev family and numgen. */
export const nftablesAvailable = (): boolean => {
  const table = `${BRIDGE}_probe`;
  const probe =
    `add table netdev ${table}\n` +
    `add chain netdev ${table} in { type filter hook ingress device "${BRIDGE}" priority 0; ` +
    "policy accept; }\n" +
    `add rule netdev ${table} in numgen random mod 100 < 0 drop\n` +
    `delete table netdev ${table}\n`;
  return spawnSync("nft", ["-f", "-"], { input: probe }).status === 0;
};

export const netemAvailable = (): boolean => {
  const ok = spawnSync("sh", ["-c", `tc qdisc add dev ${BRIDGE} root netem delay 1ms`]);
  if (ok.status !== 0) return false;
  sh(`tc qdisc del dev ${BRIDGE} root`, true);
  return true;
};

// ---- processes ----------------------------------------------------------------------------

export interface Proc {
  pid: number;
  exited: Promise<number>;
}

export function start(ns: string, argv: readonly string[], logPath: string): Proc {
  const child = spawn("ip", ["netns", "exec", ns, ...argv], {
    stdio: ["ignore", "ignore", "pipe"],
    cwd: REPO,
  });
  const chunks: Buffer[] = [];
  child.stderr.on("data", (d: Buffer) => chunks.push(d));
  const exited = new Promise<number>((resolve) =>
    child.on("exit", (code) => {
      writeFileSync(logPath, Buffer.concat(chunks));
      resolve(code ?? -1);
    }),
  );
  return { pid: child.pid!, exited };
}

export function startZooKeeper(dir: string, id: number): Proc {
  const home = join(dir, `zk${id}`);
  mkdirSync(join(home, "data"), { recursive: true });
  writeFileSync(join(home, "data", "myid"), `${id}\n`);
  const servers = ZK_IDS.map((n) => `server.${n}=${zkIp(n)}:2888:3888`);
  const config = [
    "tickTime=500",
    `dataDir=${join(home, "data")}`,
    "clientPort=2181",
    `clientPortAddress=${zkIp(id)}`,
    "admin.enableServer=false",
    "initLimit=20",
    "syncLimit=10",
    "maxSessionTimeout=60000",
    "standaloneEnabled=false",
    ...servers,
  ];
  writeFileSync(join(home, "zoo.cfg"), `${config.join("\n")}\n`);
  const java = ["java", "-Xmx128m", "-XX:+UseSerialGC", "-Dzookeeper.cnxTimeout=500"];
  const main = "org.apache.zookeeper.server.quorum.QuorumPeerMain";
  return start(
    zkNs(id),
    [...java, "-cp", "/usr/share/java/*", main, join(home, "zoo.cfg")],
    join(home, "zk.log"),
  );
}

export function mountDataDir(dir: string, id: number): string {
  const dataDir = join(dir, `b${id}`);
  mkdirSync(dataDir, { recursive: true });
  sh(`mount -t tmpfs -o size=256m tmpfs ${dataDir}`);
  return dataDir;
}

export function startBroker(dir: string, id: number): Proc {
  const zk = ZK_IDS.map((n) => `${zkIp(n)}:2181`).join(",");
  const argv = [
    process.execPath,
    join(REPO, "src", "main.ts"),
    "serve",
    ...["--listen", `${brokerIp(id)}:9092`, "--broker-id", String(id)],
    ...["--data-dir", join(dir, `b${id}`), "--zookeeper", `${zk}/chaos`],
    ...["--set", "min.insync.replicas=2", "--set", "default.replication.factor=3"],
    ...["--set", "zookeeper.session.timeout.ms=6000"],
    // The ensemble may still be electing when the brokers start (Java starts slowly).
    ...["--set", "zookeeper.connection.timeout.ms=60000"],
    ...["--set", "unclean.leader.election.enable=false"],
  ];
  return start(brokerNs(id), argv, join(dir, `broker${id}.${Date.now()}.log`));
}
