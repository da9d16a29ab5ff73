/**
 * Debian's chromium, headless, driven through the DevTools protocol over its WebSocket (no
 * Puppeteer): open a page, navigate and wait for load, evaluate expressions, take screenshots,
 * and collect what would show as errors in the browser's console (exceptions, console.error,
 * failed loads).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const DEVTOOLS_LINE = /DevTools listening on (ws:\/\/\S+)/;

export class HeadlessChromium {
  private nextId = 1;
  private readonly waiting = new Map<number, (message: CdpMessage) => void>();
  private readonly loadWaiters: (() => void)[] = [];
  /** Console errors, uncaught exceptions and failed loads, as text. */
  readonly errors: string[] = [];

  private constructor(
    private readonly proc: ReturnType<typeof Bun.spawn>,
    private readonly socket: WebSocket,
    private readonly profileDir: string,
  ) {
    socket.addEventListener("message", (event) => this.onMessage(String(event.data)));
  }

  static async start(): Promise<HeadlessChromium> {
    const profileDir = mkdtempSync(join(tmpdir(), "quill-chromium-"));
    const proc = Bun.spawn(
      [
        "chromium",
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--remote-debugging-address=127.0.0.1",
        "--remote-debugging-port=0",
        `--user-data-dir=${profileDir}`,
        "--window-size=1280,900",
        "about:blank",
      ],
      { stdout: "ignore", stderr: "pipe" },
    );
    const browserUrl = await devToolsUrl(proc.stderr as ReadableStream<Uint8Array>);
    const port = new URL(browserUrl).port;
    const targets = (await (await fetch(`http://127.0.0.1:${port}/json/list`)).json()) as {
      type: string;
      webSocketDebuggerUrl: string;
    }[];
    const pageTarget = targets.find((t) => t.type === "page")!;
    const socket = new WebSocket(pageTarget.webSocketDebuggerUrl);
    await new Promise((resolve, reject) => {
      socket.addEventListener("open", resolve, { once: true });
      socket.addEventListener("error", reject, { once: true });
    });
    const browser = new HeadlessChromium(proc, socket, profileDir);
    await browser.send("Page.enable");
    await browser.send("Runtime.enable");
    await browser.send("Log.enable");
    return browser;
  }

  send(method: string, params: object = {}): Promise<CdpMessage> {
    const id = this.nextId++;
    this.socket.send(JSON.stringify({ id, method, params }));
    return new Promise((resolve, reject) => {
      this.waiting.set(id, (m) =>
        m.error ? reject(new Error(JSON.stringify(m.error))) : resolve(m),
      );
    });
  }

  async goto(url: string): Promise<void> {
    const loaded = new Promise<void>((resolve) => this.loadWaiters.push(resolve));
    await this.send("Page.navigate", { url });
    await loaded;
  }

  /** Evaluates an expression that loads another page (a form submitted) and waits for it. */
  async navigateBy(expression: string): Promise<void> {
    const loaded = new Promise<void>((resolve) => this.loadWaiters.push(resolve));
    await this.evaluate(expression);
    await loaded;
  }

  async evaluate<T>(expression: string): Promise<T> {
    const m = await this.send("Runtime.evaluate", { expression, returnByValue: true });
    return m.result?.result?.value as T;
  }

  async screenshot(path: string): Promise<void> {
    const m = await this.send("Page.captureScreenshot", {
      format: "png",
      captureBeyondViewport: true,
    });
    await Bun.write(path, Buffer.from(m.result!.data as string, "base64"));
  }

  async close(): Promise<void> {
    this.socket.close();
    this.proc.kill();
    await this.proc.exited;
    rmSync(this.profileDir, { recursive: true, force: true });
  }

  private onMessage(text: string): void {
    const m = JSON.parse(text) as CdpMessage;
    if (m.id !== undefined) {
      this.waiting.get(m.id)?.(m);
      this.waiting.delete(m.id);
      return;
    }
    // biome-ignore lint/suspicious/noExplicitAny: DevTools event payloads, read defensively
    const p = m.params as Record<string, any> | undefined;
    if (m.method === "Page.loadEventFired") for (const wake of this.loadWaiters.splice(0)) wake();
    if (m.method === "Runtime.exceptionThrown") this.errors.push(`exception: ${JSON.stringify(p)}`);
    if (m.method === "Runtime.consoleAPICalled" && p?.type === "error") {
      this.errors.push(`console.error: ${JSON.stringify(p.args)}`);
    }
    if (m.method === "Log.entryAdded" && p?.entry?.level === "error") {
      this.errors.push(`log: ${p.entry.text} ${p.entry.url ?? ""}`);
    }
  }
}

interface CdpMessage {
  id?: number;
  method?: string;
  params?: unknown;
  result?: { result?: { value?: unknown }; data?: unknown };
  error?: unknown;
}

async function devToolsUrl(stderr: ReadableStream<Uint8Array>): Promise<string> {
  const reader = stderr.getReader();
  const decoder = new TextDecoder();
  let text = "";
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    const { value, done } = await reader.read();
    if (done) break;
    text += decoder.decode(value, { stream: true });
    const match = text.match(DEVTOOLS_LINE);
    if (match !== null) {
      // Keep draining stderr so chromium never blocks on a full pipe.
      void (async () => {
        while (!(await reader.read()).done) {}
      })();
      return match[1]!;
    }
  }
  throw new Error(`chromium printed no DevTools URL: ${text.slice(0, 2000)}`);
}
