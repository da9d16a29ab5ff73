/**
 * A plain node:net client for the network tests: writes raw bytes and reads size-prefixed
 * response frames, and can stop reading to play a slow consumer.
 */
import net from "node:net";

export class FrameClient {
  private received: Buffer[] = [];
  private receivedBytes = 0;
  private waiters: (() => void)[] = [];
  closed = false;
  readonly closedPromise: Promise<void>;

  private constructor(readonly socket: net.Socket) {
    socket.setNoDelay(true);
    socket.on("data", (data: Buffer) => {
      this.received.push(data);
      this.receivedBytes += data.length;
      this.wake();
    });
    this.closedPromise = new Promise((resolve) => {
      socket.on("close", () => {
        this.closed = true;
        this.wake();
        resolve();
      });
    });
    socket.on("error", () => {});
  }

  static connect(port: number): Promise<FrameClient> {
    return new Promise((resolve, reject) => {
      const onConnect = () => resolve(new FrameClient(socket));
      const socket = net.connect({ port, host: "127.0.0.1" }, onConnect);
      socket.once("error", reject);
    });
  }

  write(bytes: Uint8Array): void {
    this.socket.write(bytes);
  }

  pause(): void {
    this.socket.pause();
  }

  resume(): void {
    this.socket.resume();
  }

  close(): void {
    this.socket.destroy();
  }

  /** Reads `count` response frames (without their size prefixes), failing on close. */
  async readFrames(count: number): Promise<Buffer[]> {
    const frames: Buffer[] = [];
    while (frames.length < count) {
      const frame = this.takeFrame();
      if (frame !== null) {
        frames.push(frame);
        continue;
      }
      if (this.closed) throw new Error(`closed after ${frames.length} of ${count} frames`);
      await new Promise<void>((resolve) => this.waiters.push(resolve));
    }
    return frames;
  }

  get bufferedBytes(): number {
    return this.receivedBytes;
  }

  private takeFrame(): Buffer | null {
    if (this.receivedBytes < 4) return null;
    if (this.received[0]!.length < 4) this.received = [Buffer.concat(this.received)];
    const sizeBytes = this.received[0]!.readInt32BE(0);
    if (this.receivedBytes < 4 + sizeBytes) return null;
    const all = this.received.length === 1 ? this.received[0]! : Buffer.concat(this.received);
    const frame = all.subarray(4, 4 + sizeBytes);
    const rest = all.subarray(4 + sizeBytes);
    this.received = rest.length > 0 ? [rest] : [];
    this.receivedBytes = rest.length;
    return frame;
  }

  private wake(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const waiter of waiters) waiter();
  }
}

/** Encodes one request frame: size prefix, then the body. */
export function frame(body: Uint8Array): Buffer {
  const out = Buffer.alloc(4 + body.length);
  out.writeInt32BE(body.length, 0);
  out.set(body, 4);
  return out;
}

/** Request frames with correlation ids 0 .. count-1, concatenated as one packet. */
export function requests(count: number): Buffer {
  return Buffer.concat(Array.from({ length: count }, (_, i) => frame(requestBody(i, 0))));
}

/** A request body of at least 8 bytes: correlation id, then an argument, then padding. */
export function requestBody(correlationId: number, argument: number, paddingBytes = 0): Buffer {
  const body = Buffer.alloc(8 + paddingBytes);
  body.writeInt32BE(correlationId, 0);
  body.writeInt32BE(argument, 4);
  for (let i = 0; i < paddingBytes; i++) body[8 + i] = (correlationId + i) & 0xff;
  return body;
}

/** A logger that records lines, to assert on how many were written. */
export { LineLogger as RecordingLogger } from "../support/line-logger.ts";

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Polls `condition` every 5 ms until it holds or `timeoutMs` passes. */
export async function waitFor(condition: () => boolean, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error("condition not met in time");
    await sleep(5);
  }
}
