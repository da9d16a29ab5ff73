import { TOPICS_MAX } from "../metadata/metadata-store.ts";

/** Request counters are indexed by API key; Kafka's keys stay well below this. */
const API_KEYS_MAX = 128;

/** One topic's traffic: Kafka's BrokerTopicStats BytesInPerSec and BytesOutPerSec. */
export interface TopicTraffic {
  bytesIn: number;
  bytesOut: number;
}

/**
 * The broker's counters for the admin listener's /metrics: requests per API (Kafka's
 * RequestMetrics RequestsPerSec) and bytes in and out per topic (BrokerTopicStats). Counting
 * costs one array or map update per request or per partition, never per record. Bytes in are
 * the record batches of produce requests a leader accepted; bytes out are the batches fetches
 * of consumers returned (followers' fetches are replication, which Kafka counts apart).
 */
export class BrokerMetrics {
  private readonly requests = new Float64Array(API_KEYS_MAX);
  private readonly topics = new Map<string, TopicTraffic>();

  recordRequest(apiKey: number): void {
    if (apiKey >= 0 && apiKey < API_KEYS_MAX) this.requests[apiKey]! += 1;
  }

  recordBytesIn(topic: string, bytes: number): void {
    const traffic = this.traffic(topic);
    if (traffic !== null) traffic.bytesIn += bytes;
  }

  recordBytesOut(topic: string, bytes: number): void {
    const traffic = this.traffic(topic);
    if (traffic !== null) traffic.bytesOut += bytes;
  }

  /** Requests counted per API key, for the keys seen at least once. */
  requestCounts(): [apiKey: number, count: number][] {
    const counts: [number, number][] = [];
    this.requests.forEach((count, apiKey) => {
      if (count > 0) counts.push([apiKey, count]);
    });
    return counts;
  }

  /**
   * Each topic's traffic; topics for which `exists` is false (deleted since) are dropped, as
   * Kafka removes a deleted topic's metrics.
   */
  topicTraffic(exists: (topic: string) => boolean): [topic: string, traffic: TopicTraffic][] {
    for (const topic of this.topics.keys()) if (!exists(topic)) this.topics.delete(topic);
    return [...this.topics];
  }

  private traffic(topic: string): TopicTraffic | null {
    let traffic = this.topics.get(topic);
    if (traffic !== undefined) return traffic;
    // More topics than the broker can hold means a bug elsewhere; never grow without bound.
    if (this.topics.size >= TOPICS_MAX) return null;
    traffic = { bytesIn: 0, bytesOut: 0 };
    this.topics.set(topic, traffic);
    return traffic;
  }
}
