// `bun scripts/bench-memory-pressure.ts [--clients N] [--frame-mib N] [--after-s N]`
//   `[--set K=V]...`
//
// The burst from issue 21, against one broker process (`bun src/main.ts serve`): N clients (20)
// each announce a request of --frame-mib (100) MiB and send 90% of it slowly (1 MiB every
// 100 ms), then hang up without finishing. Prints the broker's RSS (from /proc) before the
// burst, its peak during it, and --after-s (60) seconds after the clients left, and a small
// client's round trips (ApiVersions) while the burst runs. Extra --set flags go to the broker,
// e.g. `--set queued.max.request.bytes=-1` for the unlimited behaviour Kafka defaults to.
import net from "node:net";
import { ApiKey } from "../src/protocol/generated/index.ts";
import { ChildBroker } from "../test/support/child-broker.ts";
import { requestOnce } from "../test/support/kafka-client.ts";

const MiB = 1024 * 1024;

function option(argv: readonly string[], flag: string, fallback: number): number {
  const i = argv.indexOf(flag);
  return i < 0 ? fallback : Number(argv[i + 1]);
}

function settingsFrom(argv: readonly string[]): Record<string, string> {
  const settings: Record<string, string> = {};
  argv.forEach((arg, i) => {
    if (arg !== "--set") return;
    const [k, v] = argv[i + 1]!.split("=", 2);
    settings[k!] = v!;
  });
  return settings;
}

async function rssMiB(pid: number): Promise<number> {
  const status = await Bun.file(`/proc/${pid}/status`).text();
  const kib = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? "0");
  return Math.round(kib / 1024);
}

/** Announces a frame of `frameBytes` and sends `sendBytes` of it, 1 MiB per 100 ms. */
function slowSender(port: number, frameBytes: number, sendBytes: number) {
  const socket = net.connect({ host: "127.0.0.1", port });
  socket.on("error", () => {});
  let stopped = false;
  const done = (async () => {
    await new Promise<void>((resolve) => socket.once("connect", () => resolve()));
    const prefix = Buffer.alloc(4);
    prefix.writeInt32BE(frameBytes, 0);
    socket.write(prefix);
    const piece = Buffer.alloc(MiB, 7);
    for (let sent = 0; sent < sendBytes && !stopped; sent += MiB) {
      // Wait for the kernel to take the last piece: a paused broker backs the client up.
      if (!socket.write(piece)) await new Promise((r) => socket.once("drain", r));
      await Bun.sleep(100);
    }
  })();
  return {
    done,
    close: () => {
      stopped = true;
      socket.destroy();
    },
  };
}

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  const clients = option(argv, "--clients", 20);
  const frameBytes = option(argv, "--frame-mib", 100) * MiB - 1;
  const afterS = option(argv, "--after-s", 60);
  const settings = { "socket.request.max.bytes": String(frameBytes), ...settingsFrom(argv) };
  const broker = await ChildBroker.start({ settings });
  const pid = broker.pid;
  try {
    await Bun.sleep(2000);
    const before = await rssMiB(pid);
    const senders = Array.from({ length: clients }, () =>
      slowSender(broker.port, frameBytes, Math.floor(frameBytes * 0.9)),
    );
    let peak = before;
    const sampler = setInterval(async () => {
      peak = Math.max(peak, await rssMiB(pid));
    }, 100);
    const latencies: number[] = [];
    const burstEnd = Date.now() + 12_000 + (frameBytes / MiB / 10) * 100;
    while (Date.now() < burstEnd) {
      const t0 = performance.now();
      await requestOnce(broker.port, ApiKey.ApiVersions, 3, {});
      latencies.push(performance.now() - t0);
      await Bun.sleep(250);
    }
    clearInterval(sampler);
    for (const s of senders) s.close();
    await Bun.sleep(afterS * 1000);
    const after = await rssMiB(pid);
    latencies.sort((a, b) => a - b);
    const p99 = latencies[Math.floor(latencies.length * 0.99)] ?? 0;
    const max = latencies.at(-1) ?? 0;
    console.log(
      `memory: rss_before_mib=${before} rss_peak_mib=${peak} rss_after_${afterS}s_mib=${after} ` +
        `clients=${clients} frame_mib=${Math.round(frameBytes / MiB)} ` +
        `small_requests=${latencies.length} small_p99_ms=${p99.toFixed(1)} ` +
        `small_max_ms=${max.toFixed(1)} ` +
        `settings=${JSON.stringify(settingsFrom(argv))}`,
    );
  } finally {
    await broker.terminate();
    await broker.remove();
  }
}

await main();
