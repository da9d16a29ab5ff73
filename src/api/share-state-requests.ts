import type { ShareStateRead } from "../coordinator/share-coordinator.ts";
import { ErrorCode } from "../protocol/errors.ts";
import { AclOperation } from "../security/authorized-operations.ts";
import { authorizeCluster } from "./authorize.ts";
import type { RequestContext } from "./handler.ts";

/**
 * What the four share-coordinator APIs (Initialize/Read/Write/DeleteShareGroupState, sent by
 * partition leaders and the group coordinator) share: CLUSTER_ACTION (brokers only, as in
 * Kafka), bounds on the lists, and answering every partition, each with its own outcome.
 */

/** Topics and partitions one request may name (Kafka has no limit; lists need one). */
const TOPICS_MAX = 10_000;
const PARTITIONS_PER_TOPIC_MAX = 10_000;

interface WireTopic<P> {
  readonly topicId: Uint8Array;
  readonly partitions: readonly P[];
}

export async function answerShareState<P extends { partition: number }, R>(
  ctx: RequestContext,
  topics: readonly WireTopic<P>[],
  handle: (topicId: Uint8Array, p: P) => Promise<ShareStateRead> | ShareStateRead,
  shape: (p: P, outcome: ShareStateRead) => R,
): Promise<{ topicId: Uint8Array; partitions: R[] }[]> {
  const allowed = authorizeCluster(ctx, AclOperation.CLUSTER_ACTION);
  const refused: ShareStateRead = {
    errorCode: ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
    errorMessage: null,
    state: null,
  };
  return Promise.all(
    topics.slice(0, TOPICS_MAX).map(async (t) => ({
      topicId: t.topicId,
      partitions: await Promise.all(
        t.partitions
          .slice(0, PARTITIONS_PER_TOPIC_MAX)
          .map(async (p) => shape(p, allowed ? await handle(t.topicId, p) : refused)),
      ),
    })),
  );
}
