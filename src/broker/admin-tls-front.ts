import type { Socket, TCPSocketListener } from "bun";
import { peerCertificate } from "../security/peer-certificate.ts";
import type { TlsServerConfig } from "../security/tls-server-config.ts";
import type { Logger } from "../util/logger.ts";

/**
 * The TLS side of the admin listener with `admin.authentication=mtls`. Bun.serve verifies client
 * certificates but does not show a request which certificate its connection presented, so the
 * listener's address is a Bun.listen TLS server (as the Kafka listeners are: the same handshake
 * check and principal mapping) that forwards each connection's plain bytes to the HTTP server
 * on a loopback port. The forwarding connection's local port names the client: `peerOf` gives
 * the HTTP server, for a request's source port, the client's address and certificate principal.
 * A connection to the loopback port that did not come through here has no entry, and is refused.
 *
 * Backpressure both ways: a short write keeps the rest and pauses the other side until `drain`.
 */
export interface TlsPeer {
  readonly host: string;
  /** `User:<mapped subject>`, or null when the client sent no certificate. */
  readonly principal: string | null;
}

export interface TlsFront {
  readonly hostname: string;
  readonly port: number;
  peerOf(backendSourcePort: number): TlsPeer | undefined;
  stop(): void;
}

/** Open client connections per front; each costs two sockets. */
const CONNECTIONS_MAX = 256;
/** A client that has not finished its handshake by then is dropped. */
const HANDSHAKE_TIMEOUT_S = 10;

interface Pipe {
  front: Socket<Pipe | undefined> | null;
  back: Socket<Pipe> | null;
  /** Bytes a short write left, per destination. */
  readonly toBack: Uint8Array[];
  readonly toFront: Uint8Array[];
  peer: TlsPeer | null;
  ended: boolean;
}

export function startTlsFront(
  address: { host: string; port: number },
  tls: TlsServerConfig,
  backendPort: number,
  log: Logger,
): TlsFront {
  const peers = new Map<number, TlsPeer>();
  let open = 0;
  const listener: TCPSocketListener<Pipe | undefined> = Bun.listen<Pipe | undefined>({
    hostname: address.host,
    port: address.port,
    data: undefined,
    tls: tls.options,
    socket: {
      open(front) {
        if (open >= CONNECTIONS_MAX) return void front.terminate();
        open++;
        front.data = { front, back: null, toBack: [], toFront: [], peer: null, ended: false };
        front.timeout(HANDSHAKE_TIMEOUT_S);
      },
      handshake(front, success, error) {
        const pipe = front.data;
        if (pipe === undefined) return;
        const cert = front.getPeerCertificate() as { raw?: Uint8Array } | undefined;
        const peer = peerCertificate(cert?.raw, error, tls.principalMapper);
        if (!success || peer.kind === "refused") {
          const reason = peer.kind === "refused" ? peer.reason : "TLS handshake failed";
          log.info(`admin listener: ${front.remoteAddress} refused: ${reason}`);
          return void front.terminate();
        }
        front.timeout(0);
        const principal = peer.kind === "principal" ? peer.principal : null;
        pipe.peer = { host: front.remoteAddress, principal };
        connectBack(pipe, backendPort, peers);
      },
      data: (front, bytes) => front.data && send(front.data, "toBack", bytes),
      drain: (front) => front.data && flush(front.data, "toFront"),
      timeout: (front) => front.terminate(),
      close(front) {
        if (front.data === undefined) return;
        open--;
        front.data.front = null;
        endPipe(front.data, "toBack");
      },
      error: (front) => front.terminate(),
    },
  });
  return {
    hostname: listener.hostname,
    port: listener.port,
    peerOf: (port) => peers.get(port),
    stop: () => listener.stop(true),
  };
}

function connectBack(pipe: Pipe, backendPort: number, peers: Map<number, TlsPeer>): void {
  let localPort = -1;
  // Until the backend connection opens, what the client sends waits with its reading paused.
  pipe.front?.pause();
  Bun.connect<Pipe>({
    hostname: "127.0.0.1",
    port: backendPort,
    data: pipe,
    socket: {
      open(back) {
        localPort = back.localPort;
        peers.set(localPort, pipe.peer!);
        pipe.back = back;
        if (pipe.front === null) return void back.end();
        flush(pipe, "toBack");
      },
      data: (back, bytes) => send(back.data, "toFront", bytes),
      drain: (back) => flush(back.data, "toBack"),
      close(back) {
        peers.delete(localPort);
        back.data.back = null;
        endPipe(back.data, "toFront");
      },
      error: (back) => back.terminate(),
    },
  }).catch(() => pipe.front?.terminate());
}

type Direction = "toBack" | "toFront";

const destination = (pipe: Pipe, d: Direction) => (d === "toBack" ? pipe.back : pipe.front);
const source = (pipe: Pipe, d: Direction) => (d === "toBack" ? pipe.front : pipe.back);

/** Writes what a side read to the other side, keeping what does not fit. */
function send(pipe: Pipe, d: Direction, bytes: Uint8Array): void {
  // Bun hands every data event a fresh buffer, so keeping it is safe.
  pipe[d].push(bytes);
  flush(pipe, d);
}

/** Writes what waits towards one side; pauses the other side while anything is left. */
function flush(pipe: Pipe, d: Direction): void {
  const to = destination(pipe, d);
  const queue = pipe[d];
  if (to === null) return;
  while (queue.length > 0) {
    const chunk = queue[0]!;
    const n = to.write(chunk);
    if (n < chunk.length) {
      queue[0] = chunk.subarray(n);
      source(pipe, d)?.pause();
      return;
    }
    queue.shift();
  }
  source(pipe, d)?.resume();
  if (pipe.ended) to.end();
}

/** One side closed: the other ends once what it still has to receive is written. */
function endPipe(pipe: Pipe, d: Direction): void {
  pipe.ended = true;
  const to = destination(pipe, d);
  if (to !== null && pipe[d].length === 0) to.end();
}
