// DescribeGroups, ListGroups and DeleteGroups at their lowest and highest versions, as raw
// requests over TCP.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { ErrorCode } from "../../src/protocol/errors.ts";
import { ApiKey } from "../../src/protocol/generated/index.ts";
import { KafkaClient, type TestBroker } from "../support/kafka-client.ts";
import { joinAlone, simpleCommit, startGroupBroker } from "./group-api-support.ts";

let b: TestBroker;
beforeAll(async () => {
  b = await startGroupBroker();
}, 60_000);
afterAll(async () => {
  await b.stop();
});

/** READ, DELETE and DESCRIBE as Kafka's AclOperation bit field. */
const GROUP_OPERATIONS = 328;

test("DescribeGroups v0 and v5, ListGroups v0 and v5, DeleteGroups v0 and v2", async () => {
  const client = await KafkaClient.connect(b.port);
  try {
    const { memberId } = await joinAlone(client, "g-admin", 5, 3);
    await simpleCommit(b.port, 8, "g-idle", 1n);
    const v0 = await client.request(ApiKey.DescribeGroups, 0, { groups: ["g-admin", "missing"] });
    expect(v0.groups.map((g) => [g.groupId, g.errorCode, g.groupState])).toEqual([
      ["g-admin", 0, "Stable"],
      ["missing", 0, "Dead"],
    ]);
    expect(v0.groups[0]!.members[0]!.memberId).toBe(memberId);
    const v5 = await client.request(ApiKey.DescribeGroups, 5, {
      groups: ["g-admin"],
      includeAuthorizedOperations: true,
    });
    expect(v5.groups[0]).toMatchObject({
      protocolType: "consumer",
      protocolData: "range",
      authorizedOperations: GROUP_OPERATIONS,
    });
    expect([...v5.groups[0]!.members[0]!.memberAssignment]).toEqual([7, 7]);

    const listed0 = await client.request(ApiKey.ListGroups, 0, {});
    const ids0 = listed0.groups.map((g) => g.groupId);
    expect(ids0).toEqual(expect.arrayContaining(["g-admin", "g-idle"]));
    const stableOnly = await client.request(ApiKey.ListGroups, 5, {
      statesFilter: ["STABLE"],
      typesFilter: ["classic"],
    });
    expect(stableOnly.groups.map((g) => g.groupId)).toContain("g-admin");
    expect(stableOnly.groups.map((g) => g.groupId)).not.toContain("g-idle");
    const shapes = stableOnly.groups.map((g) => `${g.groupState}/${g.groupType}`);
    expect(new Set(shapes)).toEqual(new Set(["Stable/classic"]));

    const groupsNames = ["g-admin", "g-idle"];
    const del0 = await client.request(ApiKey.DeleteGroups, 0, { groupsNames });
    expect(del0.results).toEqual([
      { groupId: "g-admin", errorCode: ErrorCode.NON_EMPTY_GROUP, errorMessage: null },
      { groupId: "g-idle", errorCode: ErrorCode.NONE, errorMessage: null },
    ]);
    const del2 = await client.request(ApiKey.DeleteGroups, 2, { groupsNames: ["g-idle"] });
    expect(del2.results).toEqual([
      { groupId: "g-idle", errorCode: ErrorCode.GROUP_ID_NOT_FOUND, errorMessage: null },
    ]);
  } finally {
    client.close();
  }
});
