import { notAppliedTopicConfigs } from "../config/topic-config.ts";
import type { Logger } from "../util/logger.ts";
import type { TopicMetadata } from "./metadata-cache.ts";

/**
 * Tells the operator, once per topic and setting, when a topic sets a config key Quill accepts
 * and stores (so provisioning tools work) but does not act on, so nobody relies on it unawares.
 */
export class NotAppliedConfigWarnings {
  /** `topic\0key=value` already logged; pruned to the topics that exist, so it stays bounded. */
  private warned = new Set<string>();

  constructor(private readonly log: Logger) {}

  check(topics: readonly TopicMetadata[]): void {
    const next = new Set<string>();
    for (const topic of topics) {
      for (const [name, value] of notAppliedTopicConfigs(topic.configs)) {
        const id = `${topic.name}\0${name}=${value}`;
        next.add(id);
        if (this.warned.has(id)) continue;
        this.log.warn(
          `topic ${topic.name}: config ${name}=${value} is accepted but not applied ` +
            "(see the README's topic keys)",
          { topic: topic.name, config: name },
        );
      }
    }
    this.warned = next;
  }
}
