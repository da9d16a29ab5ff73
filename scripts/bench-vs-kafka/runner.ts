// Runs the workloads against one broker at a time: a repetition starts the broker on a fresh data
// dir, warms it up, runs each workload row in passes, and stops it; a scale workload starts and
// restarts brokers of its own. Every row gets broker CPU seconds, peak RSS and the requests the
// broker received while it ran (request-counter.ts).
import { rmSync } from "node:fs";
import { join } from "node:path";
import { ZooKeeperClient } from "../../src/zookeeper/zookeeper-client.ts";
import type { ZooKeeperServer } from "../../test/support/zookeeper-server.ts";
import { cpuSeconds, loadAverage, peakRssBytes, resetPeakRss } from "../bench-common.ts";
import { createTopicsAndWait } from "./broker-probe.ts";
import { type BrokerKind, type BrokerProcess, startKafka, startQuill } from "./brokers.ts";
import type { BrokerRun, ScaleRun, WorkloadRun } from "./report.ts";
import {
  freePort,
  kafkaRequestCounter,
  quillRequestCounter,
  type RequestCounter,
} from "./request-counter.ts";
import { addKafkaUser, addQuillUser, saslSslBrokerSettings } from "./sasl-ssl.ts";
import type { ScaleSizes, ScaleTools, ScaleWorkload } from "./scale.ts";
import {
  type Measurement,
  type Tools,
  WARM_UP_TOPIC,
  type Workload,
  warmUp,
  warmUpSaslSsl,
} from "./workloads.ts";

const TOPIC_TIMEOUT_MS = 60_000;
/** A row runs at least this many passes (so it has a spread) ... */
export const MIN_PASSES = 3;
/** ... and, in all, at least this long; never more than MAX_PASSES passes. */
const MAX_PASSES = 30;

export interface RunContext {
  readonly tools: Tools;
  readonly workloads: readonly Workload[];
  readonly quillBinary: string;
  readonly zookeeper: ZooKeeperServer | null;
  readonly runDir: string;
  /** Records per pass divided by this (--quick). */
  readonly scale: number;
  readonly rowSeconds: number;
}

export interface CountedBroker {
  readonly broker: BrokerProcess;
  readonly requests: RequestCounter;
  stop(): Promise<void>;
  kill(): Promise<void>;
}

/**
 * Starts a broker with its request counter; `chroot` names Kafka's ZooKeeper root. With
 * `saslSsl`, the broker also gets the SASL_SSL listener, and its SCRAM user is made before the
 * start (outside the start-up figure), each broker the way its operators do it.
 */
export async function startCounted(
  ctx: RunContext,
  kind: BrokerKind,
  dir: string,
  chroot: string,
  saslSsl = false,
): Promise<CountedBroker> {
  const port = await freePort();
  const security = saslSsl ? ctx.tools.saslSsl! : null;
  const settings = security === null ? null : saslSslBrokerSettings(security);
  const zookeeperConnect = ctx.zookeeper?.connectString ?? "";
  if (security !== null && kind === "quill") await addQuillUser(security, join(dir, "data"));
  if (security !== null && kind === "kafka") {
    await addKafkaUser(security, ctx.tools.classpath!, zookeeperConnect, chroot);
  }
  const broker =
    kind === "quill"
      ? await startQuill(ctx.quillBinary, dir, {}, port, settings)
      : await startKafka(
          { classpath: ctx.tools.classpath!, zookeeperConnect },
          dir,
          chroot,
          {},
          port,
          settings,
        );
  let requests: RequestCounter;
  try {
    requests =
      kind === "quill"
        ? quillRequestCounter(port)
        : await kafkaRequestCounter(ctx.tools.classpath!, port);
  } catch (error) {
    await broker.stop();
    throw error;
  }
  return {
    broker,
    requests,
    async stop() {
      requests.close();
      await broker.stop();
    },
    async kill() {
      requests.close();
      await broker.kill();
    },
  };
}

