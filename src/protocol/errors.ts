/**
 * Kafka's error codes as of Kafka 3.9 (codes -1 to 127), with the names, default messages and
 * retriable flags of `org.apache.kafka.common.protocol.Errors`. A code is retriable when Kafka's
 * exception for it extends `RetriableException`; we follow Kafka exactly (unlike kafkajs, which
 * marks CONCURRENT_TRANSACTIONS retriable) so clients see the semantics they were written for.
 *
 * Also home of the protocol layer's own exceptions: `DecodeError` for bytes that are not a valid
 * message and `EncodeError` for a message that cannot be written in the requested version.
 */

export interface KafkaErrorInfo {
  readonly name: string;
  readonly code: number;
  readonly retriable: boolean;
  readonly message: string;
}

// [name, code, retriable, message]. Keep in code order; the table below is checked for it.
const TABLE = [
  [
    "UNKNOWN_SERVER_ERROR",
    -1,
    false,
    "The server experienced an unexpected error when processing the request.",
  ],
  ["NONE", 0, false, ""],
  [
    "OFFSET_OUT_OF_RANGE",
    1,
    false,
    "The requested offset is not within the range of offsets maintained by the server.",
  ],
  [
    "CORRUPT_MESSAGE",
    2,
    true,
    "This message has failed its CRC checksum, exceeds the valid size, has a null key for a " +
      "compacted topic, or is otherwise corrupt.",
  ],
  ["UNKNOWN_TOPIC_OR_PARTITION", 3, true, "This server does not host this topic-partition."],
  ["INVALID_FETCH_SIZE", 4, false, "The requested fetch size is invalid."],
  [
    "LEADER_NOT_AVAILABLE",
    5,
    true,
    "There is no leader for this topic-partition as we are in the middle of a leadership " +
      "election.",
  ],
  [
    "NOT_LEADER_OR_FOLLOWER",
    6,
    true,
    "For requests intended only for the leader, this error indicates that the broker is not " +
      "the current leader. For requests intended for any replica, this error indicates that the " +
      "broker is not a replica of the topic partition.",
  ],
  ["REQUEST_TIMED_OUT", 7, true, "The request timed out."],
  ["BROKER_NOT_AVAILABLE", 8, false, "The broker is not available."],
  [
    "REPLICA_NOT_AVAILABLE",
    9,
    true,
    "The replica is not available for the requested topic-partition. Produce/Fetch requests " +
      "and other requests intended only for the leader or follower return " +
      "NOT_LEADER_OR_FOLLOWER if the broker is not a replica of the topic-partition.",
  ],
  [
    "MESSAGE_TOO_LARGE",
    10,
    false,
    "The request included a message larger than the max message size the server will accept.",
  ],
  ["STALE_CONTROLLER_EPOCH", 11, false, "The controller moved to another broker."],
  [
    "OFFSET_METADATA_TOO_LARGE",
    12,
    false,
    "The metadata field of the offset request was too large.",
  ],
  ["NETWORK_EXCEPTION", 13, true, "The server disconnected before a response was received."],
  [
    "COORDINATOR_LOAD_IN_PROGRESS",
    14,
    true,
    "The coordinator is loading and hence can't process requests.",
  ],
  ["COORDINATOR_NOT_AVAILABLE", 15, true, "The coordinator is not available."],
  ["NOT_COORDINATOR", 16, true, "This is not the correct coordinator."],
  [
    "INVALID_TOPIC_EXCEPTION",
    17,
    false,
    "The request attempted to perform an operation on an invalid topic.",
  ],
  [
    "RECORD_LIST_TOO_LARGE",
    18,
    false,
    "The request included message batch larger than the configured segment size on the server.",
  ],
  [
    "NOT_ENOUGH_REPLICAS",
    19,
    true,
    "Messages are rejected since there are fewer in-sync replicas than required.",
  ],
  [
    "NOT_ENOUGH_REPLICAS_AFTER_APPEND",
    20,
    true,
    "Messages are written to the log, but to fewer in-sync replicas than required.",
  ],
  [
    "INVALID_REQUIRED_ACKS",
    21,
    false,
    "Produce request specified an invalid value for required acks.",
  ],
  ["ILLEGAL_GENERATION", 22, false, "Specified group generation id is not valid."],
  [
    "INCONSISTENT_GROUP_PROTOCOL",
    23,
    false,
    "The group member's supported protocols are incompatible with those of existing members " +
      "or first group member tried to join with empty protocol type or empty protocol list.",
  ],
  ["INVALID_GROUP_ID", 24, false, "The group id is invalid."],
  ["UNKNOWN_MEMBER_ID", 25, false, "The coordinator is not aware of this member."],
  [
    "INVALID_SESSION_TIMEOUT",
    26,
    false,
    "The session timeout is not within the range allowed by the broker (as configured by " +
      "group.min.session.timeout.ms and group.max.session.timeout.ms).",
  ],
  ["REBALANCE_IN_PROGRESS", 27, false, "The group is rebalancing, so a rejoin is needed."],
  ["INVALID_COMMIT_OFFSET_SIZE", 28, false, "The committing offset data size is not valid."],
  ["TOPIC_AUTHORIZATION_FAILED", 29, false, "Topic authorization failed."],
  ["GROUP_AUTHORIZATION_FAILED", 30, false, "Group authorization failed."],
  ["CLUSTER_AUTHORIZATION_FAILED", 31, false, "Cluster authorization failed."],
  ["INVALID_TIMESTAMP", 32, false, "The timestamp of the message is out of acceptable range."],
  [
    "UNSUPPORTED_SASL_MECHANISM",
    33,
    false,
    "The broker does not support the requested SASL mechanism.",
  ],
  ["ILLEGAL_SASL_STATE", 34, false, "Request is not valid given the current SASL state."],
  ["UNSUPPORTED_VERSION", 35, false, "The version of API is not supported."],
  ["TOPIC_ALREADY_EXISTS", 36, false, "Topic with this name already exists."],
  ["INVALID_PARTITIONS", 37, false, "Number of partitions is below 1."],
  [
    "INVALID_REPLICATION_FACTOR",
    38,
    false,
    "Replication factor is below 1 or larger than the number of available brokers.",
  ],
  ["INVALID_REPLICA_ASSIGNMENT", 39, false, "Replica assignment is invalid."],
  ["INVALID_CONFIG", 40, false, "Configuration is invalid."],
  ["NOT_CONTROLLER", 41, true, "This is not the correct controller for this cluster."],
  [
    "INVALID_REQUEST",
    42,
    false,
    "This most likely occurs because of a request being malformed by the client library or " +
      "the message was sent to an incompatible broker. See the broker logs for more details.",
  ],
  [
    "UNSUPPORTED_FOR_MESSAGE_FORMAT",
    43,
    false,
    "The message format version on the broker does not support the request.",
  ],
  ["POLICY_VIOLATION", 44, false, "Request parameters do not satisfy the configured policy."],
  [
    "OUT_OF_ORDER_SEQUENCE_NUMBER",
    45,
    false,
    "The broker received an out of order sequence number.",
  ],
  ["DUPLICATE_SEQUENCE_NUMBER", 46, false, "The broker received a duplicate sequence number."],
  ["INVALID_PRODUCER_EPOCH", 47, false, "Producer attempted to produce with an old epoch."],
  [
    "INVALID_TXN_STATE",
    48,
    false,
    "The producer attempted a transactional operation in an invalid state.",
  ],
  [
    "INVALID_PRODUCER_ID_MAPPING",
    49,
    false,
    "The producer attempted to use a producer id which is not currently assigned to its " +
      "transactional id.",
  ],
  [
    "INVALID_TRANSACTION_TIMEOUT",
    50,
    false,
    "The transaction timeout is larger than the maximum value allowed by the broker (as " +
      "configured by transaction.max.timeout.ms).",
  ],
  [
    "CONCURRENT_TRANSACTIONS",
    51,
    false,
    "The producer attempted to update a transaction while another concurrent operation on the " +
      "same transaction was ongoing.",
  ],
  [
    "TRANSACTION_COORDINATOR_FENCED",
    52,
    false,
    "Indicates that the transaction coordinator sending a WriteTxnMarker is no longer the " +
      "current coordinator for a given producer.",
  ],
  ["TRANSACTIONAL_ID_AUTHORIZATION_FAILED", 53, false, "Transactional Id authorization failed."],
  ["SECURITY_DISABLED", 54, false, "Security features are disabled."],
  [
    "OPERATION_NOT_ATTEMPTED",
    55,
    false,
    "The broker did not attempt to execute this operation. This may happen for batched RPCs " +
      "where some operations in the batch failed, causing the broker to respond without trying " +
      "the rest.",
  ],
  ["KAFKA_STORAGE_ERROR", 56, true, "Disk error when trying to access log file on the disk."],
  [
    "LOG_DIR_NOT_FOUND",
    57,
    false,
    "The user-specified log directory is not found in the broker config.",
  ],
  ["SASL_AUTHENTICATION_FAILED", 58, false, "SASL Authentication failed."],
  [
    "UNKNOWN_PRODUCER_ID",
    59,
    false,
    "This exception is raised by the broker if it could not locate the producer metadata " +
      "associated with the producerId in question. This could happen if, for instance, the " +
      "producer's records were deleted because their retention time had elapsed. Once the last " +
      "records of the producerId are removed, the producer's metadata is removed from the " +
      "broker, and future appends by the producer will return this exception.",
  ],
  ["REASSIGNMENT_IN_PROGRESS", 60, false, "A partition reassignment is in progress."],
  ["DELEGATION_TOKEN_AUTH_DISABLED", 61, false, "Delegation Token feature is not enabled."],
  ["DELEGATION_TOKEN_NOT_FOUND", 62, false, "Delegation Token is not found on server."],
  ["DELEGATION_TOKEN_OWNER_MISMATCH", 63, false, "Specified Principal is not valid Owner/Renewer."],
  [
    "DELEGATION_TOKEN_REQUEST_NOT_ALLOWED",
    64,
    false,
    "Delegation Token requests are not allowed on PLAINTEXT/1-way SSL channels and on " +
      "delegation token authenticated channels.",
  ],
  ["DELEGATION_TOKEN_AUTHORIZATION_FAILED", 65, false, "Delegation Token authorization failed."],
  ["DELEGATION_TOKEN_EXPIRED", 66, false, "Delegation Token is expired."],
  ["INVALID_PRINCIPAL_TYPE", 67, false, "Supplied principalType is not supported."],
  ["NON_EMPTY_GROUP", 68, false, "The group is not empty."],
  ["GROUP_ID_NOT_FOUND", 69, false, "The group id does not exist."],
  ["FETCH_SESSION_ID_NOT_FOUND", 70, true, "The fetch session ID was not found."],
  ["INVALID_FETCH_SESSION_EPOCH", 71, true, "The fetch session epoch is invalid."],
  [
    "LISTENER_NOT_FOUND",
    72,
    true,
    "There is no listener on the leader broker that matches the listener on which metadata " +
      "request was processed.",
  ],
  ["TOPIC_DELETION_DISABLED", 73, false, "Topic deletion is disabled."],
  [
    "FENCED_LEADER_EPOCH",
    74,
    true,
    "The leader epoch in the request is older than the epoch on the broker.",
  ],
  [
    "UNKNOWN_LEADER_EPOCH",
    75,
    true,
    "The leader epoch in the request is newer than the epoch on the broker.",
  ],
  [
    "UNSUPPORTED_COMPRESSION_TYPE",
    76,
    false,
    "The requesting client does not support the compression type of given partition.",
  ],
  ["STALE_BROKER_EPOCH", 77, false, "Broker epoch has changed."],
  [
    "OFFSET_NOT_AVAILABLE",
    78,
    true,
    "The leader high watermark has not caught up from a recent leader election so the offsets " +
      "cannot be guaranteed to be monotonically increasing.",
  ],
  [
    "MEMBER_ID_REQUIRED",
    79,
    false,
    "The group member needs to have a valid member id before actually entering a consumer " +
      "group.",
  ],
  ["PREFERRED_LEADER_NOT_AVAILABLE", 80, true, "The preferred leader was not available."],
  ["GROUP_MAX_SIZE_REACHED", 81, false, "The group has reached its maximum size."],
  [
    "FENCED_INSTANCE_ID",
    82,
    false,
    "The broker rejected this static consumer since another consumer with the same " +
      "group.instance.id has registered with a different member.id.",
  ],
  [
    "ELIGIBLE_LEADERS_NOT_AVAILABLE",
    83,
    true,
    "Eligible topic partition leaders are not available.",
  ],
  ["ELECTION_NOT_NEEDED", 84, true, "Leader election not needed for topic partition."],
  ["NO_REASSIGNMENT_IN_PROGRESS", 85, false, "No partition reassignment is in progress."],
  [
    "GROUP_SUBSCRIBED_TO_TOPIC",
    86,
    false,
    "Deleting offsets of a topic is forbidden while the consumer group is actively subscribed " +
      "to it.",
  ],
  [
    "INVALID_RECORD",
    87,
    false,
    "This record has failed the validation on broker and hence will be rejected.",
  ],
  ["UNSTABLE_OFFSET_COMMIT", 88, true, "There are unstable offsets that need to be cleared."],
  ["THROTTLING_QUOTA_EXCEEDED", 89, true, "The throttling quota has been exceeded."],
  [
    "PRODUCER_FENCED",
    90,
    false,
    "There is a newer producer with the same transactionalId which fences the current one.",
  ],
  [
    "RESOURCE_NOT_FOUND",
    91,
    false,
    "A request illegally referred to a resource that does not exist.",
  ],
  ["DUPLICATE_RESOURCE", 92, false, "A request illegally referred to the same resource twice."],
  [
    "UNACCEPTABLE_CREDENTIAL",
    93,
    false,
    "Requested credential would not meet criteria for acceptability.",
  ],
  [
    "INCONSISTENT_VOTER_SET",
    94,
    false,
    "Indicates that the either the sender or recipient of a voter-only request is not one of " +
      "the expected voters.",
  ],
  ["INVALID_UPDATE_VERSION", 95, false, "The given update version was invalid."],
  [
    "FEATURE_UPDATE_FAILED",
    96,
    false,
    "Unable to update finalized features due to an unexpected server error.",
  ],
  [
    "PRINCIPAL_DESERIALIZATION_FAILURE",
    97,
    false,
    "Request principal deserialization failed during forwarding. This indicates an internal " +
      "error on the broker cluster security setup.",
  ],
  ["SNAPSHOT_NOT_FOUND", 98, false, "Requested snapshot was not found."],
  [
    "POSITION_OUT_OF_RANGE",
    99,
    false,
    "Requested position is not greater than or equal to zero, and less than the size of the " +
      "snapshot.",
  ],
  ["UNKNOWN_TOPIC_ID", 100, true, "This server does not host this topic ID."],
  ["DUPLICATE_BROKER_REGISTRATION", 101, false, "This broker ID is already in use."],
  ["BROKER_ID_NOT_REGISTERED", 102, false, "The given broker ID was not registered."],
  [
    "INCONSISTENT_TOPIC_ID",
    103,
    true,
    "The log's topic ID did not match the topic ID in the request.",
  ],
  [
    "INCONSISTENT_CLUSTER_ID",
    104,
    false,
    "The clusterId in the request does not match that found on the server.",
  ],
  ["TRANSACTIONAL_ID_NOT_FOUND", 105, false, "The transactionalId could not be found."],
  [
    "FETCH_SESSION_TOPIC_ID_ERROR",
    106,
    true,
    "The fetch session encountered inconsistent topic ID usage.",
  ],
  ["INELIGIBLE_REPLICA", 107, false, "The new ISR contains at least one ineligible replica."],
  [
    "NEW_LEADER_ELECTED",
    108,
    false,
    "The AlterPartition request successfully updated the partition state but the leader has " +
      "changed.",
  ],
  [
    "OFFSET_MOVED_TO_TIERED_STORAGE",
    109,
    false,
    "The requested offset is moved to tiered storage.",
  ],
  [
    "FENCED_MEMBER_EPOCH",
    110,
    false,
    "The member epoch is fenced by the group coordinator. The member must abandon all its " +
      "partitions and rejoin.",
  ],
  [
    "UNRELEASED_INSTANCE_ID",
    111,
    false,
    "The instance ID is still used by another member in the consumer group. That member must " +
      "leave first.",
  ],
  [
    "UNSUPPORTED_ASSIGNOR",
    112,
    false,
    "The assignor or its version range is not supported by the consumer group.",
  ],
  [
    "STALE_MEMBER_EPOCH",
    113,
    false,
    "The member epoch is stale. The member must retry after receiving its updated member " +
      "epoch via the ConsumerGroupHeartbeat API.",
  ],
  [
    "MISMATCHED_ENDPOINT_TYPE",
    114,
    false,
    "The request was sent to an endpoint of the wrong type.",
  ],
  ["UNSUPPORTED_ENDPOINT_TYPE", 115, false, "This endpoint type is not supported yet."],
  ["UNKNOWN_CONTROLLER_ID", 116, false, "This controller ID is not known."],
  [
    "UNKNOWN_SUBSCRIPTION_ID",
    117,
    false,
    "Client sent a push telemetry request with an invalid or outdated subscription ID.",
  ],
  [
    "TELEMETRY_TOO_LARGE",
    118,
    false,
    "Client sent a push telemetry request larger than the maximum size the broker will accept.",
  ],
  [
    "INVALID_REGISTRATION",
    119,
    false,
    "The controller has considered the broker registration to be invalid.",
  ],
  [
    "TRANSACTION_ABORTABLE",
    120,
    false,
    "The server encountered an error with the transaction. The client can abort the " +
      "transaction to continue using this transactional ID.",
  ],
  [
    "INVALID_RECORD_STATE",
    121,
    false,
    "The record state is invalid. The acknowledgement of delivery could not be completed.",
  ],
  ["SHARE_SESSION_NOT_FOUND", 122, true, "The share session was not found."],
  ["INVALID_SHARE_SESSION_EPOCH", 123, true, "The share session epoch is invalid."],
  [
    "FENCED_STATE_EPOCH",
    124,
    false,
    "The share coordinator rejected the request because the share-group state epoch did not " +
      "match.",
  ],
  ["INVALID_VOTER_KEY", 125, false, "The voter key doesn't match the receiving replica's key."],
  ["DUPLICATE_VOTER", 126, false, "The voter is already part of the set of voters."],
  ["VOTER_NOT_FOUND", 127, false, "The voter is not part of the set of voters."],
  ["INVALID_REGULAR_EXPRESSION", 128, false, "The regular expression is not valid."],
  [
    "REBOOTSTRAP_REQUIRED",
    129,
    false,
    "Client metadata is stale. The client should rebootstrap to obtain new metadata.",
  ],
] as const;

