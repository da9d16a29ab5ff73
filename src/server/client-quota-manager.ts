/**
 * Client quotas (Kafka's ClientQuotaManager with its DefaultQuotaCallback): per quota type, the
 * quota of a request's (user, client-id) is the first entity found in Kafka's order
 *
 *   1. users/<user>/clients/<client-id>      5. users/<default>/clients/<default>
 *   2. users/<user>/clients/<default>        6. users/<default>
 *   3. users/<user>                          7. clients/<client-id>
 *   4. users/<default>/clients/<client-id>   8. clients/<default>
 *
 * and the rate is measured per what that entity shares: a user's quota (3, 6) is shared by all
 * of the user's clients, a client-id's (7, 8) by all users of that client-id, the others are per
 * (user, client-id). Without any quota nothing is measured (`active` is false, so request
 * handling skips this class); with some, a request costs one map lookup per quota type.
 * `controller_mutation_rate` is metered by a token bucket per sharing entity instead of a
 * sampled rate (KIP-599, `controllerMutationQuota`).
 */
import type { EntityConfigs, QuotaEntityPath } from "../metadata/client-quota-store.ts";
import { assert } from "../util/assert.ts";
import { sanitize } from "../zookeeper/kafka-sanitizer.ts";
import {
  type ControllerMutationQuota,
  PermissiveControllerMutationQuota,
  StrictControllerMutationQuota,
  UNBOUNDED_MUTATION_QUOTA,
} from "./controller-mutation-quota.ts";
import { type QuotaMeter, QuotaSensor } from "./quota-sensor.ts";
import { TokenBucket } from "./token-bucket.ts";

/** Kafka's quota config keys (QuotaConfigs), which are also the quota types. */
export const QUOTA_TYPES = [
  "producer_byte_rate",
  "consumer_byte_rate",
  "request_percentage",
  "controller_mutation_rate",
] as const;
export type QuotaType = (typeof QUOTA_TYPES)[number];

/** Kafka's config type of each key: the byte rates are LONG, the others DOUBLE. */
export const QUOTA_KEY_IS_LONG: Readonly<Record<QuotaType, boolean>> = {
  producer_byte_rate: true,
  consumer_byte_rate: true,
  request_percentage: false,
  controller_mutation_rate: false,
};

export const isQuotaType = (key: string): key is QuotaType =>
  (QUOTA_TYPES as readonly string[]).includes(key);

/** Most cached (user, client-id) resolutions and live sensors per quota type. */
const CACHED_MAX = 100_000;
const DEFAULT = "<default>";

interface Resolved {
  readonly sensor: QuotaMeter;
  readonly limit: number;
}

interface QuotaState {
  /** Entity path to the quota it sets. */
  readonly quotas: Map<string, number>;
  /** `user\0client-id` to its quota, or null for none; emptied on every quota change. */
  readonly resolved: Map<string, Resolved | null>;
  /** Sensor per sharing key (Kafka's metric tags), kept across quota changes. */
  readonly sensors: Map<string, QuotaMeter>;
  readonly newSensor: () => QuotaMeter;
}

export interface QuotaWindow {
  /** quota.window.num */
  readonly samples: number;
  /** quota.window.size.seconds, in ms */
  readonly sampleMs: number;
}

export class ClientQuotaManager {
  private readonly states: Map<QuotaType, QuotaState>;
  /** True while any quota of any type is set: false means nothing to measure. */
  active = false;

  /**
   * `window`: quota.window.*; `controllerWindow`: controller.quota.window.*, which sizes the
   * controller mutation token buckets.
   */
  constructor(
    readonly window: QuotaWindow,
    readonly controllerWindow: QuotaWindow = window,
  ) {
    const state = (type: QuotaType): QuotaState => {
      const w = type === "controller_mutation_rate" ? controllerWindow : window;
      const newSensor =
        type === "controller_mutation_rate"
          ? () => new TokenBucket(w.samples, w.sampleMs)
          : () => new QuotaSensor(w.samples, w.sampleMs);
      return { quotas: new Map(), resolved: new Map(), sensors: new Map(), newSensor };
    };
    this.states = new Map(QUOTA_TYPES.map((t) => [t, state(t)]));
  }

  /** Applies an entity's stored configs (keys other than quota types are ignored). */
  update(path: QuotaEntityPath, configs: EntityConfigs): void {
    this.set(path, configs);
    this.refreshActive();
  }

  /** Replaces every quota with `all` (at start and after a new ZooKeeper session). */
  replaceAll(all: ReadonlyMap<QuotaEntityPath, EntityConfigs>): void {
    for (const state of this.states.values()) {
      state.quotas.clear();
      state.resolved.clear();
    }
    for (const [path, configs] of all) this.set(path, configs);
    this.refreshActive();
  }

  private set(path: QuotaEntityPath, configs: EntityConfigs): void {
    for (const [type, state] of this.states) {
      const value = configs[type] === undefined ? Number.NaN : Number(configs[type]);
      if (Number.isFinite(value)) state.quotas.set(path, value);
      else state.quotas.delete(path);
      state.resolved.clear();
    }
  }

  private refreshActive(): void {
    this.active = [...this.states.values()].some((s) => s.quotas.size > 0);
  }

