/**
 * What a multi-broker test keeps for a failure it cannot reproduce at will (the rolling upgrade
 * once had a send give up after ~17 s of ECONNREFUSED): a timeline of which broker ports
 * accepted connections, probed every 100 ms, the client errors with their times, and every
 * broker process's stderr, written to a directory that is kept and named in the failure.
 */
import { writeFileSync } from "node:fs";
import { connect } from "node:net";
import { join } from "node:path";
import { tempDir } from "../support/broker-harness.ts";
import type { ChildBroker } from "../support/child-broker.ts";

const PROBE_INTERVAL_MS = 100;
const CONNECT_TIMEOUT_MS = 500;
/** A run of this length is ~10 minutes of transitions; the probe stops recording past it. */
const EVENTS_MAX = 10_000;

export interface TimedEvent {
  readonly atMs: number;
  readonly what: string;
}

function accepts(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    const done = (up: boolean) => {
      socket.destroy();
      resolve(up);
    };
    socket.setTimeout(CONNECT_TIMEOUT_MS, () => done(false));
    socket.once("connect", () => done(true));
    socket.once("error", () => done(false));
  });
}

/** Probes each address until stop(); records each change of listening state with its time. */
export function startListenProbe(addresses: ReadonlyMap<number, string>) {
  const events: TimedEvent[] = [];
  const state = new Map<number, boolean>();
  let running = true;
  const loop = (async () => {
    while (running) {
      const checks = [...addresses].map(async ([id, address]) => {
        const [host, port] = address.split(":");
        const up = await accepts(host!, Number(port));
        if (state.get(id) !== up && events.length < EVENTS_MAX) {
          events.push({ atMs: Date.now(), what: `broker ${id} ${up ? "listening" : "refusing"}` });
        }
        state.set(id, up);
      });
      await Promise.all(checks);
      await Bun.sleep(PROBE_INTERVAL_MS);
    }
  })();
  const stop = async () => {
    running = false;
    await loop;
  };
  return { events, stop };
}

/** The longest stretch in `events` during which no broker accepted connections, in ms. */
export function longestNoneListeningMs(events: readonly TimedEvent[]): number {
  const up = new Set<string>();
  let downSince: number | null = null;
  let longest = 0;
  for (const e of events) {
    const [subject, id, verb] = e.what.split(" ");
    if (subject !== "broker" || (verb !== "listening" && verb !== "refusing")) continue;
    if (verb === "listening") up.add(id!);
    else up.delete(id!);
    if (up.size === 0 && downSince === null) downSince = e.atMs;
    if (up.size > 0 && downSince !== null) {
      longest = Math.max(longest, e.atMs - downSince);
      downSince = null;
    }
  }
  return longest;
}

/** Writes the timeline and every broker's stderr to a kept temp dir; returns its path. */
export function keepFailureEvidence(
  timeline: readonly TimedEvent[],
  brokers: readonly { readonly id: number; readonly broker: ChildBroker }[],
): string {
  const dir = tempDir("quill-failure-evidence-");
  const startMs = timeline[0]?.atMs ?? 0;
  const lines = [...timeline]
    .sort((a, b) => a.atMs - b.atMs)
    .map((e) => `${new Date(e.atMs).toISOString()} +${e.atMs - startMs} ms ${e.what}`);
  writeFileSync(join(dir, "timeline.txt"), `${lines.join("\n")}\n`);
  for (const [i, { id, broker }] of brokers.entries()) {
    writeFileSync(join(dir, `broker-${id}.${i}.pid-${broker.pid}.log`), broker.stderrText);
  }
  return dir;
}
