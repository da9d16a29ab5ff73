// FindCoordinator: v0-6
//
// Version notes:
// * v1: KeyType (0 group, 1 transaction). v3: flexible.
// * v4: batched CoordinatorKeys (KIP-699); the single Key and top-level answer are then unused.
// * v5: TRANSACTION_ABORTABLE may be returned (KIP-890). v6: KeyType 2, share groups (KIP-932).
// * A single broker coordinates every group itself. Quill has no transaction coordinator, so
//   transactional keys get COORDINATOR_NOT_AVAILABLE (what Kafka answers while its transaction
//   log is unavailable); share-group and unknown key types get INVALID_REQUEST, as in Kafka.
// * In a cluster a group's coordinator is the broker the MetadataCache's shared hashing picks
//   among the live brokers, the same answer on every broker.

import { ErrorCode } from "../protocol/errors.ts";
import { ApiKey } from "../protocol/generated/index.ts";
import { endpointOn } from "../server/metadata-cache.ts";
import { defineHandler, type RequestContext } from "./handler.ts";

const BATCHED_KEYS_MIN_VERSION = 4;
/** Keys one request may ask about; Kafka has no limit, but every list needs one. */
const COORDINATOR_KEYS_MAX = 10_000;

const KeyType = { GROUP: 0, TRANSACTION: 1, SHARE: 2 } as const;

interface CoordinatorAnswer {
  readonly key: string;
  readonly nodeId: number;
  readonly host: string;
  readonly port: number;
  readonly errorCode: number;
  readonly errorMessage: string | null;
}

export const findCoordinatorHandler = defineHandler({
  apiKey: ApiKey.FindCoordinator,
  minVersion: 0,
  maxVersion: 6,
  handle(request, ctx) {
    if (ctx.apiVersion >= BATCHED_KEYS_MIN_VERSION) {
      const keys = request.coordinatorKeys.slice(0, COORDINATOR_KEYS_MAX);
      const tooMany = request.coordinatorKeys
        .slice(COORDINATOR_KEYS_MAX)
        .map((key) => failure(key, ErrorCode.INVALID_REQUEST, "Too many coordinator keys."));
      return {
        throttleTimeMs: 0,
        coordinators: [...keys.map((key) => coordinatorFor(key, request.keyType, ctx)), ...tooMany],
      };
    }
    const answer = coordinatorFor(request.key, request.keyType, ctx);
    return {
      throttleTimeMs: 0,
      errorCode: answer.errorCode,
      errorMessage: answer.errorMessage,
      nodeId: answer.nodeId,
      host: answer.host,
      port: answer.port,
    };
  },
});

function coordinatorFor(key: string, keyType: number, ctx: RequestContext): CoordinatorAnswer {
  switch (keyType) {
    case KeyType.GROUP: {
      const coordinator = ctx.broker.metadataCache.groupCoordinator(key);
      const endpoint = endpointOn(coordinator, ctx.conn.listenerName);
      // Kafka's answer when the coordinator lacks the client's listener.
      if (endpoint === undefined) {
        return failure(
          key,
          ErrorCode.COORDINATOR_NOT_AVAILABLE,
          "The coordinator is not available.",
        );
      }
      return {
        key,
        nodeId: coordinator.nodeId,
        host: endpoint.host,
        port: endpoint.port,
        errorCode: ErrorCode.NONE,
        errorMessage: null,
      };
    }
    case KeyType.TRANSACTION:
      return failure(key, ErrorCode.COORDINATOR_NOT_AVAILABLE, "No transaction coordinator.");
    default:
      return failure(key, ErrorCode.INVALID_REQUEST, `Unknown coordinator key type ${keyType}.`);
  }
}

function failure(key: string, errorCode: number, errorMessage: string): CoordinatorAnswer {
  return { key, nodeId: -1, host: "", port: -1, errorCode, errorMessage };
}
