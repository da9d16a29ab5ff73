/**
 * A real ZooKeeper for tests and benchmarks: Debian's `zookeeper` package, started as a JVM child
 * process on free loopback ports, in a temporary data dir. Tests share one server per file
 * because a JVM takes about a second to start.
 *
 * Every JVM this module starts is killed when the test process exits, and a tiny shell watchdog
 * kills it too if the test process dies without running exit handlers (SIGKILL, a crash), so a
 * failed run never leaves ZooKeepers holding ports and memory.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { closeSync, mkdirSync, mkdtempSync, openSync, rmSync, writeFileSync } from "node:fs";
import { connect, createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

/** Debian's zookeeper package installs its jars (and their dependencies) here. */
const CLASSPATH = "/usr/share/java/*";
const MAIN_CLASS = "org.apache.zookeeper.server.quorum.QuorumPeerMain";
const START_TIMEOUT_MS = 30_000;
const STOP_TIMEOUT_MS = 5_000;
/**
 * A short tick makes sessions expire quickly in tests: the server's minimum session timeout is
 * two ticks unless set, and expiry is checked once a tick.
 */
const TICK_TIME_MS = 200;
const MIN_SESSION_TIMEOUT_MS = 400;
const MAX_SESSION_TIMEOUT_MS = 60_000;
/** Small heap, serial GC: a test ZooKeeper holds a few thousand znodes at most. */
const JVM_OPTIONS = [
  "-Xmx256m",
  "-XX:+UseSerialGC",
  "-Dzookeeper.jmx.log4j.disable=true",
  // Election connects to peers that may not be up yet; the 5 s default makes ensembles slow.
  "-Dzookeeper.cnxTimeout=500",
  // Election resends notifications with exponential backoff up to 60 s; peers that start a moment
  // late would otherwise be heard from only after several seconds.
  "-Dzookeeper.fastleader.maxNotificationInterval=400",
];

export interface ZooKeeperNode {
  /** `127.0.0.1:<port>`, what a client connects to. */
  readonly connectString: string;
  readonly port: number;
  readonly dataDir: string;
  /** SIGKILL, as a crash would; the data dir is kept so `restart()` finds the same state. */
  kill(): Promise<void>;
  /** Kills the server if it runs, starts it on the same port and data dir, waits until it serves. */
  restart(): Promise<void>;
  /** SIGSTOP / SIGCONT: the server stops answering without closing its connections. */
  pause(): void;
  resume(): void;
  readonly running: boolean;
}

export interface ZooKeeperServer extends ZooKeeperNode {
  /** Terminates the server and removes its temporary directory. */
  stop(): Promise<void>;
}

export interface ZooKeeperEnsemble {
  /** All nodes, `host:port,host:port,...`. */
  readonly connectString: string;
  readonly nodes: readonly ZooKeeperNode[];
  stop(): Promise<void>;
}

const liveProcesses = new Set<ChildProcess>();
process.on("exit", () => {
  for (const child of liveProcesses) child.kill("SIGKILL");
});

/** Starts a standalone ZooKeeper and waits until it answers `srvr`. */
export async function startZooKeeper(options: { port?: number } = {}): Promise<ZooKeeperServer> {
  const rootDir = mkdtempSync(join(tmpdir(), "quill-zk-"));
  const port = options.port ?? (await freePorts(1))[0];
  const node = new JvmNode(rootDir, port, standaloneConfig(rootDir, port));
  try {
    await node.restart();
  } catch (error) {
    await node.stop();
    throw error;
  }
  return node;
}

/**
 * Where server `from` (1-based) reaches the quorum port of server `to`: by default the port
 * itself; a test can return the port of a proxy it put in between, to cut one follower's link
 * to the leader while the follower still serves its clients.
 */
export type QuorumRoute = (from: number, to: number, quorumPort: number) => Promise<number>;

/**
 * Starts `size` ZooKeeper servers forming one ensemble (`server.N` lines, a `myid` file each,
 * distinct client, quorum and election ports) and waits until every node serves.
 */
