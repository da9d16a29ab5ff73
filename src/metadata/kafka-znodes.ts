/**
 * Kafka's ZooKeeper layout (the paths and JSON of `kafka.zk.ZkData` in Kafka 3.9), so that
 * Kafka's own tools and anyone who knows the layout can read what Quill writes:
 *
 * ```
 * /cluster/id                               {"version":"1","id":"<22-char base64url>"}
 * /brokers/ids/<id>             (ephemeral) {"version":5,"host":..,"port":..,"endpoints":[..]}
 * /brokers/topics/<topic>                   {"version":3,"partitions":{"0":[1,2]},"topic_id":..}
 * /brokers/topics/<topic>/partitions/<p>/state   {"version":1,"leader":1,"leader_epoch":0,..}
 * /config/topics/<topic>                    {"version":1,"config":{"retention.ms":"1000"}}
 * /config/brokers/<id>, /config/brokers/<default>   {"version":1,"config":{"log.retention.ms":..}}
 * /config/changes/config_change_<seq>       {"version":2,"entity_path":"brokers/<default>"}
 * /config/groups/<sanitized group>          {"version":1,"config":{..}}
 *                                           (Quill's place for Kafka 4's group configs)
 * /admin/delete_topics/<topic>              (empty: a request to delete the topic)
 * ```
 *
 * Decoders check shapes with zod: these znodes may be written by other processes (another
 * broker, an operator's tool, a test), and a malformed one must be reported with its path, not
 * crash the broker somewhere later. Encoders write keys in the order Kafka's examples show.
 */

import { z } from "zod";
import type { BrokerId, LeaderEpoch } from "../common/branded.ts";
import { isSecurityProtocol, type Listener } from "../config/listeners.ts";
import { assert } from "../util/assert.ts";

export const CLUSTER_ID_PATH = "/cluster/id";
export const BROKER_IDS_PATH = "/brokers/ids";
export const TOPICS_PATH = "/brokers/topics";
export const CONFIG_TOPICS_PATH = "/config/topics";
export const DELETE_TOPICS_PATH = "/admin/delete_topics";

/**
 * The persistent paths a Kafka broker creates at startup (`KafkaZkClient.createTopLevelPaths`);
 * Kafka's tools expect them, and watches on them can be set before anything is written.
 */
export const PERSISTENT_PATHS: readonly string[] = [
  "/consumers",
  BROKER_IDS_PATH,
  TOPICS_PATH,
  "/config/changes",
  DELETE_TOPICS_PATH,
  "/brokers/seqid",
  "/isr_change_notification",
  "/latest_producer_id_block",
  "/log_dir_event_notification",
  CONFIG_TOPICS_PATH,
  "/config/clients",
  "/config/users",
  "/config/brokers",
  "/config/ips",
];

/** Kafka's `Topic.MAX_NAME_LENGTH`. */
const TOPIC_NAME_LENGTH_MAX = 249;

/**
 * Kafka's legal topic names ([a-zA-Z0-9._-], at most 249 characters, not "." or "..") are all
 * plain znode names, so topics need no escaping. Children of `/brokers/topics` written by
 * someone else are checked with this before use.
 */
export function isLegalTopicName(topic: string): boolean {
  if (topic.length === 0 || topic.length > TOPIC_NAME_LENGTH_MAX) return false;
  return /^[a-zA-Z0-9._-]+$/.test(topic) && topic !== "." && topic !== "..";
}

/** Anything but a legal name reaching a path builder is a bug upstream. */
function topicSegment(topic: string): string {
  assert(isLegalTopicName(topic), `topic name "${topic}" is not a legal Kafka name`);
  return topic;
}

export const brokerIdPath = (brokerId: number) => `${BROKER_IDS_PATH}/${brokerId}`;
export const topicPath = (topic: string) => `${TOPICS_PATH}/${topicSegment(topic)}`;
export const partitionsPath = (topic: string) => `${topicPath(topic)}/partitions`;
export const partitionPath = (topic: string, partition: number) => {
  return `${partitionsPath(topic)}/${partition}`;
};
export const partitionStatePath = (topic: string, partition: number) => {
  return `${partitionPath(topic, partition)}/state`;
};
export const topicConfigPath = (topic: string) => `${CONFIG_TOPICS_PATH}/${topicSegment(topic)}`;
export const deleteTopicPath = (topic: string) => `${DELETE_TOPICS_PATH}/${topicSegment(topic)}`;

