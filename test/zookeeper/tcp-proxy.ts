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
    client.on("data", forward(upstream));
    upstream.on("data", forward(client));
    client.on("close", () => upstream.destroy());
    upstream.on("close", () => client.destroy());
  }

  private track(socket: Socket): void {
    this.sockets.add(socket);
    socket.on("error", () => socket.destroy());
    socket.on("close", () => this.sockets.delete(socket));
  }
}
