// WriteTxnMarkers: v0-1
//
// Version notes:
// * v1: flexible. Sent by transaction coordinators to partition leaders: each marker is
//   appended as a control batch with acks=all (as Kafka does), or, for __consumer_offsets
//   partitions, commits or drops the producer's pending transactional offsets.

import { CONSUMER_OFFSETS_TOPIC } from "../coordinator/transaction-marker-channel-manager.ts";
import { buildEndTxnMarkerBatch } from "../protocol/control-record.ts";
import { ErrorCode } from "../protocol/errors.ts";
import { ApiKey } from "../protocol/generated/index.ts";
import { AclOperation } from "../security/authorized-operations.ts";
import { authorizeCluster } from "./authorize.ts";
import { defineHandler, type RequestContext } from "./handler.ts";

/** Markers one request may carry; Kafka has no limit, every list needs one. */
const MARKERS_PER_REQUEST_MAX = 10_000;
const MARKER_TIMEOUT_MS = 30_000;

type Marker = {
  producerId: bigint;
  producerEpoch: number;
  transactionResult: boolean;
  coordinatorEpoch: number;
  topics: { name: string; partitionIndexes: number[] }[];
};

export const writeTxnMarkersHandler = defineHandler({
  apiKey: ApiKey.WriteTxnMarkers,
  minVersion: 0,
  maxVersion: 1,
  async handle(request, ctx) {
    const markers = request.markers.slice(0, MARKERS_PER_REQUEST_MAX);
    // Only brokers (CLUSTER_ACTION) write markers: every partition is refused otherwise.
    if (!authorizeCluster(ctx, AclOperation.CLUSTER_ACTION)) {
      const errorCode = ErrorCode.CLUSTER_AUTHORIZATION_FAILED;
      const refused = markers.map((m) => ({
        producerId: m.producerId,
        topics: m.topics.map((t) => ({
          name: t.name,
          partitions: t.partitionIndexes.map((partitionIndex) => ({ partitionIndex, errorCode })),
        })),
      }));
      return { markers: refused };
    }
    return { markers: await Promise.all(markers.map((m) => writeOne(m, ctx))) };
  },
});

async function writeOne(m: Marker, ctx: RequestContext) {
  const topics = [];
  for (const t of m.topics) {
    const partitions = [];
    for (const p of t.partitionIndexes) {
      partitions.push({ partitionIndex: p, errorCode: await writeMarker(m, t.name, p, ctx) });
    }
    topics.push({ name: t.name, partitions });
  }
  return { producerId: m.producerId, topics };
}

async function writeMarker(m: Marker, topic: string, partition: number, ctx: RequestContext) {
  if (topic === CONSUMER_OFFSETS_TOPIC) {
    try {
      await ctx.broker.groupCoordinator.completeTransaction(m.producerId, m.transactionResult);
      return ErrorCode.NONE;
    } catch {
      return ErrorCode.COORDINATOR_NOT_AVAILABLE;
    }
  }
  const records = buildEndTxnMarkerBatch(
    {
      producerId: m.producerId,
      producerEpoch: m.producerEpoch,
      coordinatorEpoch: m.coordinatorEpoch,
      commit: m.transactionResult,
    },
    Date.now(),
  );
  const [outcome] = await ctx.broker.replicaManager.produceRecords(-1, MARKER_TIMEOUT_MS, [
    { topic, partition, records, origin: "coordinator" },
  ]);
  return outcome!.errorCode;
}