  /**
   * Records `value` for the principal's client and returns the throttle time in ms (0 when
   * within its quota or without one).
   */
  recordAndGetThrottleTimeMs(
    type: QuotaType,
    principal: string,
    clientId: string,
    value: number,
    nowMs: number,
  ): number {
    const resolved = this.resolve(type, principal, clientId);
    if (resolved === null) return 0;
    const throttleMs = resolved.sensor.recordAndThrottleMs(value, nowMs, resolved.limit);
    resolved.sensor.throttleTimeMsTotal += throttleMs;
    return throttleMs;
  }

  /** Takes back a recorded value (a throttled fetch returns no records, as in Kafka). */
  unrecord(type: QuotaType, principal: string, clientId: string, value: number, nowMs: number) {
    const sensor = this.resolve(type, principal, clientId)?.sensor;
    if (sensor instanceof QuotaSensor) sensor.record(-value, nowMs);
  }

  /**
   * The controller mutation quota of one request from the principal's client (Kafka's
   * ControllerMutationQuotaManager.newQuotaFor): strict for clients that understand
   * THROTTLING_QUOTA_EXCEEDED, permissive for older ones; unbounded without a quota.
   */
  controllerMutationQuota(
    principal: string,
    clientId: string,
    strict: boolean,
  ): ControllerMutationQuota {
    if (!this.active) return UNBOUNDED_MUTATION_QUOTA;
    const resolved = this.resolve("controller_mutation_rate", principal, clientId);
    if (resolved === null) return UNBOUNDED_MUTATION_QUOTA;
    const bucket = resolved.sensor;
    assert(bucket instanceof TokenBucket, "controller_mutation_rate is metered by a token bucket");
    return strict
      ? new StrictControllerMutationQuota(bucket, resolved.limit)
      : new PermissiveControllerMutationQuota(bucket, resolved.limit);
  }

  /** Kafka's getMaxValueInQuotaWindow: most bytes one response may carry; Infinity: no quota. */
  maxValueInQuotaWindow(type: QuotaType, principal: string, clientId: string): number {
    const resolved = this.resolve(type, principal, clientId);
    if (resolved === null) return Number.POSITIVE_INFINITY;
    return (resolved.limit * (this.window.samples - 1) * this.window.sampleMs) / 1000;
  }

  /** Throttle time handed out per quota type and sharing entity, for /metrics. */
  throttleTimes(): { type: QuotaType; user: string; clientId: string; ms: number }[] {
    const out: { type: QuotaType; user: string; clientId: string; ms: number }[] = [];
    for (const [type, state] of this.states) {
      for (const [key, sensor] of state.sensors) {
        const [user, clientId] = key.split("\u0000") as [string, string];
        out.push({ type, user, clientId, ms: sensor.throttleTimeMsTotal });
      }
    }
    return out;
  }

  private resolve(type: QuotaType, principal: string, clientId: string): Resolved | null {
    const state = this.states.get(type)!;
    if (state.quotas.size === 0) return null;
    const key = `${principal}\u0000${clientId}`;
    let resolved = state.resolved.get(key);
    if (resolved === undefined) {
      if (state.resolved.size >= CACHED_MAX) state.resolved.clear();
      resolved = this.lookUp(state, userOf(principal), clientId);
      state.resolved.set(key, resolved);
    }
    return resolved;
  }

  /** The first entity in Kafka's order, and the sensor of what it shares. */
  private lookUp(state: QuotaState, user: string, clientId: string): Resolved | null {
    const u = sanitize(user);
    const c = sanitize(clientId);
    const candidates: [string, string, string][] = [
      [`users/${u}/clients/${c}`, u, c],
      [`users/${u}/clients/${DEFAULT}`, u, c],
      [`users/${u}`, u, ""],
      [`users/${DEFAULT}/clients/${c}`, u, c],
      [`users/${DEFAULT}/clients/${DEFAULT}`, u, c],
      [`users/${DEFAULT}`, u, ""],
      [`clients/${c}`, "", c],
      [`clients/${DEFAULT}`, "", c],
    ];
    for (const [path, tagUser, tagClient] of candidates) {
      const limit = state.quotas.get(path);
      if (limit === undefined) continue;
      return { sensor: this.sensor(state, `${tagUser}\u0000${tagClient}`), limit };
    }
    return null;
  }

  private sensor(state: QuotaState, key: string): QuotaMeter {
    let sensor = state.sensors.get(key);
    if (sensor === undefined) {
      if (state.sensors.size >= CACHED_MAX) this.expireSensors(state);
      sensor = state.newSensor();
      state.sensors.set(key, sensor);
    }
    return sensor;
  }

  /**
   * Drops idle sensors (a rate idle for a whole window is 0; a token bucket that has refilled is
   * as a new one); the cache may hold them.
   */
  private expireSensors(state: QuotaState): void {
    const nowMs = Date.now();
    for (const [key, sensor] of state.sensors) {
      if (sensor.isIdle(nowMs)) state.sensors.delete(key);
    }
    // Every sensor busy: start over rather than grow without bound.
    if (state.sensors.size >= CACHED_MAX) state.sensors.clear();
    state.resolved.clear();
  }
}

/** Kafka's KafkaPrincipal.getName: `User:alice` is user `alice`. */
function userOf(principal: string): string {
  const colon = principal.indexOf(":");
  return colon < 0 ? principal : principal.slice(colon + 1);
}
