/**
 * Requests and results of the group coordinator's operations, in domain terms. Field names
 * follow the Kafka message fields (camelCase), so the API handlers translate with little code;
 * the handlers fill in what older versions of a request do not carry.
 */

export interface JoinGroupProtocol {
  readonly name: string;
  readonly metadata: Uint8Array;
}

export interface JoinGroupRequest {
  readonly groupId: string;
  /** "" for a member joining for the first time. */
  readonly memberId: string;
  readonly groupInstanceId: string | null;
  readonly protocolType: string;
  readonly protocols: readonly JoinGroupProtocol[];
  readonly sessionTimeoutMs: number;
  /** JoinGroup v0 has no rebalance timeout; its handler passes the session timeout (as Kafka). */
  readonly rebalanceTimeoutMs: number;
  readonly reason: string | null;
  /** v4+ answers a new dynamic member MEMBER_ID_REQUIRED; v9+ may skip the assignment. */
  readonly apiVersion: number;
  readonly clientId: string;
  readonly clientHost: string;
}

export interface JoinGroupMember {
  readonly memberId: string;
  readonly groupInstanceId: string | null;
  readonly metadata: Uint8Array;
}

export interface JoinGroupResult {
  readonly errorCode: number;
  readonly generationId: number;
  readonly protocolType: string | null;
  readonly protocolName: string | null;
  readonly leader: string;
  readonly skipAssignment: boolean;
  readonly memberId: string;
  /** Every member's metadata for the chosen protocol, for the leader only; empty otherwise. */
  readonly members: readonly JoinGroupMember[];
}

export interface SyncGroupRequest {
  readonly groupId: string;
  readonly generationId: number;
  readonly memberId: string;
  readonly groupInstanceId: string | null;
  /** v5+; null when the request version does not carry it. */
  readonly protocolType: string | null;
  readonly protocolName: string | null;
  /** Only the leader sends assignments; followers send none. */
  readonly assignments: readonly { readonly memberId: string; readonly assignment: Uint8Array }[];
}

export interface SyncGroupResult {
  readonly errorCode: number;
  readonly protocolType: string | null;
  readonly protocolName: string | null;
  readonly assignment: Uint8Array;
}

export interface HeartbeatRequest {
  readonly groupId: string;
  readonly generationId: number;
  readonly memberId: string;
  readonly groupInstanceId: string | null;
}

export interface LeavingMember {
  /** "" to remove a static member by its instance id alone (admin removal, KIP-345). */
  readonly memberId: string;
  readonly groupInstanceId: string | null;
  readonly reason: string | null;
}

export interface LeaveGroupRequest {
  readonly groupId: string;
  readonly members: readonly LeavingMember[];
}

export interface LeaveGroupResult {
  readonly errorCode: number;
  readonly members: readonly {
    readonly memberId: string;
    readonly groupInstanceId: string | null;
    readonly errorCode: number;
  }[];
}

export interface DescribedMember {
  readonly memberId: string;
  readonly groupInstanceId: string | null;
  readonly clientId: string;
  readonly clientHost: string;
  readonly memberMetadata: Uint8Array;
  readonly memberAssignment: Uint8Array;
}

export interface DescribedGroup {
  readonly errorCode: number;
  readonly errorMessage: string | null;
  readonly groupId: string;
  readonly groupState: string;
  readonly protocolType: string;
  readonly protocolData: string;
  readonly members: readonly DescribedMember[];
}

export interface ListGroupsRequest {
  /** Kafka state names, matched case-insensitively; empty means every state. */
  readonly statesFilter: readonly string[];
  /** Group types ("classic", "consumer"); empty means every type. All groups here are classic. */
  readonly typesFilter: readonly string[];
}

export interface ListedGroup {
  readonly groupId: string;
  readonly protocolType: string;
  readonly groupState: string;
  readonly groupType: string;
}

export interface ListGroupsResult {
  readonly errorCode: number;
  readonly groups: readonly ListedGroup[];
}

export interface DeleteGroupResult {
  readonly groupId: string;
  readonly errorCode: number;
}

export interface OffsetCommitPartition {
  readonly partitionIndex: number;
  readonly committedOffset: bigint;
  /** -1 when the client does not know it (OffsetCommit v0-5). */
  readonly committedLeaderEpoch: number;
  readonly committedMetadata: string | null;
}

export interface OffsetCommitRequest {
  readonly groupId: string;
  /** -1 for a consumer that assigns partitions itself (no group management). */
  readonly generationId: number;
  readonly memberId: string;
  readonly groupInstanceId: string | null;
  readonly topics: readonly {
    readonly name: string;
    readonly partitions: readonly OffsetCommitPartition[];
  }[];
}

export interface PartitionError {
  readonly partitionIndex: number;
  readonly errorCode: number;
}

export interface TopicPartitionErrors {
  readonly name: string;
  readonly partitions: readonly PartitionError[];
}

export interface OffsetCommitResult {
  readonly topics: readonly TopicPartitionErrors[];
}

export interface OffsetFetchTopic {
  readonly name: string;
  readonly partitionIndexes: readonly number[];
}

export interface OffsetFetchRequest {
  readonly groupId: string;
  /** null asks for every partition the group has committed. */
  readonly topics: readonly OffsetFetchTopic[] | null;
  /** Only meaningful with transactions, which Quill does not have: answered like a plain fetch. */
  readonly requireStable: boolean;
  /**
   * v9+: the KIP-848 member fetching, checked against a consumer group's members (null and a
   * negative epoch: an admin client or a classic consumer, not checked).
   */
  readonly memberId?: string | null;
  readonly memberEpoch?: number;
}

export interface FetchedOffset {
  readonly partitionIndex: number;
  /** -1 when the group has no committed offset for the partition. */
  readonly committedOffset: bigint;
  readonly committedLeaderEpoch: number;
  readonly metadata: string | null;
  readonly errorCode: number;
}

export interface OffsetFetchResult {
  readonly errorCode: number;
  readonly topics: readonly {
    readonly name: string;
    readonly partitions: readonly FetchedOffset[];
  }[];
}

export interface OffsetDeleteRequest {
  readonly groupId: string;
  readonly topics: readonly { readonly name: string; readonly partitions: readonly number[] }[];
}

export interface OffsetDeleteResult {
  /** A group-level error; when set, `topics` is empty (as in Kafka). */
  readonly errorCode: number;
  readonly topics: readonly TopicPartitionErrors[];
}
