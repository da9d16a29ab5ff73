/**
 * The controller's liveness probe as the probed broker sees it: an ApiVersions v3 request that
 * names Quill and its version (KIP-511), as Kafka's clients and Quill's own tools send it. A
 * plain TCP listener stands for the broker and reads the first request off the wire.
 */
import { afterEach, expect, test } from "bun:test";
import type { Socket } from "bun";
import { CLIENT_SOFTWARE_NAME, CLIENT_SOFTWARE_VERSION } from "../../src/client/cluster-client.ts";
import { BrokerLiveness } from "../../src/controller/broker-liveness.ts";
import { PLAINTEXT_SECURITY } from "../../src/network/inter-broker-client.ts";
import { ApiKey, decodeRequest, decodeRequestHeader } from "../../src/protocol/generated/index.ts";
import { Reader } from "../../src/protocol/reader.ts";
import { SILENT_LOGGER } from "../../src/util/logger.ts";
import { waitUntil } from "../support/wait-until.ts";

const closers: (() => void)[] = [];
afterEach(() => {
  for (const close of closers.splice(0)) close();
});

test("the probe is ApiVersions v3 with Quill's client software name and version", async () => {
  const frames: Uint8Array[] = [];
  let received = new Uint8Array(0);
  const server = Bun.listen<undefined>({
    hostname: "127.0.0.1",
    port: 0,
    socket: {
      data(_socket: Socket<undefined>, data: Uint8Array) {
        const joined = new Uint8Array(received.length + data.length);
        joined.set(received);
        joined.set(data, received.length);
        received = joined;
        const size = received.length >= 4 ? new DataView(received.buffer).getInt32(0) : -1;
        if (size >= 0 && received.length >= 4 + size) frames.push(received.slice(4, 4 + size));
      },
    },
  });
  closers.push(() => server.stop(true));
  const liveness = new BrokerLiveness({
    clientId: "controller-probe",
    security: PLAINTEXT_SECURITY,
    probeIntervalMs: 60_000,
    refusalsToSuspect: 3,
    probeTimeoutMs: 60_000,
    log: SILENT_LOGGER,
    onSuspect: () => {},
    onReturn: () => {},
  });
  closers.push(() => liveness.close());
  liveness.watch(1, "127.0.0.1", server.port);
  await waitUntil(() => frames.length > 0, 20_000, "the probe's request");
  const r = new Reader(frames[0]!);
  const header = decodeRequestHeader(r);
  expect([header.requestApiKey, header.requestApiVersion]).toEqual([ApiKey.ApiVersions, 3]);
  expect(header.clientId).toBe("controller-probe");
  const body = decodeRequest(ApiKey.ApiVersions, 3, r);
  expect([body.clientSoftwareName, body.clientSoftwareVersion]).toEqual([
    CLIENT_SOFTWARE_NAME,
    CLIENT_SOFTWARE_VERSION,
  ]);
});
