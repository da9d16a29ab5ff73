// `bun scripts/bench-idle-connections.ts [--connections 5000] [--step 1000]
//                                        [--settle-ms 2000] [--hold-ms 0] [--quill-binary PATH]`
//
// Quill alone, on a fresh data dir: the broker's memory with no client at all, then per idle
// connection. Opens `--connections` TCP connections in steps of `--step`; each sends one
// ApiVersions v3 request, reads its answer and then idles, as bench-vs-kafka's connections-5k
// workload does. After each step (and a settle of two seconds) it prints the broker's RSS (anon
// and file-backed, from /proc/<pid>/status) and its JavaScript heap (quill_heap_used_bytes and
// quill_heap_total_bytes from /metrics), and at the end the bytes per idle connection. Without
// --quill-binary it builds nothing: the broker runs from source (`bun src/main.ts`), whose
// baseline differs from the compiled binary's (bun run build -> dist/quill). --hold-ms keeps
// the connections open that long after the last figure (to take a heap snapshot meanwhile).
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Socket } from "bun";
import { loadAverage, sourceLauncher, stringOption } from "./bench-common.ts";
import { startQuill } from "./bench-vs-kafka/brokers.ts";
import { freePort } from "./bench-vs-kafka/request-counter.ts";

/** ApiVersions v3 (header v2, client id "idle"), as a librdkafka client opens with. */
function apiVersionsRequest(correlationId: number): Uint8Array {
  const clientId = new TextEncoder().encode("idle");
  const name = new TextEncoder().encode("bench-idle");
  const version = new TextEncoder().encode("1");
  const size = 2 + 2 + 4 + 2 + clientId.length + 1 + 1 + name.length + 1 + version.length + 1;
  const frame = new Uint8Array(4 + size);
  const view = new DataView(frame.buffer);
  let at = 0;
  view.setInt32(at, size);
  view.setInt16((at += 4), 18);
  view.setInt16((at += 2), 3);
  view.setInt32((at += 2), correlationId);
  view.setInt16((at += 4), clientId.length);
  frame.set(clientId, (at += 2));
  at += clientId.length;
  frame[at++] = 0; // header tagged fields
  frame[at++] = name.length + 1;
  frame.set(name, at);
  at += name.length;
  frame[at++] = version.length + 1;
  frame.set(version, at);
  at += version.length;
  frame[at++] = 0; // body tagged fields
  return frame;
}

/** Opens one connection, sends ApiVersions and resolves once the whole answer has arrived. */
async function openIdle(port: number, id: number): Promise<Socket<{ got: number }>> {
  let answered!: () => void;
  const done = new Promise<void>((resolve) => (answered = resolve));
  const socket = await Bun.connect<{ got: number }>({
    hostname: "127.0.0.1",
    port,
    data: { got: 0 },
    socket: {
      data(s, data) {
        s.data.got += data.length;
        if (s.data.got >= 4 && s.data.got >= 4 + new DataView(data.buffer).getInt32(0)) answered();
      },
    },
  });
  socket.write(apiVersionsRequest(id));
  await done;
  return socket;
}

interface Memory {
  rssKb: number;
  anonKb: number;
  fileKb: number;
  heapUsedBytes: number;
  heapTotalBytes: number;
}

function statusKb(text: string, key: string): number {
  const match = new RegExp(`^${key}:\\s+(\\d+) kB`, "m").exec(text);
  return match === null ? Number.NaN : Number(match[1]);
}

async function memoryOf(pid: number, adminPort: number): Promise<Memory> {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const metrics = await (await fetch(`http://127.0.0.1:${adminPort}/metrics`)).text();
  const gauge = (name: string) => Number(new RegExp(`^${name} (\\S+)$`, "m").exec(metrics)?.[1]);
  return {
    rssKb: statusKb(status, "VmRSS"),
    anonKb: statusKb(status, "RssAnon"),
    fileKb: statusKb(status, "RssFile"),
    heapUsedBytes: gauge("quill_heap_used_bytes"),
    heapTotalBytes: gauge("quill_heap_total_bytes"),
  };
}

function line(connections: number, m: Memory): string {
  const mb = (kb: number) => (kb / 1024).toFixed(1).padStart(7);
  const heap = (bytes: number) => (bytes / 1048576).toFixed(1).padStart(7);
  return (
    `${String(connections).padStart(6)} conns: RSS ${mb(m.rssKb)} MiB ` +
    `(anon ${mb(m.anonKb)}, file ${mb(m.fileKb)}), ` +
    `heap used ${heap(m.heapUsedBytes)} of ${heap(m.heapTotalBytes)} MiB`
  );
}

async function main(): Promise<void> {
  const total = Number(stringOption("--connections") ?? 5000);
  const step = Number(stringOption("--step") ?? 1000);
  const settleMs = Number(stringOption("--settle-ms") ?? 2000);
  const dir = mkdtempSync(join(tmpdir(), "quill-idle-"));
  const binary = stringOption("--quill-binary") ?? sourceLauncher(dir);
  const adminPort = await freePort();
  const broker = await startQuill(binary, dir, {}, adminPort);
  const sockets: Socket<{ got: number }>[] = [];
  try {
    console.log(`broker ${binary}, load average ${loadAverage()}`);
    await Bun.sleep(settleMs);
    // The first scrape of /metrics costs memory of its own: the baseline is taken after one.
    console.log(`${line(0, await memoryOf(broker.pid, adminPort))} (before any scrape)`);
    await Bun.sleep(settleMs);
    const base = await memoryOf(broker.pid, adminPort);
    console.log(line(0, base));
    let last = base;
    while (sockets.length < total) {
      const target = Math.min(total, sockets.length + step);
      while (sockets.length < target) sockets.push(await openIdle(broker.port, sockets.length));
      await Bun.sleep(settleMs);
      last = await memoryOf(broker.pid, adminPort);
      console.log(line(sockets.length, last));
    }
    const perConnection = (after: number, before: number) =>
      Math.round((after - before) / sockets.length);
    console.log(
      JSON.stringify({
        connections: sockets.length,
        baseRssMb: Math.round(base.rssKb / 102.4) / 10,
        rssMb: Math.round(last.rssKb / 102.4) / 10,
        rssBytesPerConnection: perConnection(last.rssKb * 1024, base.rssKb * 1024),
        anonBytesPerConnection: perConnection(last.anonKb * 1024, base.anonKb * 1024),
        heapUsedBytesPerConnection: perConnection(last.heapUsedBytes, base.heapUsedBytes),
        loadAverage: loadAverage(),
      }),
    );
    await Bun.sleep(Number(stringOption("--hold-ms") ?? 0));
  } finally {
    for (const socket of sockets) socket.end();
    await broker.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
