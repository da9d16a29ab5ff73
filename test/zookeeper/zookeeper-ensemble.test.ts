/**
 * A three-node ZooKeeper ensemble from the harness: losing one node (the leader, the worst
 * case) must not stop writes, and the node rejoins when restarted.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { ZooKeeperClient } from "../../src/zookeeper/zookeeper-client.ts";
import { ZooKeeperUnavailableError } from "../../src/zookeeper/zookeeper-errors.ts";
import {
  fourLetterWord,
  startZooKeeperEnsemble,
  type ZooKeeperEnsemble,
} from "../support/zookeeper-server.ts";

let ensemble: ZooKeeperEnsemble;
let client: ZooKeeperClient;

async function mode(port: number): Promise<string> {
  const answer = await fourLetterWord(port, "srvr").catch(() => "");
  return /^Mode: (\w+)/m.exec(answer)?.[1] ?? "down";
}

beforeAll(async () => {
  ensemble = await startZooKeeperEnsemble(3);
  const options = { sessionTimeoutMs: 4_000, connectTimeoutMs: 10_000, requestTimeoutMs: 1_000 };
  client = await ZooKeeperClient.connect(ensemble.connectString, options);
}, 60_000);

afterAll(async () => {
  await client?.close();
  await ensemble?.stop();
});

test("the ensemble has one leader and keeps taking writes when the leader is killed", async () => {
  const modes = await Promise.all(ensemble.nodes.map((n) => mode(n.port)));
  expect(modes.filter((m) => m === "leader")).toHaveLength(1);
  expect(modes.filter((m) => m === "follower")).toHaveLength(2);
  await client.create("/counter", new TextEncoder().encode("0"));
  const leader = ensemble.nodes[modes.indexOf("leader")];
  let written = 0;
  const writeUntil = async (count: number) => {
    const deadlineMs = Date.now() + 15_000;
    while (written < count && Date.now() < deadlineMs) {
      try {
        await client.setData("/counter", new TextEncoder().encode(String(written + 1)));
        written += 1;
      } catch (error) {
        // Unavailability during the election is allowed, but only the retriable kind.
        if (!(error instanceof ZooKeeperUnavailableError)) throw error;
      }
    }
  };
  await writeUntil(50);
  await leader.kill();
  await writeUntil(150);
  expect(written).toBe(150);
  const { data, stat } = await client.getData("/counter");
  expect(new TextDecoder().decode(data)).toBe("150");
  expect(stat.version).toBe(150);
  const survivors = await Promise.all(
    ensemble.nodes.filter((n) => n !== leader).map((n) => mode(n.port)),
  );
  expect(survivors.sort()).toEqual(["follower", "leader"]);
  await leader.restart();
  expect(await mode(leader.port)).toBe("follower");
}, 60_000);
