/**
 * The acks=all producer and the reader of the failover tests: one producer connection to
 * whoever leads partition 0 (dropped on any failure and made again), recording every
 * acknowledgement with its offset, and a reader of every record the leader holds.
 */
import { expect } from "bun:test";
import { ErrorCode } from "../../src/protocol/errors.ts";
import { ApiKey } from "../../src/protocol/generated/index.ts";
import {
  batchSizeBytes,
  buildRecordBatch,
  decodeRecords,
  iterateBatches,
  readBatchHeader,
} from "../../src/protocol/record-batch.ts";
import type { ChildBroker } from "../support/child-broker.ts";
import { KafkaClient, requestOnce } from "../support/kafka-client.ts";

export interface Leadership {
  readonly leaderId: number;
  readonly isr: readonly number[];
}

/** The partition's leader and ISR as a running broker's Metadata states them. */
export async function leadership(
  brokers: ReadonlyMap<number, ChildBroker>,
  topic: string,
): Promise<Leadership | undefined> {
  const running = [...brokers.values()].filter((b) => b.running);
  const m = await requestOnce(running[0]!.port, ApiKey.Metadata, 12, {
    topics: [{ name: topic }],
    allowAutoTopicCreation: false,
  });
  const p = m.topics[0]?.partitions[0];
  if (p === undefined || p.errorCode !== ErrorCode.NONE || p.leaderId < 0) return undefined;
  return { leaderId: p.leaderId, isr: p.isrNodes };
}

/** One producer connection, to whoever leads; dropped on any failure and made again. */
export class AcksAllProducer {
  private client: { port: number; client: KafkaClient } | null = null;
  readonly acked: { value: string; offset: bigint; sentAtMs: number; atMs: number }[] = [];
  failures = 0;

  constructor(
    private readonly brokers: ReadonlyMap<number, ChildBroker>,
    private readonly topic: string,
  ) {}

  async send(value: string): Promise<boolean> {
    const sentAtMs = Date.now();
    try {
      const lead = await leadership(this.brokers, this.topic);
      const broker = lead === undefined ? undefined : this.brokers.get(lead.leaderId);
      if (broker === undefined || !broker.running) throw new Error("no live leader");
      if (this.client?.port !== broker.port) {
        this.client?.client.close();
        this.client = { port: broker.port, client: await KafkaClient.connect(broker.port) };
      }
      const records = buildRecordBatch([{ key: null, value: new TextEncoder().encode(value) }]);
      const response = await this.client.client.request(ApiKey.Produce, 9, {
        acks: -1,
        timeoutMs: 5_000,
        topicData: [{ name: this.topic, partitionData: [{ index: 0, records }] }],
      });
      const p = response.responses[0]!.partitionResponses[0]!;
      if (p.errorCode !== ErrorCode.NONE) throw new Error(`produce: error ${p.errorCode}`);
      this.acked.push({ value, offset: p.baseOffset, sentAtMs, atMs: Date.now() });
      return true;
    } catch {
      this.failures++;
      this.client?.client.close();
      this.client = null;
      return false;
    }
  }

  close(): void {
    this.client?.client.close();
  }
}

/** Every record of partition 0 from the leader, as (offset, value). */
export async function readAll(
  leader: Pick<ChildBroker, "port">,
  topic: string,
): Promise<Map<bigint, string>> {
  const client = await KafkaClient.connect(leader.port);
  const values = new Map<bigint, string>();
  try {
    let offset = 0n;
    for (let round = 0; round < 10_000; round++) {
      const r = await client.request(ApiKey.Fetch, 12, {
        replicaId: -1,
        maxWaitMs: 0,
        minBytes: 0,
        maxBytes: 1 << 20,
        topics: [
          {
            topic,
            partitions: [{ partition: 0, fetchOffset: offset, partitionMaxBytes: 1 << 20 }],
          },
        ],
      });
      const p = r.responses[0]!.partitions[0]!;
      expect(p.errorCode).toBe(ErrorCode.NONE);
      const bytes = p.records as Uint8Array;
      if (bytes === null || bytes.length === 0) break;
      // A response filled to maxBytes ends with part of a batch, as Kafka's do: skip it.
      for (const { position, sizeBytes } of iterateBatches(
        bytes.subarray(0, wholeBatchesBytes(bytes)),
      )) {
        const batch = bytes.subarray(position, position + sizeBytes);
        const base = readBatchHeader(batch).baseOffset;
        for (const rec of decodeRecords(batch)) {
          values.set(base + BigInt(rec.offsetDelta), new TextDecoder().decode(rec.value!));
        }
        offset = base + BigInt(readBatchHeader(batch).lastOffsetDelta) + 1n;
      }
    }
  } finally {
    client.close();
  }
  return values;
}

/** How many leading bytes of a fetched record set are whole batches. */
function wholeBatchesBytes(bytes: Uint8Array): number {
  let position = 0;
  while (bytes.length - position >= 12) {
    const sizeBytes = batchSizeBytes(bytes, position);
    if (position + sizeBytes > bytes.length) break;
    position += sizeBytes;
  }
  return position;
}
