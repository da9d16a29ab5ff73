/**
 * A loopback TCP proxy that tests put between a client and ZooKeeper to cut the link without
 * touching the server: "refuse" closes every connection and refuses new ones (the server is
 * still up, so it expires sessions whose client stays away); "blackhole" keeps connections open
 * but drops every byte (a dead network that never sends a reset).
 */
import { connect, createServer, type Server, type Socket } from "node:net";

export type ProxyMode = "forward" | "refuse" | "blackhole";

export class TcpProxy {
  private mode: ProxyMode = "forward";
  /** A request type (ZooKeeper's OpCode) whose first request is delivered, then the link cut. */
  private cutAfter: number | null = null;
  /** Requests of that type let through before the one that is cut. */
  private cutSkips = 0;
  private readonly sockets = new Set<Socket>();

  private constructor(
    private readonly server: Server,
    readonly port: number,
    private readonly targetPort: number,
  ) {
    server.on("connection", (socket) => this.accept(socket));
  }

  static async start(targetPort: number): Promise<TcpProxy> {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const address = server.address();
    if (address === null || typeof address === "string") throw new Error("proxy has no port");
    return new TcpProxy(server, address.port, targetPort);
  }

  get connectString(): string {
    return `127.0.0.1:${this.port}`;
  }

  /**
   * "blackhole" keeps open connections but drops their bytes from then on; "refuse" closes
   * them; "forward" closes the ones a blackhole broke (their streams lost bytes) and forwards
   * new ones.
   */
  setMode(mode: ProxyMode): void {
    this.mode = mode;
    if (mode === "blackhole") return;
    for (const socket of this.sockets) socket.destroy();
    this.sockets.clear();
  }

  /**
   * The next request of type `opCode` (1 create, 5 setData) reaches ZooKeeper, then the
   * connection is cut before its reply comes back: a write applied whose client sees only a
   * connection loss. One-shot; the first `skip` such requests pass.
   */
  cutAfterRequest(opCode: number, skip = 0): void {
    this.cutAfter = opCode;
    this.cutSkips = skip;
  }

  async close(): Promise<void> {
    this.setMode("refuse");
    await new Promise((resolve) => this.server.close(resolve));
  }

  private accept(client: Socket): void {
    if (this.mode === "refuse") {
      client.destroy();
      return;
    }
    this.track(client);
    if (this.mode === "blackhole") {
      client.on("data", () => {});
      return;
    }
    const upstream = connect({ host: "127.0.0.1", port: this.targetPort });
    this.track(upstream);
    const forward = (to: Socket) => (chunk: Buffer) => {
      if (this.mode === "forward") to.write(chunk);
    };
    let pending = Buffer.alloc(0);
    let handshake = true;
    // Set once the cut request passed: its reply (and anything after) never reaches the client.
    let muted = false;
    client.on("data", (chunk: Buffer) => {
      if (this.mode !== "forward") return;
      upstream.write(chunk);
      // Every frame is followed (not only once a cut is asked for), to know where frames start.
      pending = Buffer.concat([pending, chunk]);
      // Frames: 4-byte length, then (after the connect request) xid and the request type.
      while (pending.length >= 4 && pending.length >= 4 + pending.readInt32BE(0)) {
        const frame = pending.subarray(4, 4 + pending.readInt32BE(0));
        pending = pending.subarray(4 + frame.length);
        const type = handshake ? null : frame.readInt32BE(4);
        handshake = false;
        if (type === null || type !== this.cutAfter || this.cutSkips-- > 0) continue;
        this.cutAfter = null;
        muted = true;
        // The request is written upstream already; the cut waits for ZooKeeper to apply it.
        setTimeout(() => upstream.destroy(), 50);
        return;
      }
    });
    upstream.on("data", (chunk: Buffer) => {
      if (!muted) forward(client)(chunk);
    });
    client.on("close", () => upstream.destroy());
    upstream.on("close", () => client.destroy());
  }

  private track(socket: Socket): void {
    this.sockets.add(socket);
    socket.on("error", () => socket.destroy());
    socket.on("close", () => this.sockets.delete(socket));
  }
}
