/**
 * Real clients read the responses the generated encoders write: kcat (librdkafka 2.0.2) and
 * kafkajs talk to the capture broker of scripts/capture-requests.ts over TCP.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { Kafka, logLevel } from "kafkajs";
import { CaptureBroker, GOLDEN_TOPIC } from "../../scripts/capture-requests.ts";

const HAVE_KCAT = Bun.which("kcat") !== null;
let broker: CaptureBroker;
let port: number;

beforeAll(() => {
  broker = new CaptureBroker();
  port = broker.start();
});
afterAll(() => broker.stop());

describe("real clients read generated responses", () => {
  test.skipIf(!HAVE_KCAT)(
    "kcat -L reads ApiVersions v3 (header v0) and Metadata",
    async () => {
      broker.client = "kcat";
      const proc = Bun.spawn(["kcat", "-b", `127.0.0.1:${port}`, "-L", "-J", "-m", "5"], {
        stdout: "pipe",
        stderr: "pipe",
      });
      const out = await new Response(proc.stdout).text();
      expect(await proc.exited).toBe(0);
      const metadata = JSON.parse(out) as {
        brokers: { id: number; name: string }[];
        topics: { topic: string; partitions: { partition: number; leader: number }[] }[];
      };
      expect(metadata.brokers).toEqual([{ id: 1, name: `127.0.0.1:${port}` }]);
      expect(metadata.topics.map((t) => t.topic)).toEqual([GOLDEN_TOPIC]);
      expect(metadata.topics[0]!.partitions[0]).toMatchObject({ partition: 0, leader: 1 });
      expect(broker.captured.map((c) => c.apiKey)).toEqual([18, 3]);
    },
    15_000,
  );

  test("kafkajs produces and reads the Produce v7 response", async () => {
    broker.client = "kafkajs";
    const kafka = new Kafka({
      clientId: "golden-test",
      brokers: [`127.0.0.1:${port}`],
      logLevel: logLevel.NOTHING,
      retry: { retries: 0 },
    });
    const producer = kafka.producer();
    await producer.connect();
    const result = await producer.send({ topic: GOLDEN_TOPIC, messages: [{ value: "x" }] });
    await producer.disconnect();
    expect(result).toEqual([
      expect.objectContaining({
        topicName: GOLDEN_TOPIC,
        partition: 0,
        errorCode: 0,
        baseOffset: "0",
      }),
    ]);
  }, 15_000);
});
