/**
 * `quill topic produce` as an idempotent producer with retries: its batches carry a producer id
 * and consecutive sequences (DescribeProducers shows them), a retriable error
 * (NOT_ENOUGH_REPLICAS) is retried until it clears, and written exactly once, or until
 * delivery.timeout.ms, ending with the error's name.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { ApiKey } from "../../src/protocol/generated/index.ts";
import {
  type InProcessBroker,
  removeDir,
  startInProcessBroker,
} from "../support/broker-harness.ts";
import { requestOnce } from "../support/kafka-client.ts";
import { quill, quillJson } from "./quill-client.ts";

let broker: InProcessBroker;
let b: string[];

beforeAll(async () => {
  broker = await startInProcessBroker({});
  b = ["-b", broker.bootstrap];
}, 60_000);
afterAll(async () => {
  await broker.stop();
  removeDir(broker.dataDir);
});

const lines = (from: number, to: number) =>
  Array.from({ length: to - from }, (_, i) => `r${from + i}\n`).join("");

describe("idempotent producer", () => {
  test("acks=all batches carry a producer id and consecutive sequences", async () => {
    await quillJson(["topic", "create", "idem", "-p", "1", ...b]);
    await quillJson(["topic", "produce", "idem", ...b], lines(0, 50));
    await quillJson(["topic", "produce", "idem", ...b], lines(50, 60));
    const described = await requestOnce(broker.port, ApiKey.DescribeProducers, 0, {
      topics: [{ name: "idem", partitionIndexes: [0] }],
    });
    const producers = described.topics[0]!.partitions[0]!.activeProducers;
    // Two runs, two producer ids, each starting at sequence 0.
    expect(producers.map((p) => p.lastSequence).sort((x, y) => x - y)).toEqual([9, 49]);
    expect(producers.every((p) => p.producerId >= 0n)).toBe(true);
    const plain = await quill(["topic", "produce", "idem", "-a", "1", ...b], { stdin: "x\n" });
    expect(plain.code).toBe(0);
    const refused = await quill(
      ["topic", "produce", "idem", "-a", "1", "-X", "enable.idempotence=true", ...b],
      { stdin: "x\n" },
    );
    expect(refused.code).toBe(2);
  }, 30_000);

  test("NOT_ENOUGH_REPLICAS is retried until it clears, then written once", async () => {
    await quillJson(["topic", "create", "isr", "-p", "1", "-c", "min.insync.replicas=2", ...b]);
    const timedOut = await quill(
      ["topic", "produce", "isr", "-X", "delivery.timeout.ms=500", ...b],
      { stdin: "lost\n" },
    );
    expect(timedOut.code).toBe(3);
    expect(timedOut.stderr).toContain("NOT_ENOUGH_REPLICAS");
    const producing = quill(["topic", "produce", "isr", "-X", "delivery.timeout.ms=60000", ...b], {
      stdin: lines(0, 20),
    });
    await Bun.sleep(1_000);
    await quillJson(["topic", "alter-config", "isr", "--set", "min.insync.replicas=1", ...b]);
    const produced = await producing;
    expect(produced.stderr).toContain("produced 20 records");
    expect(produced.code).toBe(0);
    const consumed = await quill(["topic", "consume", "isr", "-e", ...b]);
    expect(consumed.stdout).toBe(lines(0, 20));
  }, 60_000);
});
