/**
 * Errors a Kafka client meets, each with what the user can do about it. `ClusterError` carries
 * a Kafka error code from a response; `UnreachableError` means no broker answered. The CLI maps
 * them to exit codes (docs/cli.md).
 */
import { ErrorCode, errorInfo, errorName } from "../protocol/errors.ts";

/** What to do, by error code, for the codes a command-line user meets. */
const HINTS: Readonly<Record<number, string>> = {
  [ErrorCode.UNKNOWN_TOPIC_OR_PARTITION]:
    "check the topic name and partition with `quill topic list` / `quill topic describe`",
  [ErrorCode.TOPIC_ALREADY_EXISTS]: "pick another name, or delete it with `quill topic delete`",
  [ErrorCode.INVALID_PARTITIONS]: "give a partition count of at least 1 (and above the current)",
  [ErrorCode.INVALID_REPLICATION_FACTOR]:
    "use a replication factor no larger than the broker count (`quill cluster info`)",
  [ErrorCode.INVALID_CONFIG]: "`quill topic describe-config TOPIC` lists the keys and values",
  [ErrorCode.INVALID_TOPIC_EXCEPTION]:
    "topic names use ASCII letters, digits, '.', '_' and '-', up to 249 characters",
  [ErrorCode.NON_EMPTY_GROUP]: "stop the group's consumers first, then retry",
  [ErrorCode.GROUP_ID_NOT_FOUND]: "check the group name with `quill group list`",
  [ErrorCode.COORDINATOR_NOT_AVAILABLE]: "the cluster is starting or electing; retry shortly",
  [ErrorCode.NOT_COORDINATOR]: "the group moved to another broker; retry",
  [ErrorCode.LEADER_NOT_AVAILABLE]: "a leader election is in progress; retry shortly",
  [ErrorCode.NOT_LEADER_OR_FOLLOWER]: "leadership moved; retry",
  [ErrorCode.NOT_ENOUGH_REPLICAS]:
    "fewer in-sync replicas than min.insync.replicas: check `quill cluster health`",
  [ErrorCode.TOPIC_AUTHORIZATION_FAILED]: "ask an administrator for access to the topic",
  [ErrorCode.GROUP_AUTHORIZATION_FAILED]: "ask an administrator for access to the group",
  [ErrorCode.CLUSTER_AUTHORIZATION_FAILED]: "ask an administrator for cluster access",
  [ErrorCode.UNSUPPORTED_VERSION]: "the cluster does not support this operation's API version",
  [ErrorCode.MESSAGE_TOO_LARGE]: "the record is larger than the topic's max.message.bytes",
  [ErrorCode.RECORD_LIST_TOO_LARGE]: "send smaller batches (fewer records per request)",
  [ErrorCode.INVALID_REQUEST]: "the broker refused the request as malformed; see its message",
  [ErrorCode.POLICY_VIOLATION]: "the cluster's policy refused it; see the message",
  [ErrorCode.TOPIC_DELETION_DISABLED]: "the cluster has delete.topic.enable=false",
  [ErrorCode.OFFSET_OUT_OF_RANGE]: "the offset is outside the log; use -o beginning or -o end",
  [ErrorCode.UNSUPPORTED_COMPRESSION_TYPE]: "pick another codec with -z",
  [ErrorCode.SASL_AUTHENTICATION_FAILED]:
    "check the user name and password in sasl.jaas.config (--command-config or -X)",
  [ErrorCode.UNSUPPORTED_SASL_MECHANISM]: "set sasl.mechanism to one the broker offers",
  [ErrorCode.ILLEGAL_SASL_STATE]: "check security.protocol: the listener may not speak SASL",
};

/** A Kafka error code from the cluster, with where it happened and what to do. */
export class ClusterError extends Error {
  override readonly name = "ClusterError";

  constructor(
    readonly code: number,
    readonly context: string,
    readonly serverMessage: string | null = null,
  ) {
    super(describeError(code, context, serverMessage));
  }

  get errorName(): string {
    return errorName(this.code);
  }
}

/** No broker of the cluster answered (refused, timed out, closed). */
export class UnreachableError extends Error {
  override readonly name = "UnreachableError";
}

function describeError(code: number, context: string, serverMessage: string | null): string {
  const detail = serverMessage ?? errorInfo(code).message;
  const hint = HINTS[code];
  return (
    `${errorName(code)} (${code}) ${context}: ${detail}` +
    (hint === undefined ? "" : `\n  what to do: ${hint}`)
  );
}

/** Throws a ClusterError unless `code` is NONE. */
export function check(code: number, context: string, message: string | null = null): void {
  if (code !== ErrorCode.NONE) throw new ClusterError(code, context, message);
}
