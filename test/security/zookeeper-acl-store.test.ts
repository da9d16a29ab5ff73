/**
 * ACLs in ZooKeeper as Kafka's AclAuthorizer keeps them: /kafka-acl/<Type>/<name> and
 * /kafka-acl-extended/prefixed/<Type>/<name> with Kafka's JSON, a change notice per change, and
 * a second authorizer (another broker) that sees a change, or an ACL written by Kafka, through
 * the notices.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { PATTERN_LITERAL, PATTERN_PREFIXED, PERMISSION_ALLOW } from "../../src/security/acl.ts";
import { AclAuthorizer } from "../../src/security/acl-authorizer.ts";
import { AclOperation, ResourceType } from "../../src/security/authorized-operations.ts";
import { ZooKeeperAclStore } from "../../src/security/zookeeper-acl-store.ts";
import { SILENT_LOGGER } from "../../src/util/logger.ts";
import { ZooKeeperClient } from "../../src/zookeeper/zookeeper-client.ts";
import { waitUntil } from "../support/wait-until.ts";
import { startZooKeeper, type ZooKeeperServer } from "../support/zookeeper-server.ts";

let server: ZooKeeperServer;
let zk: ZooKeeperClient;
const json = (data: Uint8Array) => JSON.parse(new TextDecoder().decode(data));

beforeAll(async () => {
  server = await startZooKeeper();
  zk = await ZooKeeperClient.connect(server.connectString, {
    sessionTimeoutMs: 6000,
    connectTimeoutMs: 10_000,
  });
}, 60_000);

afterAll(async () => {
  await zk.close();
  await server.stop();
});

const config = { superUsers: [], allowEveryoneIfNoAclFound: false };
const newAuthorizer = async () => {
  const a = new AclAuthorizer(new ZooKeeperAclStore(zk, SILENT_LOGGER), config, SILENT_LOGGER);
  await a.start();
  return a;
};

test("Kafka's znodes and notices; another broker sees each change within seconds", async () => {
  const one = await newAuthorizer();
  const two = await newAuthorizer();
  const entry = {
    principal: "User:alice",
    host: "*",
    operation: AclOperation.READ,
    permissionType: PERMISSION_ALLOW,
  } as const;
  await one.create([
    {
      pattern: { resourceType: ResourceType.TOPIC, name: "orders", patternType: PATTERN_LITERAL },
      entry,
    },
    {
      pattern: { resourceType: ResourceType.GROUP, name: "app-", patternType: PATTERN_PREFIXED },
      entry,
    },
  ]);
  expect(json((await zk.getData("/kafka-acl/Topic/orders")).data)).toEqual({
    version: 1,
    acls: [{ principal: "User:alice", permissionType: "Allow", operation: "Read", host: "*" }],
  });
  expect(
    json((await zk.getData("/kafka-acl-extended/prefixed/Group/app-")).data).acls,
  ).toHaveLength(1);
  const literalNotices = await zk.getChildren("/kafka-acl-changes");
  expect(literalNotices.every((c) => c.startsWith("acl_changes_"))).toBe(true);
  const notice = await zk.getData(`/kafka-acl-changes/${literalNotices.sort().at(-1)}`);
  expect(new TextDecoder().decode(notice.data)).toBe("TOPIC:orders");
  const extended = await zk.getChildren("/kafka-acl-extended-changes");
  expect(json((await zk.getData(`/kafka-acl-extended-changes/${extended[0]}`)).data)).toEqual({
    version: 1,
    resourceType: "GROUP",
    name: "app-",
    patternType: "PREFIXED",
  });
  const twoAllows = () =>
    two.authorize("User:alice", "h", AclOperation.READ, ResourceType.GROUP, "app-1");
  await waitUntil(twoAllows, 10_000, "the second broker to see the ACL");
  // An ACL written by Kafka's own broker: the znode, then the notice.
  const kafkaAcl = {
    version: 1,
    acls: [{ principal: "User:bob", permissionType: "Allow", operation: "Write", host: "*" }],
  };
  await zk.create("/kafka-acl/Topic/payments", new TextEncoder().encode(JSON.stringify(kafkaAcl)));
  await zk.create("/kafka-acl-changes/acl_changes_", new TextEncoder().encode("Topic:payments"), {
    mode: "persistent-sequential",
  });
  const bobWrites = (a: AclAuthorizer) =>
    a.authorize("User:bob", "h", AclOperation.WRITE, ResourceType.TOPIC, "payments");
  await waitUntil(() => bobWrites(one) && bobWrites(two), 10_000, "Kafka's ACL");
  const any = {
    resourceType: 1,
    name: null,
    patternType: 1,
    principal: null,
    host: null,
    operation: 1,
    permissionType: 1,
  };
  await two.delete([{ ...any, resourceType: ResourceType.TOPIC, name: "orders" }]);
  expect(await zk.exists("/kafka-acl/Topic/orders")).toBeNull();
  const aliceReadsOrders = () =>
    one.authorize("User:alice", "h", AclOperation.READ, ResourceType.TOPIC, "orders");
  await waitUntil(() => !aliceReadsOrders(), 10_000, "the deletion to reach the first broker");
  one.close();
  two.close();
}, 60_000);
