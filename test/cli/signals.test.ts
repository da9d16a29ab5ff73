import { describe, expect, test } from "bun:test";
import { join } from "node:path";

const fixture = join(import.meta.dir, "fixtures", "serve-with-listener.ts");

async function readUntil(
  reader: { read(): Promise<{ value?: Uint8Array; done: boolean }> },
  pattern: RegExp,
): Promise<RegExpMatchArray> {
  const decoder = new TextDecoder();
  let text = "";
  for (let reads = 0; reads < 1000; reads++) {
    const match = text.match(pattern);
    if (match) return match;
    const { value, done } = await reader.read();
    if (done) break;
    text += decoder.decode(value);
  }
  throw new Error(`output ended without ${pattern}: ${text}`);
}

async function connects(port: number): Promise<boolean> {
  try {
    const socket = await Bun.connect({ hostname: "127.0.0.1", port, socket: { data() {} } });
    socket.end();
    return true;
  } catch {
    return false;
  }
}

describe("quill serve stops cleanly on a signal", () => {
  for (const signal of ["SIGTERM", "SIGINT"] as const) {
    test(`${signal}: the stop callback finishes, then exit 0`, async () => {
      const proc = Bun.spawn([process.execPath, fixture, "--listen", "127.0.0.1:0"], {
        stdout: "pipe",
        stderr: "pipe",
      });
      const reader = proc.stdout.getReader();
      const port = Number((await readUntil(reader, /listening (\d+)/))[1]);
      expect(await connects(port)).toBe(true);
      proc.kill(signal);
      await readUntil(reader, /stopped cleanly/);
      expect(await proc.exited).toBe(0);
      expect(await new Response(proc.stderr).text()).toContain(`${signal} received, stopping`);
      expect(await connects(port)).toBe(false);
    }, 15_000);
  }

  test("SIGHUP reloads certificates and keeps serving; SIGTERM still stops", async () => {
    const proc = Bun.spawn([process.execPath, fixture, "--listen", "127.0.0.1:0"], {
      stdout: "pipe",
      stderr: "pipe",
    });
    const reader = proc.stdout.getReader();
    const port = Number((await readUntil(reader, /listening (\d+)/))[1]);
    proc.kill("SIGHUP");
    await readUntil(reader, /certificates reloaded/);
    expect(await connects(port)).toBe(true);
    proc.kill("SIGTERM");
    expect(await proc.exited).toBe(0);
    expect(await new Response(proc.stderr).text()).toContain(
      "SIGHUP: reloaded the certificates of 1 TLS listener(s) (SSL)",
    );
  }, 15_000);

  test("a bad config exits 2 before the broker starts (nothing listens)", async () => {
    const proc = Bun.spawn(
      [process.execPath, fixture, "--listen", "127.0.0.1:0", "--set", "message.max.bytes=-5"],
      { stdout: "pipe", stderr: "pipe" },
    );
    expect(await proc.exited).toBe(2);
    expect(await new Response(proc.stdout).text()).toBe("");
  }, 15_000);
});
