import { expect, test } from "bun:test";
import { brokerLogger, createLogger, SILENT_LOGGER } from "../../src/util/logger.ts";

const AT = Date.UTC(2026, 11, 1, 20, 15, 3, 123);

function capture(format: "text" | "json", level: "DEBUG" | "INFO" | "WARN" | "ERROR" = "INFO") {
  const lines: string[] = [];
  const log = createLogger("ReplicaManager", {
    format,
    level,
    write: (l) => lines.push(l),
    nowMs: () => AT,
  });
  return { lines, log };
}

test("text: ISO-8601 UTC timestamp with milliseconds, level, [component], message, fields", () => {
  const { lines, log } = capture("text");
  log.info("leader epoch 3");
  log.warn("shrinking ISR", { topic: "t", partition: 0 });
  log.child("IsrManager").error("failed", { errorCode: 7 });
  expect(lines).toEqual([
    "2026-12-01T20:15:03.123Z INFO [ReplicaManager] leader epoch 3",
    "2026-12-01T20:15:03.123Z WARN [ReplicaManager] shrinking ISR topic=t partition=0",
    "2026-12-01T20:15:03.123Z ERROR [IsrManager] failed errorCode=7",
  ]);
});

test("json: one object per line with ts, level, component, msg and the fields", () => {
  const { lines, log } = capture("json");
  log.warn('a "quoted" message\nsecond line', {
    topic: "t",
    partition: 2,
    offset: 10n,
    msg: "kept out",
  });
  expect(lines.length).toBe(1);
  expect(JSON.parse(lines[0]!)).toEqual({
    ts: "2026-12-01T20:15:03.123Z",
    level: "WARN",
    component: "ReplicaManager",
    msg: 'a "quoted" message\nsecond line',
    topic: "t",
    partition: 2,
    offset: "10",
  });
});

test("lines below log.level are dropped without building their message", () => {
  const { lines, log } = capture("text", "WARN");
  let built = 0;
  log.info(() => `costly ${++built}`);
  log.debug("dropped");
  log.warn(() => `kept ${++built}`);
  expect(built).toBe(1);
  expect(lines).toEqual(["2026-12-01T20:15:03.123Z WARN [ReplicaManager] kept 1"]);
  expect(log.enabled("INFO")).toBe(false);
  expect(log.enabled("ERROR")).toBe(true);
  expect(log.child("X").enabled("INFO")).toBe(false);
});

test("brokerLogger follows log.format and log.level; SILENT_LOGGER writes nothing", () => {
  const lines: string[] = [];
  const log = brokerLogger({ "log.format": "json", "log.level": "ERROR" }, (l) => lines.push(l));
  log.warn("dropped");
  log.error("kept");
  expect(lines.map((l) => JSON.parse(l).component)).toEqual(["Broker"]);
  SILENT_LOGGER.error("nothing");
  expect(SILENT_LOGGER.child("x").enabled("ERROR")).toBe(false);
});
