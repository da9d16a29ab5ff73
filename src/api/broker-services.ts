import type { BrokerConfig } from "../config/broker-config.ts";
import type { DynamicBrokerConfig } from "../config/dynamic-broker-config.ts";
import type { KafkaController } from "../controller/controller.ts";
import type { AddPartitionsToTxnManager } from "../coordinator/add-partitions-to-txn-manager.ts";
import type { GroupCoordinator } from "../coordinator/group-coordinator.ts";
import type { ShareCoordinator } from "../coordinator/share-coordinator.ts";
import type { TransactionCoordinator } from "../coordinator/transaction-coordinator.ts";
import type { TransactionStateManager } from "../coordinator/transaction-state-manager.ts";
import type { ClientQuotaStore } from "../metadata/client-quota-store.ts";
import type { ControllerRequestGuard } from "../metadata/controller-request-guard.ts";
import type { AclAuthorizer } from "../security/acl-authorizer.ts";
import type { SaslAuthenticator } from "../security/sasl-authenticator.ts";
import type { AdminManager } from "../server/admin-manager.ts";
import type { BrokerConfigManager } from "../server/broker-config-manager.ts";
import type { BrokerMetrics } from "../server/broker-metrics.ts";
import type { ClientQuotaManager } from "../server/client-quota-manager.ts";
import type { MetadataCache } from "../server/metadata-cache.ts";
import type { ProducerIdManager } from "../server/producer-id-manager.ts";
import type { ReplicaManager } from "../server/replica-manager.ts";
import type { SharePartitionManager } from "../server/share-partition-manager.ts";

/**
 * An implemented API and the versions of it Quill answers, as ApiVersions advertises them. Every
 * ApiHandler is one; naming only these fields keeps this file from importing handler.ts, which
 * imports it.
 */
export interface ImplementedApi {
  readonly apiKey: number;
  readonly minVersion: number;
  readonly maxVersion: number;
}

/** Everything API handlers may call: the broker's services, wired in `broker/broker.ts`. */
export interface BrokerServices {
  /** The static config, as read at start; `dynamicConfig.current` is the config now. */
  readonly config: BrokerConfig;
  /** The broker config with its dynamic changes (DescribeConfigs, topic defaults). */
  readonly dynamicConfig: DynamicBrokerConfig;
  /** AlterConfigs and IncrementalAlterConfigs on BROKER resources. */
  readonly brokerConfigManager: BrokerConfigManager;
  readonly brokerId: number;
  readonly clusterId: string;
  readonly metadataCache: MetadataCache;
  /** SASL listeners' mechanisms and exchanges, and the SCRAM credential store. */
  readonly saslAuthenticator: SaslAuthenticator | null;
  /** `authorizer.class.name`'s ACL authorizer; null when none is configured (all allowed). */
  readonly authorizer: AclAuthorizer | null;
  /** Client quotas in force (throttling); `active` is false while none is set. */
  readonly clientQuotas: ClientQuotaManager;
  /** Where client quotas are kept (DescribeClientQuotas, AlterClientQuotas). */
  readonly clientQuotaStore: ClientQuotaStore;
  readonly replicaManager: ReplicaManager;
  /** Share sessions and share-partition state of the partitions this broker leads (KIP-932). */
  readonly sharePartitionManager: SharePartitionManager;
  /** The share coordinator: share-partition state in __share_group_state (cluster mode). */
  readonly shareCoordinator: ShareCoordinator;
  readonly adminManager: AdminManager;
  /** Consumer groups and their committed offsets (classic protocol). */
  readonly groupCoordinator: GroupCoordinator;
  /** Transactions (InitProducerId with an id, AddPartitionsToTxn, EndTxn, ...). */
  readonly transactionCoordinator: TransactionCoordinator;
  readonly transactionStateManager: TransactionStateManager;
  /** Transactions v2: adds partitions and groups to transactions (Produce, TxnOffsetCommit). */
  readonly addPartitionsToTxnManager: AddPartitionsToTxnManager;
  /** Producer ids for InitProducerId, unique across restarts (and brokers, in ZooKeeper mode). */
  readonly producerIdManager: ProducerIdManager;
  /** This broker's controller candidacy in cluster mode (active or not); null when embedded. */
  readonly controller: KafkaController | null;
  /** Controller requests checked against ZooKeeper (cluster mode); null when embedded. */
  readonly controllerRequestGuard: ControllerRequestGuard | null;
  /** Counters the admin listener's /metrics reports. */
  readonly metrics: BrokerMetrics;
  /** Every registered handler, so ApiVersions advertises exactly what is implemented. */
  readonly handlers: readonly ImplementedApi[];
}
