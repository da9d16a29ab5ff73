// Every version of the transactional APIs a 3.x client may send, on the wire: for each version
// v of AddPartitionsToTxn (0-4; v4 is the batched form), AddOffsetsToTxn and TxnOffsetCommit
// (0-4), EndTxn (0-4) and InitProducerId (0-4) one transaction commits offsets, which become the
// group's committed offsets at the marker. v5/v6 (transactions v2) are run by the Java 4.4
// producer (test/e2e/kafka4-transactions.test.ts) and the three-broker test
// (test/broker/transactions-v2-cluster.test.ts).
import { afterAll, beforeAll, expect, test } from "bun:test";
import { ErrorCode } from "../../src/protocol/errors.ts";
import { ApiKey } from "../../src/protocol/generated/index.ts";
import { KafkaClient, startTestBroker, type TestBroker } from "../support/kafka-client.ts";

const TOPIC = "txn-versions";
let b: TestBroker;
let client: KafkaClient;
beforeAll(async () => {
  b = await startTestBroker({ "transaction.state.log.num.partitions": "1" });
  client = await KafkaClient.connect(b.port);
  const res = await client.request(ApiKey.CreateTopics, 7, {
    topics: [{ name: TOPIC, numPartitions: 1, replicationFactor: 1 }],
  });
  expect(res.topics[0].errorCode).toBe(ErrorCode.NONE);
  for (let i = 0; i < 100; i++) {
    const found = await client.request(ApiKey.FindCoordinator, 3, { key: "v", keyType: 1 });
    if (found.errorCode === ErrorCode.NONE) break;
    await Bun.sleep(50);
  }
}, 60_000);
afterAll(async () => {
  client?.close();
  await b?.stop();
});

async function addPartition(v: number, transactionalId: string, producerId: bigint, epoch: number) {
  const topics = [{ name: TOPIC, partitions: [0] }];
  if (v <= 3) {
    const res = await client.request(ApiKey.AddPartitionsToTxn, v, {
      v3AndBelowTransactionalId: transactionalId,
      v3AndBelowProducerId: producerId,
      v3AndBelowProducerEpoch: epoch,
      v3AndBelowTopics: topics,
    });
    return res.resultsByTopicV3AndBelow[0].resultsByPartition[0].partitionErrorCode;
  }
  const res = await client.request(ApiKey.AddPartitionsToTxn, v, {
    transactions: [
      { transactionalId, producerId, producerEpoch: epoch, verifyOnly: false, topics },
    ],
  });
  expect(res.errorCode).toBe(ErrorCode.NONE);
  return res.resultsByTransaction[0].topicResults[0].resultsByPartition[0].partitionErrorCode;
}

for (const v of [0, 1, 2, 3, 4]) {
  test(`v${v}: a transaction commits offsets sent to it`, async () => {
    const transactionalId = `versions-tx-${v}`;
    const groupId = `versions-group-${v}`;
    const init = await client.request(ApiKey.InitProducerId, v, {
      transactionalId,
      transactionTimeoutMs: 30_000,
      producerId: -1n,
      producerEpoch: -1,
    });
    expect(init.errorCode).toBe(ErrorCode.NONE);
    const { producerId, producerEpoch } = init;
    const ids = { transactionalId, producerId, producerEpoch };
    expect(await addPartition(v, transactionalId, producerId, producerEpoch)).toBe(ErrorCode.NONE);
    const added = await client.request(ApiKey.AddOffsetsToTxn, v, { ...ids, groupId });
    expect(added.errorCode).toBe(ErrorCode.NONE);
    const committed = await client.request(ApiKey.TxnOffsetCommit, v, {
      ...ids,
      groupId,
      generationIdOrMemberEpoch: -1,
      memberId: "",
      groupInstanceId: null,
      topics: [
        {
          name: TOPIC,
          topicId: new Uint8Array(16),
          partitions: [
            {
              partitionIndex: 0,
              committedOffset: BigInt(10 + v),
              committedLeaderEpoch: -1,
              committedMetadata: "",
            },
          ],
        },
      ],
    });
    expect(committed.topics[0].partitions[0].errorCode).toBe(ErrorCode.NONE);
    const ended = await client.request(ApiKey.EndTxn, v, { ...ids, committed: true });
    expect(ended.errorCode).toBe(ErrorCode.NONE);
    const fetchOffset = async () => {
      const res = await client.request(ApiKey.OffsetFetch, 7, {
        groupId,
        topics: [{ name: TOPIC, partitionIndexes: [0] }],
        groups: [],
        requireStable: true,
      });
      return res.topics[0].partitions[0];
    };
    for (let i = 0; i < 100 && (await fetchOffset()).committedOffset !== BigInt(10 + v); i++) {
      await Bun.sleep(20);
    }
    expect(await fetchOffset()).toMatchObject({
      errorCode: ErrorCode.NONE,
      committedOffset: BigInt(10 + v),
    });
  });
}