/** A znode's bytes did not hold what Kafka's layout says belongs there. */
export class MalformedZnodeError extends Error {
  override readonly name = "MalformedZnodeError";
  constructor(
    readonly path: string,
    detail: string,
    options?: { cause?: unknown },
  ) {
    super(`malformed znode ${path}: ${detail}`, options);
  }
}

function encodeJson(value: unknown): Uint8Array {
  return new TextEncoder().encode(JSON.stringify(value));
}

function decodeJson<T>(path: string, data: Uint8Array, schema: z.ZodType<T>): T {
  let parsed: unknown;
  try {
    parsed = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(data));
  } catch (error) {
    throw new MalformedZnodeError(path, "not UTF-8 JSON", { cause: error });
  }
  const result = schema.safeParse(parsed);
  if (!result.success) throw new MalformedZnodeError(path, z.prettifyError(result.error));
  return result.data;
}

// ---- /cluster/id ----------------------------------------------------------------------------

/** Kafka writes the version as the string "1" here, unlike every other znode. */
const ClusterIdJson = z.object({ version: z.string(), id: z.string().min(1) });

export function encodeClusterId(clusterId: string): Uint8Array {
  assert(clusterId.length > 0, "cluster id must not be empty");
  return encodeJson({ version: "1", id: clusterId });
}

export function decodeClusterId(data: Uint8Array): string {
  return decodeJson(CLUSTER_ID_PATH, data, ClusterIdJson).id;
}

// ---- /brokers/ids/<id> ----------------------------------------------------------------------

/**
 * What a broker registration says about the broker. `host` and `port` are its inter-broker
 * endpoint (the listener named PLAINTEXT, as replication and controller traffic use).
 */
export interface BrokerRegistrationInfo {
  readonly brokerId: number;
  readonly host: string;
  readonly port: number;
  /** Every advertised listener; absent means one PLAINTEXT listener at host:port. */
  readonly endpoints?: readonly Listener[];
  readonly rack: string | null;
  /** When the registration was written; Kafka stores it as a decimal string. */
  readonly timestampMs: number;
}

/** Kafka 2.7+ registers version 5 (version 4 plus `features`). */
export const BROKER_REGISTRATION_VERSION = 5;
const ENDPOINT_PATTERN = /^([A-Za-z0-9_]+):\/\/\[?([^\]]*)\]?:(\d+)$/;

const BrokerRegistrationJson = z.object({
  version: z.number().int().min(1),
  host: z.string().nullable().optional(),
  port: z.number().int().optional(),
  endpoints: z.array(z.string()).optional(),
  listener_security_protocol_map: z.record(z.string(), z.string()).nullable().optional(),
  rack: z.string().nullable().optional(),
  timestamp: z.string().optional(),
});

const bracketed = (host: string) => (host.includes(":") ? `[${host}]` : host);

/**
 * Kafka's layout (BrokerInfo.toJsonBytes): every endpoint with its listener's protocol, and the
 * top-level host and port of the first PLAINTEXT endpoint for pre-listener readers.
 */
export function encodeBrokerRegistration(info: BrokerRegistrationInfo): Uint8Array {
  assert(Number.isInteger(info.port) && info.port > 0, `broker port ${info.port} must be > 0`);
  assert(info.host.length > 0, "broker host must not be empty");
  const endpoints = info.endpoints ?? [
    {
      listenerName: "PLAINTEXT",
      host: info.host,
      port: info.port,
      securityProtocol: "PLAINTEXT",
    },
  ];
  const plaintext = endpoints.find((e) => e.securityProtocol === "PLAINTEXT");
  const json: Record<string, unknown> = {
    features: {},
    listener_security_protocol_map: Object.fromEntries(
      endpoints.map((e) => [e.listenerName, e.securityProtocol]),
    ),
    endpoints: endpoints.map((e) => `${e.listenerName}://${bracketed(e.host)}:${e.port}`),
    jmx_port: -1,
    port: plaintext?.port ?? -1,
    host: plaintext?.host ?? null,
    version: BROKER_REGISTRATION_VERSION,
    timestamp: String(info.timestampMs),
  };
  if (info.rack !== null) json.rack = info.rack;
  return encodeJson(json);
}

/**
 * Reads a registration of any version Kafka has written. The inter-broker endpoint is the one
 * named `interBrokerListener` (every broker of a cluster shares that name, as in Kafka), else
 * the top-level host and port, else the first endpoint (version 4+ brokers whose listeners are
 * not PLAINTEXT leave the top level unset).
 */
