/**
 * A loopback TCP proxy between a Kafka client and the broker that loses produce responses: it
 * forwards everything, reads the request headers to know which correlation ids are Produce,
 * and for every `dropEvery`-th Produce response it swallows the response and cuts both sides
 * of the connection, as a network failure after the broker wrote the batch would. The client
 * then retries a batch that is already in the log.
 */
import { connect, createServer, type Server, type Socket } from "node:net";

const PRODUCE_API_KEY = 0;

export class ProduceResponseDropper {
  targetPort = 0;
  produceResponses = 0;
  dropped = 0;
  private readonly sockets = new Set<Socket>();

  private constructor(
    private readonly server: Server,
    readonly port: number,
    private readonly dropEvery: number,
    private readonly dropsMax: number,
  ) {
    server.on("connection", (socket) => this.accept(socket));
  }

  static async start(dropEvery: number, dropsMax: number): Promise<ProduceResponseDropper> {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const address = server.address();
    if (address === null || typeof address === "string") throw new Error("proxy has no port");
    return new ProduceResponseDropper(server, address.port, dropEvery, dropsMax);
  }

  private accept(client: Socket): void {
    const broker = connect(this.targetPort, "127.0.0.1");
    const produceIds = new Set<number>();
    const cut = () => {
      client.destroy();
      broker.destroy();
    };
    for (const s of [client, broker]) {
      this.sockets.add(s);
      s.on("error", cut);
      s.on("close", () => {
        this.sockets.delete(s);
        cut();
      });
    }
    client.on(
      "data",
      frames((frame) => {
        const view = Buffer.from(frame);
        if (view.readInt16BE(4) === PRODUCE_API_KEY) produceIds.add(view.readInt32BE(8));
        broker.write(frame);
      }),
    );
    broker.on(
      "data",
      frames((frame) => {
        const correlationId = Buffer.from(frame).readInt32BE(4);
        if (produceIds.delete(correlationId)) {
          this.produceResponses++;
          if (this.dropped < this.dropsMax && this.produceResponses % this.dropEvery === 0) {
            this.dropped++;
            cut();
            return;
          }
        }
        client.write(frame);
      }),
    );
  }

  async stop(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

/** Splits a byte stream into whole size-prefixed Kafka frames (prefix included). */
function frames(onFrame: (frame: Uint8Array) => void): (data: Buffer) => void {
  let buffered: Buffer = Buffer.alloc(0);
  return (data) => {
    buffered = buffered.length === 0 ? data : Buffer.concat([buffered, data]);
    while (buffered.length >= 4) {
      const frameBytes = 4 + buffered.readInt32BE(0);
      if (buffered.length < frameBytes) return;
      onFrame(buffered.subarray(0, frameBytes));
      buffered = buffered.subarray(frameBytes);
    }
  };
}
