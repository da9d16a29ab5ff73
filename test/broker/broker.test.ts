/**
 * startBroker's steps share one stack of cleanups: a start that fails at a later step (the
 * listener's port in use, the broker id held by a live broker) closes what the earlier steps
 * opened. The data dir is left as a clean stop leaves it (no file open, the clean-shutdown
 * marker written), the ZooKeeper session is closed, and the next start on the same data dir
 * succeeds.
 */
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, readdirSync, readlinkSync, realpathSync } from "node:fs";
import { join } from "node:path";
import { startBroker } from "../../src/broker/broker.ts";
import { loadConfig } from "../../src/config/load-config.ts";
import { ErrorCode } from "../../src/protocol/errors.ts";
import { ApiKey } from "../../src/protocol/generated/index.ts";
import { CLEAN_SHUTDOWN_FILE } from "../../src/storage/log-manager.ts";
import {
  LineLogger,
  removeDir,
  type Settings,
  startInProcessBroker,
  tempDir,
} from "../support/broker-harness.ts";
import { requestOnce } from "../support/kafka-client.ts";
import { waitUntil } from "../support/wait-until.ts";
import {
  fourLetterWord,
  startZooKeeper,
  type ZooKeeperServer,
} from "../support/zookeeper-server.ts";

/** Files this process holds open under `dir` (read from /proc, so nothing is left out). */
function openFilesUnder(dir: string): string[] {
  const root = realpathSync(dir);
  return readdirSync("/proc/self/fd").flatMap((fd) => {
    try {
      const target = readlinkSync(`/proc/self/fd/${fd}`);
      return target.startsWith(root) ? [target] : [];
    } catch {
      return []; // closed between the listing and the readlink
    }
  });
}

/** Holds a loopback port (0: any free one), as another process would. */
function occupyPort(port = 0): { port: number; release(): void } {
  const listener = Bun.listen({ hostname: "127.0.0.1", port, socket: { data() {} } });
  return { port: listener.port, release: () => listener.stop(true) };
}

function configFor(dataDir: string, port: number, settings: Settings = {}) {
  const flags = [
    { key: "listeners", value: `127.0.0.1:${port}`, flag: "--listen" },
    { key: "log.dirs", value: dataDir, flag: "--data-dir" },
    ...Object.entries(settings).map(([key, value]) => ({ key, value, flag: "--set" })),
  ];
  return loadConfig({ flags }).config;
}

/** The data dir as a clean stop leaves it: nothing open, the marker that skips recovery. */
function expectClosedCleanly(dataDir: string): void {
  expect(openFilesUnder(dataDir)).toEqual([]);
  expect(existsSync(join(dataDir, CLEAN_SHUTDOWN_FILE))).toBe(true);
}

const until = (condition: () => boolean | Promise<boolean>, timeoutMs: number) =>
  waitUntil(condition, timeoutMs, "condition", 50);

describe("embedded", () => {
  test("a port in use fails the start after the logs opened; they are closed again", async () => {
    const dataDir = tempDir();
    try {
      const first = await startInProcessBroker({ dataDir });
      const created = await requestOnce(first.port, ApiKey.CreateTopics, 7, {
        topics: [{ name: "kept", numPartitions: 3, replicationFactor: 1 }],
      });
      expect(created.topics[0]!.errorCode).toBe(ErrorCode.NONE);
      await first.stop();
      expectClosedCleanly(dataDir);

      const taken = occupyPort();
      const logger = new LineLogger();
      try {
        await expect(startBroker(configFor(dataDir, taken.port), logger)).rejects.toThrow();
      } finally {
        taken.release();
      }
      expectClosedCleanly(dataDir);

      const again = await startInProcessBroker({ dataDir });
      try {
        const metadata = await requestOnce(again.port, ApiKey.Metadata, 9, {
          topics: [{ name: "kept", topicId: new Uint8Array(16) }],
          allowAutoTopicCreation: false,
          includeTopicAuthorizedOperations: false,
        });
        expect(metadata.topics[0]!.errorCode).toBe(ErrorCode.NONE);
        expect(metadata.topics[0]!.partitions.length).toBe(3);
      } finally {
        await again.stop();
      }
    } finally {
      removeDir(dataDir);
    }
  }, 60_000);
});

describe("ZooKeeper mode", () => {
  let zk: ZooKeeperServer;
  beforeAll(async () => {
    zk = await startZooKeeper();
  }, 60_000);
  afterAll(async () => {
    await zk.stop();
  });

  const aliveConnections = async () =>
    Number(/zk_num_alive_connections\s+(\d+)/.exec(await fourLetterWord(zk.port, "mntr"))![1]);
  const settings = (chroot: string, brokerId: number): Settings => ({
    "zookeeper.connect": `${zk.connectString}${chroot}`,
    "zookeeper.session.timeout.ms": "4000",
    "broker.id": String(brokerId),
  });

  /** Starts a broker bound to fail, then checks that it left nothing open behind it. */
  async function expectFailedStartClosesAll(dataDir: string, port: number, s: Settings) {
    const before = await aliveConnections();
    await expect(startBroker(configFor(dataDir, port, s), new LineLogger())).rejects.toThrow();
    expectClosedCleanly(dataDir);
    // The session is closed, not left to expire: ZooKeeper counts one connection fewer at once.
    await until(async () => (await aliveConnections()) <= before, 5_000);
  }

  test("a port in use closes the logs and the ZooKeeper session", async () => {
    const dataDir = tempDir();
    const taken = occupyPort();
    try {
      await expectFailedStartClosesAll(dataDir, taken.port, settings("/port-in-use", 1));
      const again = await startInProcessBroker({ dataDir, settings: settings("/port-in-use", 1) });
      await again.stop();
    } finally {
      taken.release();
      removeDir(dataDir);
    }
  }, 60_000);

  test("an id held by a live broker fails the start after the port was bound", async () => {
    const holder = await startInProcessBroker({ settings: settings("/id-held", 2) });
    const dataDir = tempDir();
    const reserved = occupyPort();
    const port = reserved.port;
    reserved.release();
    try {
      await expectFailedStartClosesAll(dataDir, port, settings("/id-held", 2));
      // The listener was closed too: its port can be bound again.
      occupyPort(port).release();
      await holder.stop();
      const again = await startInProcessBroker({ dataDir, settings: settings("/id-held", 2) });
      await again.stop();
    } finally {
      await holder.stop();
      removeDir(dataDir);
    }
  }, 60_000);
});