export function decodeBrokerRegistration(
  brokerId: number,
  data: Uint8Array,
  interBrokerListener = "PLAINTEXT",
): BrokerRegistrationInfo {
  const path = brokerIdPath(brokerId);
  const json = decodeJson(path, data, BrokerRegistrationJson);
  const protocols = json.listener_security_protocol_map ?? {};
  const parsed = (json.endpoints ?? []).map((text) => {
    const match = text.match(ENDPOINT_PATTERN);
    if (match === null) throw new MalformedZnodeError(path, `bad endpoint ${text}`);
    const listenerName = match[1]!.toUpperCase();
    return {
      listenerName,
      host: match[2]!,
      port: Number(match[3]),
      securityProtocol: protocols[listenerName] ?? listenerName,
    };
  });
  // An endpoint whose protocol is unknown here still locates the broker, but is no listener.
  const endpoints = parsed.filter((e): e is Listener => isSecurityProtocol(e.securityProtocol));
  const named = parsed.find((e) => e.listenerName === interBrokerListener);
  const topLevel =
    json.host != null && (json.port ?? -1) > 0 ? { host: json.host, port: json.port! } : undefined;
  const interBroker = named ?? topLevel ?? parsed[0];
  if (interBroker === undefined) throw new MalformedZnodeError(path, "no endpoint");
  const timestampMs = json.timestamp === undefined ? 0 : Number(json.timestamp);
  return {
    brokerId,
    host: interBroker.host,
    port: interBroker.port,
    ...(endpoints.length > 0 ? { endpoints } : {}),
    rack: json.rack ?? null,
    timestampMs,
  };
}

// ---- /brokers/topics/<topic> ----------------------------------------------------------------

export interface TopicAssignmentZnode {
  /** Kafka's `Uuid.toString()`: the 16 bytes in URL-safe base64 without padding. */
  readonly topicIdBase64: string | null;
  /**
   * Partition index -> replica broker ids; partitions are 0..n-1 with none missing. During a
   * reassignment a partition's list holds the target replicas followed by the original ones.
   */
  readonly assignment: readonly (readonly number[])[];
  /** Reassignments in progress: partition index -> replicas being added (only non-empty). */
  readonly addingReplicas?: ReadonlyMap<number, readonly number[]>;
  /** Partition index -> replicas being removed (only non-empty). */
  readonly removingReplicas?: ReadonlyMap<number, readonly number[]>;
}

/** Kafka 3.x writes version 3 (topic ids, adding/removing replicas). */
export const TOPIC_ZNODE_VERSION = 3;
const BrokerList = z.array(z.number().int().min(0));
const TopicJson = z.object({
  version: z.number().int().min(1),
  partitions: z.record(z.string().regex(/^\d+$/), BrokerList),
  topic_id: z.string().optional(),
  adding_replicas: z.record(z.string(), BrokerList).optional(),
  removing_replicas: z.record(z.string(), BrokerList).optional(),
});

export function encodeTopicAssignment(znode: TopicAssignmentZnode): Uint8Array {
  assert(znode.assignment.length > 0, "a topic needs at least one partition");
  const partitions: Record<string, readonly number[]> = {};
  znode.assignment.forEach((replicas, partition) => {
    assert(replicas.length > 0, `partition ${partition} has no replicas`);
    partitions[String(partition)] = replicas;
  });
  const json: Record<string, unknown> = {
    partitions,
    adding_replicas: replicaMapJson(znode.addingReplicas),
    removing_replicas: replicaMapJson(znode.removingReplicas),
    version: TOPIC_ZNODE_VERSION,
  };
  if (znode.topicIdBase64 !== null) json.topic_id = znode.topicIdBase64;
  return encodeJson(json);
}

export function decodeTopicAssignment(topic: string, data: Uint8Array): TopicAssignmentZnode {
  const path = topicPath(topic);
  const json = decodeJson(path, data, TopicJson);
  const count = Object.keys(json.partitions).length;
  if (count === 0) throw new MalformedZnodeError(path, "no partitions");
  const assignment: number[][] = [];
  for (let p = 0; p < count; p++) {
    const replicas = json.partitions[String(p)];
    if (replicas === undefined || replicas.length === 0) {
      throw new MalformedZnodeError(path, `partition ${p} missing or without replicas`);
    }
    assignment.push(replicas);
  }
  if (json.topic_id !== undefined && topicIdFromBase64(json.topic_id) === null) {
    throw new MalformedZnodeError(path, `topic_id "${json.topic_id}" is not a 16-byte id`);
  }
  const addingReplicas = replicaMapOf(path, json.adding_replicas, count);
  const removingReplicas = replicaMapOf(path, json.removing_replicas, count);
  const reassigning = addingReplicas.size > 0 || removingReplicas.size > 0;
  return {
    topicIdBase64: json.topic_id ?? null,
    assignment,
    ...(reassigning ? { addingReplicas, removingReplicas } : {}),
  };
}

