/**
 * Pipelined request/response benchmark of the network layer (not a timed test).
 *
 *   bun scripts/bench-network.ts [--in-flight 64] [--seconds 2] [--body-bytes 100]
 *   bun scripts/bench-network.ts --range-mib 256 [--sendfile false] [--seconds 4]
 *
 * The server (this process) runs SocketServer with an echo handler; the client is a second Bun
 * process that keeps `--in-flight` requests outstanding and sends new ones in one write per data
 * event. Compare with docs/bun.md, Sockets: 1.38M req/s at 64 in flight for a bare Bun.listen
 * server that batches its writes.
 *
 * With `--range-mib N`, every response is instead an N MiB FileRange of a temporary file (in the
 * page cache), sent with sendfile or with the pread fallback, to measure MB/s (docs/bun.md,
 * Sockets: about 2166 MB/s for sendfile and 2538 MB/s from memory, client-bound).
 */

import { closeSync, mkdtempSync, openSync, rmSync, writeSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import type { RequestHandler } from "../src/network/request-handler.ts";
import { SocketServer } from "../src/network/socket-server.ts";
import { createLogger, stderrWrite } from "../src/util/logger.ts";

const { values } = parseArgs({
  options: {
    "in-flight": { type: "string", default: "64" },
    seconds: { type: "string", default: "2" },
    "body-bytes": { type: "string", default: "100" },
    "range-mib": { type: "string", default: "0" },
    sendfile: { type: "string", default: "true" },
    client: { type: "string" },
  },
});
const inFlightCount = Number(values["in-flight"]);
const durationMs = Number(values.seconds) * 1000;
const rangeBytes = Number(values["range-mib"]) * 1024 * 1024;
const bodyBytes = rangeBytes > 0 ? 8 : Number(values["body-bytes"]);
const responseBodyBytes = rangeBytes > 0 ? rangeBytes : bodyBytes;

if (values.client !== undefined) await runClient(Number(values.client));
else await runServer();

/** A page-cached temporary file and a handler answering every request with all of it. */
function rangeHandler(): { handler: RequestHandler; cleanup: () => void } {
  const dir = mkdtempSync(join(tmpdir(), "quill-bench-"));
  const path = join(dir, "segment.log");
  const writeFd = openSync(path, "w");
  const piece = new Uint8Array(1024 * 1024).fill(0x5a);
  for (let o = 0; o < rangeBytes; o += piece.length) writeSync(writeFd, piece);
  closeSync(writeFd);
  const fd = openSync(path, "r");
  const range = { fd, position: 0, sizeBytes: rangeBytes, release: () => {} };
  return {
    handler: { handle: () => ({ chunks: [range] }) },
    cleanup: () => {
      closeSync(fd);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function runServer(): Promise<void> {
  const echo = { handler: { handle: (frame: Uint8Array) => ({ chunks: [frame] }) }, cleanup() {} };
  const { handler, cleanup } = rangeBytes > 0 ? rangeHandler() : echo;
  const sendfileEnabled = values.sendfile !== "false";
  const host = "127.0.0.1";
  const server = new SocketServer({
    host,
    port: 0,
    handler,
    logger: createLogger("SocketServer", { format: "text", level: "INFO", write: stderrWrite }),
    sendfileEnabled,
  });
  const { port } = await server.start();
  const cpuBefore = process.cpuUsage();
  const child = Bun.spawn(
    [
      process.execPath,
      import.meta.path,
      "--client",
      String(port),
      "--in-flight",
      String(inFlightCount),
      "--seconds",
      String(durationMs / 1000),
      "--body-bytes",
      String(bodyBytes),
      "--range-mib",
      String(values["range-mib"]),
    ],
    { stdout: "pipe", stderr: "inherit" },
  );
  const requestCount = Number((await new Response(child.stdout).text()).trim());
  const cpu = process.cpuUsage(cpuBefore);
  await server.drainAndClose(1000);
  cleanup();
  const requestsPerSecond = requestCount / (durationMs / 1000);
  const cpuMicrosPerRequest = (cpu.user + cpu.system) / requestCount;
  if (rangeBytes > 0) {
    const megabytesPerSecond = (requestCount * rangeBytes) / 1e6 / (durationMs / 1000);
    const gibibytes = (requestCount * rangeBytes) / 2 ** 30;
    const cpuMsPerGibibyte = (cpu.user + cpu.system) / 1000 / gibibytes;
    const mode = server.sendfileEnabled ? "sendfile" : "pread";
    console.log(
      `${rangeBytes / 2 ** 20} MiB file ranges, ${mode}` +
        `, ${inFlightCount} in flight: ${Math.round(megabytesPerSecond)} MB/s, ` +
        `server CPU ${Math.round(cpuMsPerGibibyte)} ms/GiB`,
    );
    return;
  }
  console.log(
    `${bodyBytes} B requests, ${inFlightCount} in flight, ${durationMs / 1000} s: ` +
      `${Math.round(requestsPerSecond).toLocaleString("en")} req/s, ` +
      `server CPU ${cpuMicrosPerRequest.toFixed(2)} µs/req`,
  );
}

async function runClient(port: number): Promise<void> {
  const request = new Uint8Array(4 + bodyBytes);
  new DataView(request.buffer).setInt32(0, bodyBytes);
  const responseBytes = 4 + responseBodyBytes;
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
