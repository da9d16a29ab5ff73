/**
 * The event loop's handle on the cleaner's Worker (cleaner-worker.ts): starts it on first use
 * (a broker without compacted topics never starts it), sends requests and resolves each with its
 * reply. The Worker answers them one at a time in the order they were sent; each is a whole
 * segment read and mapped or filtered, so a 1 GB cleaning costs the event loop a few dozen
 * messages (docs/log-compaction.md has the figures).
 *
 * The Worker holds the process open only while a request is out (ref/unref), so a cleaner at
 * rest never keeps a stopping broker alive. If the Worker dies (an uncaught error, terminate),
 * the requests in flight fail once its thread has exited, never before: a request's fds are lent
 * to the Worker until then, and closing one under a running Worker could let it read or write a
 * file that reused the number. The next request starts a new Worker.
 */
import { threadId as mainThreadId } from "node:worker_threads";
import type { CleanerWorkerReply, CleanerWorkerRequest } from "./cleaner-worker-messages.ts";

/**
 * Where the Worker's module is. Under `bun run`, next to this file. In the compiled binary,
 * bundled modules share the entry point's import.meta.url, so the path is given relative to
 * the bundle's root, the common folder of the build's entry points (`src/`, BUILD_ENTRY_POINTS
 * in scripts/build-info.ts); test/cli/compiled-binary.test.ts cleans a log with the binary.
 */
function workerUrl(): string {
  if (Bun.isStandaloneExecutable) return "./storage/cleaner-worker.ts";
  return new URL("./cleaner-worker.ts", import.meta.url).href;
}

interface Pending {
  /** The Worker it was sent to: only that Worker's exit fails it. */
  readonly worker: Worker;
  readonly resolve: (reply: CleanerWorkerReply) => void;
  readonly reject: (error: Error) => void;
}

export class CleanerThread {
  private worker: Worker | null = null;
  /** Requests sent and not answered yet, by id (answered in the order sent). */
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  /** Chunks the Worker has mapped or filtered, and the thread that did it (for tests). */
  chunksDone = 0;
  workerThreadId = mainThreadId;

  /** A request is out: the Worker is working while the event loop is free. */
  get busy(): boolean {
    return this.pending.size > 0;
  }

  /**
   * Sends a request now and waits for its reply. The
   * Worker handles requests in the order they were sent, so requests sent before this one's
   * reply is awaited are queued behind it, never reordered.
   */
  async request<T>(request: CleanerWorkerRequest): Promise<T> {
    const worker = this.started();
    const id = this.nextId++;
    const reply = await new Promise<CleanerWorkerReply>((resolve, reject) => {
      this.pending.set(id, { worker, resolve, reject });
      if (this.pending.size === 1) worker.ref();
      worker.postMessage({ ...request, id });
    });
    this.workerThreadId = reply.threadId;
    if (reply.error !== undefined) throw new Error(`cleaner worker: ${reply.error}`);
    const chunks = (reply.body as { chunks?: number } | null)?.chunks;
    if (chunks !== undefined) this.chunksDone += chunks;
    return reply.body as T;
  }

  /** Stops the Worker; a request in flight fails once its thread has exited. */
  terminate(): void {
    const worker = this.worker;
    if (worker === null) return;
    this.worker = null;
    worker.terminate();
  }

  private started(): Worker {
    if (this.worker !== null) return this.worker;
    const worker = new Worker(workerUrl());
    worker.unref();
    worker.onmessage = (event: MessageEvent<CleanerWorkerReply>) => {
      const pending = this.pending.get(event.data.id);
      if (pending === undefined) return;
      this.pending.delete(event.data.id);
      if (this.pending.size === 0) worker.unref();
      pending.resolve(event.data);
    };
    let failure = "exited";
    worker.addEventListener("error", (event) => {
      // Recorded for the exit that follows: requests fail only once the thread has stopped.
      failure = `failed: ${event.message}`;
      worker.terminate();
    });
    worker.addEventListener("close", () => {
      if (this.worker === worker) this.worker = null;
      this.fail(worker, new Error(`cleaner worker ${failure}`));
    });
    this.worker = worker;
    return worker;
  }

  private fail(worker: Worker, error: Error): void {
    for (const [id, pending] of this.pending) {
      if (pending.worker !== worker) continue;
      this.pending.delete(id);
      pending.reject(error);
    }
    if (this.pending.size === 0) worker.unref();
  }
}