function replicaMapJson(map: ReadonlyMap<number, readonly number[]> | undefined) {
  const json: Record<string, readonly number[]> = {};
  for (const [partition, replicas] of map ?? []) {
    if (replicas.length > 0) json[String(partition)] = replicas;
  }
  return json;
}

function replicaMapOf(
  path: string,
  json: Record<string, number[]> | undefined,
  partitionCount: number,
): Map<number, number[]> {
  const map = new Map<number, number[]>();
  for (const [key, replicas] of Object.entries(json ?? {})) {
    const partition = Number(key);
    if (!/^\d+$/.test(key) || partition >= partitionCount) {
      throw new MalformedZnodeError(path, `adding/removing replicas of unknown partition ${key}`);
    }
    if (replicas.length > 0) map.set(partition, replicas);
  }
  return map;
}

// ---- /admin/reassign_partitions ------------------------------------------------------------

/** The legacy reassignment request an operator's tool (or a script) writes; Kafka watches it. */
export const REASSIGN_PARTITIONS_PATH = "/admin/reassign_partitions";

export interface LegacyReassignment {
  readonly topic: string;
  readonly partition: number;
  readonly replicas: readonly number[];
}

const ReassignJson = z.object({
  version: z.number().int().min(1),
  partitions: z.array(
    z.object({
      topic: z.string(),
      partition: z.number().int().min(0),
      replicas: BrokerList,
    }),
  ),
});

export function encodeReassignPartitions(list: readonly LegacyReassignment[]): Uint8Array {
  return encodeJson({ version: 1, partitions: list });
}

export function decodeReassignPartitions(data: Uint8Array): LegacyReassignment[] {
  return decodeJson(REASSIGN_PARTITIONS_PATH, data, ReassignJson).partitions;
}

/** Quill keeps topic ids as hex (TopicRecord.topicIdHex); Kafka's znodes hold base64url. */
export function topicIdToBase64(topicIdHex: string): string {
  assert(/^[0-9a-f]{32}$/.test(topicIdHex), `topic id "${topicIdHex}" must be 32 hex digits`);
  return Buffer.from(topicIdHex, "hex").toString("base64url");
}

/** The hex form of a base64url topic id, or null when it does not hold 16 bytes. */
export function topicIdFromBase64(topicIdBase64: string): string | null {
  if (!/^[A-Za-z0-9_-]{22}$/.test(topicIdBase64)) return null;
  const bytes = Buffer.from(topicIdBase64, "base64url");
  return bytes.length === 16 ? bytes.toString("hex") : null;
}

// ---- /brokers/topics/<topic>/partitions/<p>/state -------------------------------------------

export interface PartitionStateZnode {
  readonly leader: BrokerId;
  readonly leaderEpoch: LeaderEpoch;
  readonly isr: readonly BrokerId[];
  readonly controllerEpoch: number;
}

const PartitionStateJson = z.object({
  version: z.number().int().min(1),
  leader: z.number().int(),
  leader_epoch: z.number().int(),
  isr: BrokerList,
  controller_epoch: z.number().int(),
});

export function encodePartitionState(state: PartitionStateZnode): Uint8Array {
  assert(state.leaderEpoch >= 0, `leader epoch ${state.leaderEpoch} must be >= 0`);
  assert(
    state.leader === -1 || state.isr.includes(state.leader),
    `leader ${state.leader} must be in the ISR [${state.isr.join(",")}]`,
  );
  return encodeJson({
    controller_epoch: state.controllerEpoch,
    leader: state.leader,
    version: 1,
    leader_epoch: state.leaderEpoch,
    isr: state.isr,
  });
}

export function decodePartitionState(path: string, data: Uint8Array): PartitionStateZnode {
  const json = decodeJson(path, data, PartitionStateJson);
  return {
    leader: json.leader,
    leaderEpoch: json.leader_epoch,
    isr: json.isr,
    controllerEpoch: json.controller_epoch,
  };
}

// ---- /config/topics/<topic> -----------------------------------------------------------------

/** Kafka stores every value as a string, as in a .properties file. */
const ConfigJson = z.object({
  version: z.number().int().min(1),
  config: z.record(z.string(), z.string()),
});

