import { Reader } from "../protocol/reader.ts";

/** The protocol type of Kafka consumers; only its metadata is decoded by the coordinator. */
export const CONSUMER_PROTOCOL_TYPE = "consumer";

/**
 * The topics a consumer subscribes to, read from its JoinGroup metadata: a
 * ConsumerProtocolSubscription (version int16, then `Topics: [string]`; later versions only
 * append fields, and the message is never flexible). The coordinator needs nothing else from
 * it, for OffsetDelete's GROUP_SUBSCRIBED_TO_TOPIC check.
 *
 * Returns null when the bytes are not a subscription (a client with a custom protocol type
 * field or a broken one), so the caller can treat the member as possibly subscribed to anything.
 */
export function subscribedTopics(metadata: Uint8Array): string[] | null {
  try {
    const r = new Reader(metadata);
    const version = r.int16();
    if (version < 0) return null;
    return r.array(false, version, (reader) => reader.string());
  } catch {
    return null;
  }
}