export async function startZooKeeperEnsemble(
  size: number,
  options: { quorumRoute?: QuorumRoute } = {},
): Promise<ZooKeeperEnsemble> {
  if (!Number.isInteger(size) || size < 1 || size > 9) throw new Error(`bad ensemble size ${size}`);
  const rootDir = mkdtempSync(join(tmpdir(), "quill-zk-ensemble-"));
  const ports = await freePorts(size * 3);
  const route = options.quorumRoute ?? ((_from, _to, port) => Promise.resolve(port));
  // A follower connects to the leader's quorum port as its own config names it, so each
  // node's config may name its peers' quorum ports differently; a node's own line is real.
  const serverLines = async (from: number) => {
    return Promise.all(
      Array.from({ length: size }, async (_, i) => {
        const quorumPort =
          i + 1 === from ? ports[i * 3 + 1] : await route(from, i + 1, ports[i * 3 + 1]);
        return `server.${i + 1}=127.0.0.1:${quorumPort}:${ports[i * 3 + 2]}`;
      }),
    );
  };
  const nodes = await Promise.all(
    Array.from({ length: size }, async (_, i) => {
      const nodeDir = join(rootDir, `node-${i + 1}`);
      mkdirSync(join(nodeDir, "data"), { recursive: true });
      writeFileSync(join(nodeDir, "data", "myid"), `${i + 1}\n`);
      const clientPort = ports[i * 3];
      const config = ensembleConfig(nodeDir, clientPort, await serverLines(i + 1));
      return new JvmNode(nodeDir, clientPort, config);
    }),
  );
  const stop = async () => {
    await Promise.all(nodes.map((n) => n.stop()));
    rmSync(rootDir, { recursive: true, force: true });
  };
  try {
    // Nodes must start together: each waits for a quorum before it serves.
    await Promise.all(nodes.map((n) => n.restart()));
  } catch (error) {
    await stop();
    throw error;
  }
  return { connectString: nodes.map((n) => n.connectString).join(","), nodes, stop };
}

function commonConfig(dir: string, clientPort: number): string[] {
  return [
    `tickTime=${TICK_TIME_MS}`,
    `dataDir=${join(dir, "data")}`,
    `clientPort=${clientPort}`,
    "clientPortAddress=127.0.0.1",
    "admin.enableServer=false",
    "4lw.commands.whitelist=srvr,ruok,mntr,stat",
    `minSessionTimeout=${MIN_SESSION_TIMEOUT_MS}`,
    `maxSessionTimeout=${MAX_SESSION_TIMEOUT_MS}`,
    "maxClientCnxns=0",
  ];
}

function standaloneConfig(dir: string, clientPort: number): string {
  mkdirSync(join(dir, "data"), { recursive: true });
  return commonConfig(dir, clientPort).join("\n") + "\n";
}

function ensembleConfig(dir: string, clientPort: number, serverLines: string[]): string {
  // initLimit and syncLimit are counted in ticks: 10 s and 5 s with the short test tick.
  const quorum = [
    "initLimit=50",
    "syncLimit=25",
    "reconfigEnabled=false",
    "standaloneEnabled=false",
  ];
  return [...commonConfig(dir, clientPort), ...quorum, ...serverLines].join("\n") + "\n";
}

class JvmNode implements ZooKeeperServer {
  readonly connectString: string;
  readonly dataDir: string;
  private child: ChildProcess | null = null;
  private spawnError: Error | null = null;
  private exited: Promise<void> = Promise.resolve();
  private readonly configPath: string;
  private readonly logPath: string;

  constructor(
    private readonly dir: string,
    readonly port: number,
    config: string,
  ) {
    this.connectString = `127.0.0.1:${port}`;
    this.dataDir = join(dir, "data");
    this.configPath = join(dir, "zoo.cfg");
    this.logPath = join(dir, "zookeeper.log");
    writeFileSync(this.configPath, config);
  }

