/**
 * Pipelined request/response benchmark of the network layer (not a timed test).
 *
 *   bun scripts/bench-network.ts [--in-flight 64] [--seconds 2] [--body-bytes 100]
 *
 * The server (this process) runs SocketServer with an echo handler; the client is a second Bun
 * process that keeps `--in-flight` requests outstanding and sends new ones in one write per data
 * event. Compare with notes/bun-1.4.4.md §3: 1.38M req/s at 64 in flight for a bare Bun.listen
 * server that batches its writes.
 */
import { parseArgs } from "node:util";
import { SocketServer } from "../src/network/socket-server.ts";

const { values } = parseArgs({
  options: {
    "in-flight": { type: "string", default: "64" },
    seconds: { type: "string", default: "2" },
    "body-bytes": { type: "string", default: "100" },
    client: { type: "string" },
  },
});
const inFlightCount = Number(values["in-flight"]);
const durationMs = Number(values.seconds) * 1000;
const bodyBytes = Number(values["body-bytes"]);

if (values.client !== undefined) await runClient(Number(values.client));
else await runServer();

async function runServer(): Promise<void> {
  const server = new SocketServer({
    host: "127.0.0.1",
    port: 0,
    handler: { handle: (frame) => ({ chunks: [frame] }) },
    logger: console,
  });
  const { port } = await server.start();
  const cpuBefore = process.cpuUsage();
  const child = Bun.spawn([process.execPath, import.meta.path, "--client", String(port),
    "--in-flight", String(inFlightCount), "--seconds", String(durationMs / 1000),
    "--body-bytes", String(bodyBytes)], { stdout: "pipe", stderr: "inherit" });
  const requestCount = Number((await new Response(child.stdout).text()).trim());
  const cpu = process.cpuUsage(cpuBefore);
  await server.drainAndClose(1000);
  const requestsPerSecond = requestCount / (durationMs / 1000);
  const cpuMicrosPerRequest = (cpu.user + cpu.system) / requestCount;
  console.log(`${bodyBytes} B requests, ${inFlightCount} in flight, ${durationMs / 1000} s: ` +
    `${Math.round(requestsPerSecond).toLocaleString("en")} req/s, ` +
    `server CPU ${cpuMicrosPerRequest.toFixed(2)} µs/req`);
}

async function runClient(port: number): Promise<void> {
  const request = new Uint8Array(4 + bodyBytes);
  new DataView(request.buffer).setInt32(0, bodyBytes);
  const responseBytes = 4 + bodyBytes;
  let receivedBytes = 0;
  let completedCount = 0;
  let pendingWrite: Uint8Array | null = null;
  let running = true;
  const sendRequests = (socket: { write(d: Uint8Array): number }, count: number) => {
    const batch = new Uint8Array(count * request.length);
    for (let i = 0; i < count; i++) batch.set(request, i * request.length);
    const all: Uint8Array = pendingWrite === null ? batch : Buffer.concat([pendingWrite, batch]);
    const written = socket.write(all);
    pendingWrite = written < all.length ? all.subarray(Math.max(written, 0)) : null;
  };
  await Bun.connect({
    hostname: "127.0.0.1",
    port,
    socket: {
      open: (socket) => sendRequests(socket, inFlightCount),
      data: (socket, data) => {
        receivedBytes += data.length;
        const done = Math.floor(receivedBytes / responseBytes);
        receivedBytes -= done * responseBytes;
        completedCount += done;
        if (running && done > 0) sendRequests(socket, done);
      },
      drain: (socket) => {
        if (pendingWrite !== null) sendRequests(socket, 0);
      },
    },
  });
  await Bun.sleep(durationMs);
  running = false;
  process.stdout.write(`${completedCount}\n`);
  process.exit(0);
}
