import { join } from "node:path";
import { ErrorCode, KafkaError } from "../protocol/errors.ts";
import { readFileIfExists, writeFileAtomically } from "../storage/durable-file.ts";

/**
 * Group configs of share groups (KIP-932), set with IncrementalAlterConfigs on a GROUP
 * resource (`kafka-configs.sh --entity-type groups`). Quill knows one key,
 * `share.auto.offset.reset` (earliest or latest, default latest): where a partition new to the
 * group starts. Embedded mode keeps them in `share-group-configs.json` in the first log dir
 * (written synchronously: an admin operation, rare); a cluster keeps them in memory on the
 * broker that was asked (not yet shared between brokers).
 */

export const SHARE_AUTO_OFFSET_RESET = "share.auto.offset.reset";
const FILE_NAME = "share-group-configs.json";
/** Groups with configs one broker keeps; more is refused (every map needs a bound). */
const GROUPS_MAX = 100_000;

export interface ConfigChange {
  readonly name: string;
  /** 0 SET, 1 DELETE, 2 APPEND, 3 SUBTRACT (IncrementalAlterConfigs). */
  readonly operation: number;
  readonly value: string | null;
}

export class ShareGroupConfigs {
  private readonly resets = new Map<string, "earliest" | "latest">();
  private readonly filePath: string | null;

  constructor(logDir: string | null) {
    this.filePath = logDir === null ? null : join(logDir, FILE_NAME);
    const bytes = this.filePath === null ? null : readFileIfExists(this.filePath);
    if (bytes === null) return;
    const stored = JSON.parse(new TextDecoder().decode(bytes)) as Record<string, string>;
    for (const [group, value] of Object.entries(stored)) {
      if (value === "earliest" || value === "latest") this.resets.set(group, value);
    }
  }

  autoOffsetReset(groupId: string): "earliest" | "latest" {
    return this.resets.get(groupId) ?? "latest";
  }

  /** The group's configs that are set, for DescribeConfigs. */
  describe(groupId: string): { name: string; value: string }[] {
    const reset = this.resets.get(groupId);
    return reset === undefined ? [] : [{ name: SHARE_AUTO_OFFSET_RESET, value: reset }];
  }

  /** Applies IncrementalAlterConfigs changes; INVALID_CONFIG or INVALID_REQUEST when bad. */
  alter(groupId: string, changes: readonly ConfigChange[], validateOnly: boolean): void {
    let next = this.resets.get(groupId) ?? null;
    for (const c of changes) {
      if (c.name !== SHARE_AUTO_OFFSET_RESET) {
        throw new KafkaError(ErrorCode.INVALID_CONFIG, `Unknown group config name: ${c.name}`);
      }
      if (c.operation === 1) next = null;
      else if (c.operation !== 0) {
        throw new KafkaError(ErrorCode.INVALID_REQUEST, `${c.name} is not a list.`);
      } else if (c.value === "earliest" || c.value === "latest") next = c.value;
      else {
        throw new KafkaError(
          ErrorCode.INVALID_CONFIG,
          `Invalid value ${c.value} for configuration ${c.name}: earliest or latest.`,
        );
      }
    }
    if (validateOnly) return;
    if (next !== null && !this.resets.has(groupId) && this.resets.size >= GROUPS_MAX) {
      throw new KafkaError(ErrorCode.INVALID_REQUEST, "Too many groups with configs.");
    }
    if (next === null) this.resets.delete(groupId);
    else this.resets.set(groupId, next);
    if (this.filePath !== null) {
      const body = JSON.stringify(Object.fromEntries(this.resets));
      writeFileAtomically(this.filePath, new TextEncoder().encode(body));
    }
  }
}
