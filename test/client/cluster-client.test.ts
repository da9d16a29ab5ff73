// The CLI's client names itself in ApiVersions (KIP-511) as Kafka clients do, and the broker
// names the pair in the log line of a connection it closes.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { UnreachableError } from "../../src/client/client-errors.ts";
import {
  CLIENT_SOFTWARE_NAME,
  CLIENT_SOFTWARE_VERSION,
  ClusterClient,
} from "../../src/client/cluster-client.ts";
import { ApiKey } from "../../src/protocol/generated/index.ts";
import { VERSION } from "../../src/version.ts";
import { type InProcessBroker, startInProcessBroker } from "../support/broker-harness.ts";

/** Small enough that a Metadata request for a few hundred topics is over it. */
const MAX_REQUEST_BYTES = 2_000;
let b: InProcessBroker;

beforeAll(async () => {
  b = await startInProcessBroker({
    settings: { "socket.request.max.bytes": String(MAX_REQUEST_BYTES) },
  });
}, 60_000);

afterAll(async () => {
  await b?.stop();
});

test("ApiVersions names the client quill and its version; the broker logs them", async () => {
  expect(CLIENT_SOFTWARE_NAME).toBe("quill");
  expect(CLIENT_SOFTWARE_VERSION).toBe(VERSION);
  const client = await ClusterClient.connect({
    bootstrap: [{ host: b.host, port: b.port }],
    clientId: "software-name-test",
    requestTimeoutMs: 10_000,
    connectTimeoutMs: 10_000,
  });
  try {
    expect(client.supports(ApiKey.Metadata)).toBe(true);
    const topics = Array.from({ length: 300 }, (_, i) => `topic-with-a-long-name-${i}`);
    await expect(client.metadata(topics)).rejects.toBeInstanceOf(UnreachableError);
    const closed = b.logger.lines.find((line) => line.includes("Closing connection"));
    expect(closed).toContain(`(quill/${VERSION}): request size `);
  } finally {
    client.close();
  }
});