/** Records one pass of `w` handles. Consumers read twice a producer pass (see passRecords). */
export function passRecords(ctx: RunContext, w: Workload): number {
  if (w.kind === "latency") return ctx.scale === 1 ? w.fullRecords : w.fullRecords / 2;
  const produced = Math.round(w.fullRecords / ctx.scale);
  // The source topic holds at least MIN_PASSES producer passes; reading two of them leaves every
  // partition data to spare, so no consumer ends in the wait for partitions that ran dry
  // (docs/scaling.md, The Java consumer), and both brokers serve the same number of records.
  return w.kind === "consume" ? produced * 2 : produced;
}

/** Starts one broker, runs every workload against it, stops it, removes its data. */
export async function runRepetition(
  ctx: RunContext,
  kind: BrokerKind,
  repetition: number,
): Promise<BrokerRun> {
  const dir = join(ctx.runDir, `${kind}-${repetition}`);
  const saslSsl = ctx.workloads.some((w) => w.listener === "SASL_SSL");
  const counted = await startCounted(ctx, kind, dir, `kafka-${repetition}`, saslSsl);
  const { broker } = counted;
  const results: WorkloadRun[] = [];
  try {
    const topics = new Map(ctx.workloads.map((w) => [w.topic.name, w.topic]));
    const warmUpLatencyTopic = { name: `${WARM_UP_TOPIC.name}-latency`, partitions: 1 };
    await createTopicsAndWait(
      broker.port,
      [...topics.values(), WARM_UP_TOPIC, warmUpLatencyTopic],
      performance.now() + TOPIC_TIMEOUT_MS,
    );
    const warmUpStartedMs = performance.now();
    await warmUp(ctx.tools, broker.bootstrap);
    if (saslSsl) await warmUpSaslSsl(ctx.tools, broker.saslSslBootstrap!);
    console.error(
      `  ${kind} #${repetition} started in ${Math.round(broker.startupMs)} ms, ` +
        `warmed up in ${((performance.now() - warmUpStartedMs) / 1000).toFixed(1)} s`,
    );
    // VmHWM has not been reset yet, so this covers start-up and warm-up.
    let peakRss = peakRssBytes(broker.pid);
    const cpuAtStart = cpuSeconds(broker.pid);
    for (const w of ctx.workloads) {
      const run = await runWorkload(ctx, counted, w);
      peakRss = Math.max(peakRss, run.brokerPeakRssBytes);
      results.push(run);
      console.error(`  ${kind} #${repetition} ${w.id}: ${describe(run)}`);
    }
    return {
      kind,
      repetition,
      startupMs: broker.startupMs,
      peakRssBytes: peakRss,
      cpuSeconds: cpuSeconds(broker.pid) - cpuAtStart,
      workloads: results,
    };
  } finally {
    await counted.stop();
    rmSync(join(dir, "data"), { recursive: true, force: true });
  }
}

/** Passes of `w` until it has run MIN_PASSES times and ctx.rowSeconds in all. */
async function runWorkload(ctx: RunContext, counted: CountedBroker, w: Workload) {
  const { broker } = counted;
  const records = passRecords(ctx, w);
  const bootstrap = w.listener === "SASL_SSL" ? broker.saslSslBootstrap! : broker.bootstrap;
  resetPeakRss(broker.pid);
  const cpuBefore = cpuSeconds(broker.pid);
  const requestsBefore = await counted.requests.total();
  const passes: Measurement[] = [];
  let error: string | null = null;
  const started = performance.now();
  while (
    passes.length < MAX_PASSES &&
    (passes.length < MIN_PASSES || performance.now() - started < ctx.rowSeconds * 1000)
  ) {
    try {
      passes.push(await w.run(ctx.tools, bootstrap, records));
    } catch (e) {
      error = (e as Error).message;
      break;
    }
  }
  const run: WorkloadRun = {
    workloadId: w.id,
    passes: error === null ? passes : [],
    error,
    brokerCpuSeconds: cpuSeconds(broker.pid) - cpuBefore,
    brokerPeakRssBytes: peakRssBytes(broker.pid),
    requests: (await counted.requests.total()) - requestsBefore,
    megabytes: (passes.length * records * w.recordBytes) / 1e6,
    loadAverage: loadAverage(),
  };
  return run;
}

