import { ErrorCode, KafkaError } from "../protocol/errors.ts";

/** Config resource types on the wire (Kafka's ConfigResource.Type ids). */
export const ConfigResourceType = {
  UNKNOWN: 0,
  TOPIC: 2,
  GROUP: 32,
  BROKER: 4,
  BROKER_LOGGER: 8,
  CLIENT_METRICS: 16,
} as const;

/** The enum name Kafka prints in messages; ids it does not know print as UNKNOWN. */
export function resourceTypeName(id: number): string {
  const names = Object.keys(ConfigResourceType) as (keyof typeof ConfigResourceType)[];
  return names.find((n) => ConfigResourceType[n] === id) ?? "UNKNOWN";
}

const INTEGER = /^[+-]?\d+$/;

/**
 * Checks that a broker resource names this broker, with Kafka's messages: a name that is not
 * an integer, or another broker's id, is INVALID_REQUEST. `orWhat` completes the "expected"
 * text (DescribeConfigs also accepts the empty name).
 */
export function brokerIdOfResource(name: string, brokerId: number, orWhat = ""): number {
  if (!INTEGER.test(name)) {
    throw new KafkaError(
      ErrorCode.INVALID_REQUEST,
      `Broker id must be an integer, but it is: ${name}`,
    );
  }
  const id = Number(name);
  if (id !== brokerId) {
    throw new KafkaError(
      ErrorCode.INVALID_REQUEST,
      `Unexpected broker id, expected ${brokerId}${orWhat}, but received ${name}`,
    );
  }
  return id;
}

/** The part of an AlterConfigs or IncrementalAlterConfigs resource that routing needs. */
export interface AlterableResource {
  readonly resourceType: number;
  readonly resourceName: string;
}

export interface AlterResult {
  readonly resourceType: number;
  readonly resourceName: string;
  readonly errorCode: number;
  readonly errorMessage: string | null;
}

/** What alterResources does with each resource type it accepts. */
export interface AlterTargets<R> {
  readonly topic: (resource: R) => Promise<void>;
  /** Called only for this broker's id or the empty name (the cluster-wide default). */
  readonly broker: (resource: R) => Promise<void>;
  /** Group configs (Kafka 4's GROUP resource); absent: INVALID_REQUEST. */
  readonly group?: (resource: R) => Promise<void>;
}

/**
 * Answers each resource of an AlterConfigs or IncrementalAlterConfigs request, in request order:
 * a resource named twice is INVALID_REQUEST for every copy (Kafka's preprocessing); a topic goes
 * to `alter.topic`; a broker named by another id or a non-integer is INVALID_REQUEST, this
 * broker or the empty name go to `alter.broker`; other types are INVALID_REQUEST as in Kafka.
 * A KafkaError becomes that resource's error.
 */
export async function alterResources<R extends AlterableResource>(
  resources: readonly R[],
  brokerId: number,
  alter: AlterTargets<R>,
): Promise<AlterResult[]> {
  const counts = new Map<string, number>();
  const keyOf = (r: R) => `${r.resourceType}:${r.resourceName}`;
  for (const r of resources) counts.set(keyOf(r), (counts.get(keyOf(r)) ?? 0) + 1);
  const results: AlterResult[] = [];
  for (const r of resources) {
    const header = { resourceType: r.resourceType, resourceName: r.resourceName };
    try {
      if (counts.get(keyOf(r))! > 1) {
        throw new KafkaError(ErrorCode.INVALID_REQUEST, "Each resource must appear at most once.");
      }
      await alterOne(r, brokerId, alter);
      results.push({ ...header, errorCode: ErrorCode.NONE, errorMessage: null });
    } catch (e) {
      if (!(e instanceof KafkaError)) throw e;
      results.push({ ...header, errorCode: e.code, errorMessage: e.message });
    }
  }
  return results;
}

async function alterOne<R extends AlterableResource>(
  r: R,
  brokerId: number,
  alter: AlterTargets<R>,
): Promise<void> {
  if (r.resourceType === ConfigResourceType.TOPIC) return alter.topic(r);
  if (r.resourceType === ConfigResourceType.BROKER) {
    if (r.resourceName !== "") brokerIdOfResource(r.resourceName, brokerId);
    return alter.broker(r);
  }
  if (r.resourceType === ConfigResourceType.GROUP && alter.group !== undefined) {
    return alter.group(r);
  }
  throw new KafkaError(
    ErrorCode.INVALID_REQUEST,
    "AlterConfigs is only supported for topics, brokers " +
      `and groups, but resource type is ${resourceTypeName(r.resourceType)}`,
  );
}
