import { afterAll, beforeAll, expect, test } from "bun:test";
import packageJson from "../../package.json" with { type: "json" };
import { supportedApiVersions } from "../../src/api/18-api-versions.ts";
import { API_HANDLERS } from "../../src/api/handlers.ts";
import { ErrorCode } from "../../src/protocol/errors.ts";
import { ApiKey } from "../../src/protocol/generated/index.ts";
import { type InProcessBroker, startInProcessBroker } from "../support/broker-harness.ts";
import { KafkaClient, requestOnce } from "../support/kafka-client.ts";

let b: InProcessBroker;
beforeAll(async () => {
  b = await startInProcessBroker();
}, 60_000);
afterAll(async () => {
  await b.stop();
});

test("the broker's first log line names the version, commit and build date", () => {
  // Run from source: no --define, so commit and date read "dev".
  expect(b.logger.lines[0]).toBe(
    `INFO quill: starting broker: quill ${packageJson.version} (commit dev, built dev), ` +
      `pid ${process.pid}`,
  );
});

test("v3+: a valid client software name and version are answered with every API", async () => {
  for (const version of [3, 4]) {
    const res = await requestOnce(b.port, ApiKey.ApiVersions, version, {
      clientSoftwareName: "librdkafka",
      clientSoftwareVersion: "2.3.0-RC1",
    });
    expect(res.errorCode).toBe(ErrorCode.NONE);
    expect(res.apiKeys.map((k) => k.apiKey)).toContain(ApiKey.Produce);
  }
});

test("the API version list is made once, not per connection", () => {
  // Every client opens with ApiVersions: a list of ~75 objects per request was 5 KB of garbage
  // per connection, 20 MB of heap growth when 5,000 clients connected at once.
  const ranges = supportedApiVersions(API_HANDLERS);
  expect(supportedApiVersions(API_HANDLERS)).toBe(ranges);
  expect(ranges.map((r) => r.apiKey)).toEqual(
    API_HANDLERS.map((h) => h.apiKey).sort((a, b) => a - b),
  );
});

test("v3+: a name or version outside Kafka's pattern is INVALID_REQUEST with no API keys", async () => {
  const bad = [
    { clientSoftwareName: "", clientSoftwareVersion: "1.0" },
    { clientSoftwareName: "kafka client", clientSoftwareVersion: "1.0" },
    { clientSoftwareName: "java", clientSoftwareVersion: "3.9.0-" },
    { clientSoftwareName: "-java", clientSoftwareVersion: "3.9.0" },
  ];
  for (const body of bad) {
    const res = await requestOnce(b.port, ApiKey.ApiVersions, 3, body);
    expect({ body, errorCode: res.errorCode, apiKeys: res.apiKeys }).toEqual({
      body,
      errorCode: ErrorCode.INVALID_REQUEST,
      apiKeys: [],
    });
  }
});

test("a connection's log line names the client software it announced", async () => {
  const client = await KafkaClient.connect(b.port);
  try {
    await client.request(ApiKey.ApiVersions, 3, {
      clientSoftwareName: "franz-go",
      clientSoftwareVersion: "1.18.0",
    });
    // API key 9999 does not exist: the broker closes the connection with one log line.
    const frame = Buffer.alloc(14);
    frame.writeInt32BE(10, 0);
    frame.writeInt16BE(9999, 4);
    frame.writeInt32BE(7, 8);
    frame.writeInt16BE(-1, 12);
    client.sendRaw(frame);
    const deadlineMs = Date.now() + 10_000;
    const closing = () => b.logger.lines.find((l) => l.includes("Closing connection"));
    while (closing() === undefined && Date.now() < deadlineMs) await Bun.sleep(20);
    expect(closing()).toContain("(franz-go/1.18.0): unreadable request header: API key 9999");
  } finally {
    client.close();
  }
});