type ErrorName = (typeof TABLE)[number][0];

/** Every Kafka error code by its protocol name: `ErrorCode.UNSUPPORTED_VERSION === 35`. */
export const ErrorCode = Object.freeze(
  Object.fromEntries(TABLE.map(([name, code]) => [name, code])),
) as { readonly [K in (typeof TABLE)[number] as K[0]]: K[1] };

/** Code to error description, for every code Kafka 3.9 defines. */
export const KAFKA_ERRORS: Readonly<Record<number, KafkaErrorInfo>> = Object.freeze(
  Object.fromEntries(
    TABLE.map(([name, code, retriable, message]) => [
      code,
      Object.freeze({ name, code, retriable, message }),
    ]),
  ),
);

/** The description of an error code; unknown codes map to UNKNOWN_SERVER_ERROR as in Kafka. */
export function errorInfo(code: number): KafkaErrorInfo {
  return KAFKA_ERRORS[code] ?? KAFKA_ERRORS[ErrorCode.UNKNOWN_SERVER_ERROR]!;
}

/** The protocol name of an error code, e.g. `errorName(35) === "UNSUPPORTED_VERSION"`. */
export function errorName(code: number): string {
  return KAFKA_ERRORS[code]?.name ?? `UNKNOWN_ERROR_CODE_${code}`;
}