  get running(): boolean {
    return this.child !== null;
  }

  async restart(): Promise<void> {
    await this.kill();
    this.spawnJvm();
    await this.waitServing();
  }

  async kill(): Promise<void> {
    const child = this.child;
    if (child === null) return;
    child.kill("SIGCONT");
    child.kill("SIGKILL");
    await this.exited;
  }

  pause(): void {
    this.child?.kill("SIGSTOP");
  }

  resume(): void {
    this.child?.kill("SIGCONT");
  }

  async stop(): Promise<void> {
    const child = this.child;
    if (child !== null) {
      child.kill("SIGCONT");
      child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), STOP_TIMEOUT_MS);
      await this.exited;
      clearTimeout(timer);
    }
    rmSync(this.dir, { recursive: true, force: true });
  }

  private spawnJvm(): void {
    const logFd = openSync(this.logPath, "a");
    const child = spawn("java", [...JVM_OPTIONS, "-cp", CLASSPATH, MAIN_CLASS, this.configPath], {
      stdio: ["ignore", logFd, logFd],
    });
    closeSync(logFd);
    this.child = child;
    liveProcesses.add(child);
    this.exited = new Promise((resolve) => {
      const gone = () => {
        liveProcesses.delete(child);
        if (this.child === child) this.child = null;
        resolve();
      };
      child.once("exit", gone);
      // Without a JRE, spawn fails with ENOENT and emits "error" instead of "exit".
      child.once("error", (error) => {
        this.spawnError = error;
        gone();
      });
    });
    startWatchdog(child.pid);
  }

  /** Polls `srvr` until the server reports a mode (standalone, leader, follower). */
  private async waitServing(): Promise<void> {
    const deadlineMs = Date.now() + START_TIMEOUT_MS;
    while (Date.now() < deadlineMs) {
      if (this.child === null) break;
      const answer = await fourLetterWord(this.port, "srvr").catch(() => "");
      if (/^Mode: /m.test(answer)) return;
      await Bun.sleep(50);
    }
    const reason = this.spawnError === null ? `see ${this.logPath}` : String(this.spawnError);
    throw new Error(`ZooKeeper on port ${this.port} did not start: ${reason}`);
  }
}

/** Kills process `pid` with SIGKILL once this test process is gone, however it died. */
export function startWatchdog(pid: number | undefined): void {
  if (pid === undefined) return;
  const script =
    'while kill -0 "$1" 2>/dev/null && kill -0 "$2" 2>/dev/null; do sleep 1; done; ' +
    'kill -9 "$2" 2>/dev/null';
  const watchdog = spawn("sh", ["-c", script, "sh", String(process.pid), String(pid)], {
    stdio: "ignore",
  });
  watchdog.unref();
}

/** Sends a four-letter word (`srvr`, `ruok`, `mntr`) and returns the whole answer. */
export function fourLetterWord(port: number, word: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: "127.0.0.1", port });
    const chunks: Buffer[] = [];
    socket.setTimeout(2_000, () => socket.destroy(new Error(`${word} timed out`)));
    socket.on("connect", () => socket.write(word));
    socket.on("data", (chunk: Buffer) => chunks.push(chunk));
    socket.on("error", reject);
    socket.on("close", () => resolve(Buffer.concat(chunks).toString("utf8")));
  });
}

/** Distinct free loopback ports, found by binding port 0 (all held until every one is known). */
export async function freePorts(count: number): Promise<number[]> {
  const servers = await Promise.all(
    Array.from({ length: count }, () => {
      return new Promise<ReturnType<typeof createServer>>((resolve, reject) => {
        const server = createServer();
        server.once("error", reject);
        server.listen(0, "127.0.0.1", () => resolve(server));
      });
    }),
  );
  const ports = servers.map((s) => {
    const address = s.address();
    if (address === null || typeof address === "string") throw new Error("no port");
    return address.port;
  });
  await Promise.all(servers.map((s) => new Promise((resolve) => s.close(resolve))));
  return ports;
}