function describe(run: WorkloadRun): string {
  if (run.error !== null) return `FAILED: ${run.error.split("\n").slice(0, 3).join(" ")}`;
  const rates = run.passes.map((m) => Math.round(m.recordsPerSecond).toLocaleString("en-US"));
  const p99 = run.passes.map((m) => m.p99Ms).filter((v) => v !== null);
  return (
    `${run.passes.length} passes, rec/s ${rates.join(" / ")}` +
    (p99.length > 0 ? `, p99 ms ${p99.join(" / ")}` : "") +
    `, broker CPU ${run.brokerCpuSeconds.toFixed(2)} s, ${run.requests} requests, ` +
    `peak RSS ${Math.round(run.brokerPeakRssBytes / 1e6)} MB, load ${run.loadAverage}`
  );
}

/** One scale workload on one broker; the workload starts and restarts the broker itself. */
export async function runScale(
  ctx: RunContext,
  kind: BrokerKind,
  w: ScaleWorkload,
  tools: ScaleTools,
  sizes: ScaleSizes,
): Promise<ScaleRun> {
  const dir = join(ctx.runDir, `${kind}-${w.id}`);
  const chroot = `kafka-${w.id}`;
  let cpu = 0;
  let current: CountedBroker | null = null;
  const collect = () => {
    try {
      if (current !== null) cpu += cpuSeconds(current.broker.pid);
    } catch {
      // The process is gone already (killed): its CPU was counted when it was killed.
    }
  };
  let killed = false;
  const start = async (fresh: boolean): Promise<BrokerProcess> => {
    if (fresh) rmSync(join(dir, "data"), { recursive: true, force: true });
    if (killed && kind === "kafka") await awaitKafkaRegistrationGone(ctx, chroot);
    killed = false;
    const counted = await startCounted(ctx, kind, dir, chroot);
    current = counted;
    const b = counted.broker;
    // CPU seconds are read just before each stop or kill, over every broker process started.
    const stop = async () => {
      collect();
      current = null;
      await counted.stop();
    };
    const kill = async () => {
      collect();
      current = null;
      await counted.kill();
      killed = true;
    };
    return { ...b, stop, kill };
  };
  try {
    const figures = await w.run(tools, start, sizes);
    return { kind, workloadId: w.id, figures, error: null, brokerCpuSeconds: cpu };
  } catch (error) {
    const message = (error as Error).message;
    return { kind, workloadId: w.id, figures: {}, error: message, brokerCpuSeconds: cpu };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Past Kafka's 18 s session timeout (brokers.ts) with room for a loaded machine. */
const KAFKA_REGISTRATION_EXPIRY_MS = 60_000;

/**
 * A ZooKeeper-mode Kafka killed with -9 leaves its `/brokers/ids/0` registration until its session
 * expires, and a Kafka started before that exits with 1 at start-up (the node exists and belongs
 * to another session). So a restart after a kill waits for the registration to go first, and the
 * start-up time counts from then, as an operator's restart after the expiry would see it; Quill
 * runs embedded here and has no registration to wait for.
 */
async function awaitKafkaRegistrationGone(ctx: RunContext, chroot: string): Promise<void> {
  const connect = ctx.zookeeper?.connectString;
  if (connect === undefined) return;
  const zk = await ZooKeeperClient.connect(connect, {
    sessionTimeoutMs: 10_000,
    connectTimeoutMs: 10_000,
  });
  try {
    const deadline = performance.now() + KAFKA_REGISTRATION_EXPIRY_MS;
    while ((await zk.exists(`/${chroot}/brokers/ids/0`)) !== null) {
      if (performance.now() > deadline) throw new Error("Kafka's registration did not expire");
      await Bun.sleep(200);
    }
  } finally {
    await zk.close();
  }
}
