import { BROKER_CONFIG_KEYS } from "../config/broker-config.ts";
import { type ConfigKey, formatValue } from "../config/config-key.ts";
import { TOPIC_CONFIG_KEYS } from "../config/topic-config.ts";

const cell = (text: string) => text.replaceAll("|", "\\|");

/**
 * `quill config-keys`: every key with its default and meaning, as Markdown tables, generated
 * from the schema so the README's table cannot drift from the code (a test compares them).
 */
export function configKeysMarkdown(): string {
  const brokerKeys: [string, ConfigKey<unknown>][] = Object.entries(BROKER_CONFIG_KEYS);
  const broker = brokerKeys.map(([name, def]) =>
    `| \`${name}\` | ${cell(formatValue(def, def.default) ?? "(unset)")} | ${cell(def.doc)} |`);
  const topic = Object.entries(TOPIC_CONFIG_KEYS).map(([name, def]) =>
    `| \`${name}\` | \`${def.synonyms.join("`, `")}\` | ${cell(def.doc)} |`);
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
  ].join("\n");
}