export function encodeTopicConfig(configs: Readonly<Record<string, string>>): Uint8Array {
  return encodeJson({ version: 1, config: configs });
}

export function decodeTopicConfig(topic: string, data: Uint8Array): Record<string, string> {
  // Kafka's admin tools create the znode with an empty body in some paths; that means no overrides.
  if (data.byteLength === 0) return {};
  return decodeJson(topicConfigPath(topic), data, ConfigJson).config;
}

// ---- /config/brokers/<id> and /config/changes ------------------------------------------------

export const CONFIG_BROKERS_PATH = "/config/brokers";
/** Kafka's ConfigEntityName.Default: the entity of the cluster-wide dynamic broker defaults. */
export const DEFAULT_CONFIG_ENTITY = "<default>";
export const CONFIG_CHANGES_PATH = "/config/changes";
/** Kafka's ConfigEntityChangeNotificationSequenceZNode prefix. */
export const CONFIG_CHANGE_PREFIX = `${CONFIG_CHANGES_PATH}/config_change_`;

export const brokerConfigPath = (entity: string) => `${CONFIG_BROKERS_PATH}/${entity}`;

export function encodeEntityConfig(configs: Readonly<Record<string, string>>): Uint8Array {
  return encodeJson({ version: 1, config: configs });
}

export function decodeEntityConfig(path: string, data: Uint8Array): Record<string, string> {
  if (data.byteLength === 0) return {};
  return decodeJson(path, data, ConfigJson).config;
}

/** Version 2 of Kafka's change notification: which entity's config znode changed. */
export function encodeConfigChange(entityType: string, entity: string): Uint8Array {
  return encodeJson({ version: 2, entity_path: `${entityType}/${entity}` });
}

// ---- /controller and /controller_epoch ------------------------------------------------------

export const CONTROLLER_PATH = "/controller";
export const CONTROLLER_EPOCH_PATH = "/controller_epoch";

/**
 * Kafka 3.9's `ControllerZNode.encode`: version 2, with kraftControllerEpoch -1 for a ZooKeeper
 * controller (a KRaft controller in migration writes its epoch there).
 */
export function encodeController(brokerId: number, timestampMs: number): Uint8Array {
  assert(brokerId >= 0, `controller broker id ${brokerId} must be >= 0`);
  return encodeJson({
    version: 2,
    brokerid: brokerId,
    timestamp: String(timestampMs),
    kraftControllerEpoch: -1,
  });
}

const ControllerJson = z.object({ brokerid: z.number().int() });

export function decodeController(data: Uint8Array): number {
  return decodeJson(CONTROLLER_PATH, data, ControllerJson).brokerid;
}

/** `/controller_epoch` holds the epoch as a plain decimal string, not JSON. */
export function encodeControllerEpoch(epoch: number): Uint8Array {
  assert(Number.isInteger(epoch) && epoch >= 0, `controller epoch ${epoch} must be >= 0`);
  return new TextEncoder().encode(String(epoch));
}

export function decodeControllerEpoch(data: Uint8Array): number {
  const text = new TextDecoder().decode(data).trim();
  if (!/^\d+$/.test(text)) throw new MalformedZnodeError(CONTROLLER_EPOCH_PATH, `"${text}"`);
  return Number(text);
}

// ---- /log_dir_event_notification -------------------------------------------------------------

/** Where a broker says a log dir of its failed (Kafka's LogDirEventNotificationZNode). */
export const LOG_DIR_EVENT_NOTIFICATION_PATH = "/log_dir_event_notification";
/** Children are persistent sequential znodes `log_dir_event_<10 digits>`. */
export const LOG_DIR_EVENT_PREFIX = `${LOG_DIR_EVENT_NOTIFICATION_PATH}/log_dir_event_`;
/** Kafka's LogDirEventNotificationHandler.LogDirFailureEvent, the only event there is. */
const LOG_DIR_FAILURE_EVENT = 1;

export function encodeLogDirEvent(brokerId: number): Uint8Array {
  assert(brokerId >= 0, `broker id ${brokerId} must be >= 0`);
  return encodeJson({ version: 1, broker: brokerId, event: LOG_DIR_FAILURE_EVENT });
}

const LogDirEventJson = z.object({ broker: z.number().int().min(0) });

/** The broker a notification names. */
export function decodeLogDirEvent(path: string, data: Uint8Array): number {
  return decodeJson(path, data, LogDirEventJson).broker;
}
