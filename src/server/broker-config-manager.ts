/**
 * AlterConfigs and IncrementalAlterConfigs on BROKER resources (Kafka's
 * ZkAdminManager.alterBrokerConfigs): a resource named by this broker's id changes
 * `/config/brokers/<id>`, the empty name changes the cluster-wide `/config/brokers/<default>`.
 * The whole layer is validated as it would be stored, persisted (which tells the other
 * brokers), then applied here at once; other brokers apply it when their watch fires.
 */
import { BROKER_CONFIG_KEYS, isBrokerConfigKey } from "../config/broker-config.ts";
import { ConfigError, InvalidKeyStoreError } from "../config/config-error.ts";
import { type ConfigKey, formatValue } from "../config/config-key.ts";
import type { DynamicBrokerConfig, DynamicLevel } from "../config/dynamic-broker-config.ts";
import { isSensitiveKey } from "../config/dynamic-broker-keys.ts";
import {
  type BrokerConfigStore,
  DEFAULT_CONFIG_ENTITY,
  type EntityConfigs,
} from "../metadata/broker-config-store.ts";
import { ErrorCode, KafkaError } from "../protocol/errors.ts";
import type { Logger } from "../util/logger.ts";
import {
  type ConfigChange,
  type ConfigEntry,
  ConfigOperation,
  checkConfigShape,
} from "./admin-manager.ts";

export class BrokerConfigManager {
  constructor(
    private readonly dynamic: DynamicBrokerConfig,
    private readonly store: BrokerConfigStore,
    private readonly log: Logger,
  ) {}

  private get brokerId(): number {
    return this.dynamic.staticConfig["broker.id"];
  }

  /** Follows this broker's two entities in the store; returns the function that stops it. */
  follow(): () => void {
    const entities = [String(this.brokerId), DEFAULT_CONFIG_ENTITY];
    return this.store.follow(entities, (entity, configs) => this.apply(entity, configs));
  }

  /** AlterConfigs: the given configs replace the whole layer. */
  async setBrokerConfigs(
    resourceName: string,
    configs: readonly ConfigEntry[],
    validateOnly: boolean,
  ): Promise<void> {
    checkConfigShape(configs.map((c) => ({ ...c, operation: ConfigOperation.SET })));
    const texts = new Map(configs.map((c) => [c.name, c.value!]));
    await this.replaceLayer(resourceName, texts, validateOnly);
  }

  /** IncrementalAlterConfigs: the operations apply to the layer as stored now. */
  async alterBrokerConfigs(
    resourceName: string,
    changes: readonly ConfigChange[],
    validateOnly: boolean,
  ): Promise<void> {
    checkConfigShape(changes);
    const entity = entityOf(resourceName);
    const texts = new Map(await this.store.read(entity));
    for (const change of changes) this.applyChange(texts, change);
    await this.replaceLayer(resourceName, texts, validateOnly);
  }

  private async replaceLayer(
    resourceName: string,
    texts: Map<string, string>,
    validateOnly: boolean,
  ): Promise<void> {
    const entity = entityOf(resourceName);
    const level: DynamicLevel = entity === DEFAULT_CONFIG_ENTITY ? "default" : "broker";
    try {
      this.dynamic.validate(level, texts);
    } catch (e) {
      if (!(e instanceof ConfigError)) throw e;
      const resource = `ConfigResource(type=BROKER, name='${resourceName}')`;
      // Kafka 3.9 answers INVALID_CONFIG for a key store it cannot use; Quill's other
      // refusals keep the INVALID_REQUEST its clients have always seen (broker-configs.md).
      throw new KafkaError(
        e instanceof InvalidKeyStoreError ? ErrorCode.INVALID_CONFIG : ErrorCode.INVALID_REQUEST,
        `Invalid config value for resource ${resource}: ${e.message}`,
      );
    }
    if (validateOnly) return;
    const what = level === "default" ? "brokers" : `broker ${entity}`;
    this.log.info(`updating ${what} with new configuration: ${loggable(texts)}`);
    await this.store.write(entity, texts);
    this.apply(entity, texts);
  }

  private apply(entity: string, configs: EntityConfigs): void {
    const level: DynamicLevel = entity === DEFAULT_CONFIG_ENTITY ? "default" : "broker";
    try {
      this.dynamic.update(level, configs);
    } catch (error) {
      this.log.error(`dynamic configs of ${entity} not applied: ${String(error)}`);
    }
  }

  private applyChange(texts: Map<string, string>, { name, operation, value }: ConfigChange) {
    if (operation === ConfigOperation.SET) {
      texts.set(name, value!);
    } else if (operation === ConfigOperation.DELETE) {
      texts.delete(name);
    } else if (operation === ConfigOperation.APPEND || operation === ConfigOperation.SUBTRACT) {
      texts.set(name, this.appliedToList(texts, name, operation, value!));
    } else {
      throw new KafkaError(ErrorCode.INVALID_REQUEST, `Unknown config operation ${operation}`);
    }
  }

  /** APPEND/SUBTRACT on a list key, from the stored value or else the key's value now. */
  private appliedToList(texts: Map<string, string>, name: string, op: number, value: string) {
    const verb = op === ConfigOperation.APPEND ? "append" : "subtract";
    if (!isBrokerConfigKey(name) || BROKER_CONFIG_KEYS[name].valueType.type !== "LIST") {
      throw new KafkaError(
        ErrorCode.INVALID_REQUEST,
        `Config value ${verb} is not allowed for config key: ${name}`,
      );
    }
    const def = BROKER_CONFIG_KEYS[name] as ConfigKey<unknown>;
    const now = texts.get(name) ?? formatValue(def, this.dynamic.current[name as never]) ?? "";
    const old = splitItems(now);
    const items = splitItems(value);
    const next =
      op === ConfigOperation.APPEND
        ? [...old, ...items.filter((i) => !old.includes(i))]
        : old.filter((i) => !items.includes(i));
    return next.join(",");
  }
}

/** The znode entity of a resource name; only this broker's id or the empty name reach here. */
const entityOf = (resourceName: string) =>
  resourceName === "" ? DEFAULT_CONFIG_ENTITY : resourceName;

const splitItems = (text: string) =>
  text
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s !== "");

/** Passwords never reach the log. */
function loggable(texts: ReadonlyMap<string, string>): string {
  return [...texts].map(([k, v]) => `${k}=${isSensitiveKey(k) ? "[hidden]" : v}`).join(",");
}