/** Whether a client may retry a request that failed with this code. Unknown codes are not. */
export function isRetriable(code: number): boolean {
  return KAFKA_ERRORS[code]?.retriable ?? false;
}

/**
 * An operating error raised in a lower layer that a handler turns into a Kafka error code,
 * e.g. storage throws `new KafkaError(ErrorCode.CORRUPT_MESSAGE, "CRC mismatch at 4096")`.
 */
export class KafkaError extends Error {
  override readonly name = "KafkaError";
  readonly code: number;

  constructor(code: number, message?: string, options?: { cause?: unknown }) {
    super(message ?? errorInfo(code).message, options);
    this.code = code;
  }

  /** The protocol name of this error's code, e.g. "CORRUPT_MESSAGE". */
  get errorName(): string {
    return errorName(this.code);
  }

  get retriable(): boolean {
    return isRetriable(this.code);
  }
}

/**
 * The bytes are not a valid message: truncated, a negative or oversized length, a varint that
 * never ends, an unknown API key or version. The network layer answers these by closing the
 * connection (as Kafka does), never by crashing.
 */
export class DecodeError extends Error {
  override readonly name: string = "DecodeError";
  /** The byte offset in the buffer at which decoding failed. */
  readonly offset: number;

  constructor(message: string, offset: number, options?: { cause?: unknown }) {
    super(`${message} (at byte ${offset})`, options);
    this.offset = offset;
  }
}

/**
 * The request names an API key Quill does not know or a version outside the versions the codecs
 * handle. A DecodeError, since the body cannot be read, but one a handler may answer: Kafka
 * replies to an ApiVersions request of an unknown version with UNSUPPORTED_VERSION.
 */
export class UnsupportedApiError extends DecodeError {
  override readonly name = "UnsupportedApiError";
  readonly apiKey: number;
  readonly apiVersion: number;

  constructor(apiKey: number, apiVersion: number, reason: string) {
    super(`API key ${apiKey} version ${apiVersion}: ${reason}`, 0);
    this.apiKey = apiKey;
    this.apiVersion = apiVersion;
  }
}

/**
 * A message cannot be written in the requested version, e.g. a field the version lacks holds a
 * non-default value and the field is not ignorable. This is a bug in the caller, not bad input.
 */
export class EncodeError extends Error {
  override readonly name = "EncodeError";
}

export type { ErrorName };
