import { TOPICS_MAX } from "../metadata/metadata-store.ts";
import { Histogram, LATENCY_SECONDS_BOUNDS } from "../util/histogram.ts";

/** Request counters are indexed by API key; Kafka's keys stay well below this. */
const API_KEYS_MAX = 128;
/** Versions counted apart per API; Kafka's newest are below 20, a higher one counts as this. */
const API_VERSIONS_MAX = 32;
/** Distinct (API, error code) pairs counted; Kafka's codes run to about 130. */
const ERROR_PAIRS_MAX = 4096;

/** One topic's traffic: Kafka's BrokerTopicStats BytesIn, BytesOut and MessagesIn. */
export interface TopicTraffic {
  bytesIn: number;
  bytesOut: number;
  recordsIn: number;
}

/**
 * Where one API's request time went, as far as Quill can tell it apart (Kafka's RequestMetrics
 * LocalTimeMs, RemoteTimeMs, TotalTimeMs): `local` is the handler's synchronous part (decoding
 * aside, up to its first await), `remote` the wait after it until the answer is ready (acks=all
 * waiting for followers, a long-poll fetch parked, ZooKeeper or the controller for admin APIs),
 * `total` both; `send` (ResponseSendTimeMs) from the response being queued on the socket to its
 * last byte taken by the kernel, the waits for a slow reader's `drain` included.
 */
export interface RequestTimes {
  readonly local: Histogram;
  readonly remote: Histogram;
  readonly total: Histogram;
  readonly send: Histogram;
}

/**
 * The broker's counters for the admin listener's /metrics: requests, errors and request times
 * per API (Kafka's RequestMetrics RequestsPerSec, ErrorsPerSec and the times above) and bytes
 * and records per topic (BrokerTopicStats). Counting costs a few array or map updates per
 * request or per partition, never per record. Bytes and records in are the batches of produce
 * requests a leader accepted; bytes out are the batches fetches of consumers returned
 * (followers' fetches are replication, which Kafka counts apart).
 */
export class BrokerMetrics {
  /** Count per `apiKey * API_VERSIONS_MAX + version` (Kafka's RequestsPerSec version tag). */
  private readonly requests = new Float64Array(API_KEYS_MAX * API_VERSIONS_MAX);
  private readonly times: (RequestTimes | undefined)[] = new Array(API_KEYS_MAX);
  /** Count per `apiKey * 65536 + (errorCode & 0xffff)`. */
  private readonly errors = new Map<number, number>();
  private readonly topics = new Map<string, TopicTraffic>();

  recordRequest(apiKey: number, apiVersion: number): void {
    if (apiKey < 0 || apiKey >= API_KEYS_MAX || apiVersion < 0) return;
    this.requests[apiKey * API_VERSIONS_MAX + Math.min(apiVersion, API_VERSIONS_MAX - 1)]! += 1;
  }

  /** Times of one answered request, in seconds. */
  recordRequestTime(apiKey: number, localSeconds: number, remoteSeconds: number): void {
    const times = this.timesOf(apiKey);
    if (times === null) return;
    times.local.observe(localSeconds);
    times.remote.observe(remoteSeconds);
    times.total.observe(localSeconds + remoteSeconds);
  }

  /** The send time of one response, in seconds. */
  recordSendTime(apiKey: number, sendSeconds: number): void {
    this.timesOf(apiKey)?.send.observe(sendSeconds);
  }

  private timesOf(apiKey: number): RequestTimes | null {
    if (apiKey < 0 || apiKey >= API_KEYS_MAX) return null;
    let times = this.times[apiKey];
    if (times === undefined) {
      times = {
        local: new Histogram(LATENCY_SECONDS_BOUNDS),
        remote: new Histogram(LATENCY_SECONDS_BOUNDS),
        total: new Histogram(LATENCY_SECONDS_BOUNDS),
        send: new Histogram(LATENCY_SECONDS_BOUNDS),
      };
      this.times[apiKey] = times;
    }
    return times;
  }

  /** One error code in a response (top level or per partition), as Kafka's errorCounts. */
  recordError(apiKey: number, errorCode: number): void {
    const key = apiKey * 65536 + (errorCode & 0xffff);
    const count = this.errors.get(key);
    if (count !== undefined) this.errors.set(key, count + 1);
    else if (this.errors.size < ERROR_PAIRS_MAX) this.errors.set(key, 1);
  }

  recordBytesIn(topic: string, bytes: number, records: number): void {
    const traffic = this.traffic(topic);
    if (traffic === null) return;
    traffic.bytesIn += bytes;
    traffic.recordsIn += records;
  }

  recordBytesOut(topic: string, bytes: number): void {
    const traffic = this.traffic(topic);
    if (traffic !== null) traffic.bytesOut += bytes;
  }

  /** Requests counted per API key, for the keys seen at least once. */
  requestCounts(): [apiKey: number, count: number][] {
    const byKey = new Map<number, number>();
    for (const [apiKey, , count] of this.requestVersionCounts()) {
      byKey.set(apiKey, (byKey.get(apiKey) ?? 0) + count);
    }
    return [...byKey];
  }

  /** Requests per API key and version, for the pairs received at least once. */
  requestVersionCounts(): [apiKey: number, apiVersion: number, count: number][] {
    const counts: [number, number, number][] = [];
    this.requests.forEach((count, i) => {
      if (count > 0) counts.push([Math.floor(i / API_VERSIONS_MAX), i % API_VERSIONS_MAX, count]);
    });
    return counts;
  }

  /** Request times per API key, for the keys answered at least once. */
  requestTimes(): [apiKey: number, times: RequestTimes][] {
    const all: [number, RequestTimes][] = [];
    this.times.forEach((times, apiKey) => {
      if (times !== undefined) all.push([apiKey, times]);
    });
    return all;
  }

  /** Error counts per API key and error code, ordered by both. */
  errorCounts(): [apiKey: number, errorCode: number, count: number][] {
    return [...this.errors]
      .sort(([a], [b]) => a - b)
      .map(([key, count]) => {
        const code = key % 65536;
        return [Math.floor(key / 65536), code >= 32768 ? code - 65536 : code, count];
      });
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
    traffic = { bytesIn: 0, bytesOut: 0, recordsIn: 0 };
    this.topics.set(topic, traffic);
    return traffic;
  }
}
