import { apiSpec } from "../protocol/generated/index.ts";
import type { BrokerMetrics } from "../server/broker-metrics.ts";

/**
 * The broker's counters in Prometheus' text exposition format (version 0.0.4): `quill_` names,
 * `_total` for counters, `_bytes` as the unit, one label per dimension.
 */
export const PROMETHEUS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";

export function metricsText(metrics: BrokerMetrics, topicExists: (topic: string) => boolean) {
  const lines: string[] = [];
  const family = (name: string, help: string) => {
    lines.push(`# HELP ${name} ${help}`, `# TYPE ${name} counter`);
  };
  family("quill_requests_total", "Requests received, per Kafka API.");
  for (const [apiKey, count] of metrics.requestCounts()) {
    const api = apiSpec(apiKey)?.name ?? String(apiKey);
    lines.push(`quill_requests_total{api="${labelValue(api)}"} ${count}`);
  }
  const traffic = metrics.topicTraffic(topicExists);
  family("quill_topic_bytes_in_total", "Record batch bytes produced to the topic (as leader).");
  for (const [topic, t] of traffic) {
    lines.push(`quill_topic_bytes_in_total{topic="${labelValue(topic)}"} ${t.bytesIn}`);
  }
  family("quill_topic_bytes_out_total", "Record batch bytes fetched from the topic by consumers.");
  for (const [topic, t] of traffic) {
    lines.push(`quill_topic_bytes_out_total{topic="${labelValue(topic)}"} ${t.bytesOut}`);
  }
  return `${lines.join("\n")}\n`;
}

/** Label values escape backslash, double quote and newline, as the format requires. */
function labelValue(text: string): string {
  return text.replaceAll("\\", "\\\\").replaceAll('"', '\\"').replaceAll("\n", "\\n");
}
