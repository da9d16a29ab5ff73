import { BROKER_CONFIG_KEYS } from "../config/broker-config.ts";
import { type ConfigKey, formatValue } from "../config/config-key.ts";
import { TOPIC_CONFIG_KEYS } from "../config/topic-config.ts";
import type { TopicKey } from "../config/topic-config-keys.ts";

const cell = (text: string) => text.replaceAll("|", "\\|");

/**
 * `quill config-keys`: every key with its default and meaning, as Markdown tables, generated
 * from the schema so the README's table cannot drift from the code (a test compares them).
 */
export function configKeysMarkdown(): string {
  const brokerKeys: [string, ConfigKey<unknown>][] = Object.entries(BROKER_CONFIG_KEYS);
  const broker = brokerKeys.map(
    ([name, def]) =>
      `| \`${name}\` | ${cell(formatValue(def, def.default) ?? "(unset)")} | ${cell(def.doc)} |`,
  );
  const topicKeys: [string, TopicKey<unknown>][] = Object.entries(TOPIC_CONFIG_KEYS);
  const topic = topicKeys.map(([name, def]) => {
    const from = def.synonyms.length === 0 ? "(none)" : `\`${def.synonyms.join("`, `")}\``;
    return `| \`${name}\` | ${from} | ${cell(def.doc)} |`;
  });
  const notApplied = topicKeys.flatMap(([name, { notApplied: n }]) =>
    n === undefined ? [] : [`- \`${name}\` (except at \`${n.inert === "" ? '""' : n.inert}\`)`],
  );
  return [
    "Broker keys (`--config` file, `QUILL_<KEY>` environment variables, `--set key=value`):",
    "",
    "| key | default | meaning |",
    "|---|---|---|",
    ...broker,
    "",
    "Topic keys (CreateTopics, AlterConfigs, IncrementalAlterConfigs, DescribeConfigs); " +
      "the default comes from the broker key:",
    "",
    "| key | broker default from | meaning |",
    "|---|---|---|",
    ...topic,
    "",
    "Topic keys accepted and stored but not applied: a topic that sets one (to a value other " +
      "than the one shown, whose behaviour Quill has) logs one WARN line `accepted but not " +
      "applied` per topic and value:",
    "",
    ...notApplied,
    "",
  ].join("\n");
}
