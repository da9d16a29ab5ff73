/**
 * Value types of Kafka keys with a validator of their own (not just a range or an enum): the
 * per-codec compression levels, message.format.version and the throttled-replica lists.
 * Each refuses what Kafka 3.9 refuses, with Kafka's reason.
 */
import { z } from "zod";
import { int, type ValueType, valueType } from "./config-key.ts";

const INT = int();

/** zlib's levels 1-9, or -1 for zlib's default (Kafka's GzipCompression.LevelValidator). */
export const GZIP_LEVEL: ValueType<number> = valueType({
  type: INT.type,
  format: INT.format,
  expected: "-1 or an integer between 1 and 9",
  schema: () => INT.schema.refine((n) => n === -1 || (n >= 1 && n <= 9)),
  refusal(text) {
    const asInt = INT.refusal(text);
    if (asInt.reason.startsWith("Not a number")) return asInt;
    const reason = "Value must be between 1 and 9 or equal to -1";
    return { value: String(Number(text.trim())), reason };
  },
});

/** LZ4 levels as Kafka's Lz4Compression (1-17; 9 by default). */
export const LZ4_LEVEL = int({ min: 1, max: 17 });

/** Zstandard levels as Kafka's ZstdCompression (negative levels are zstd's fast modes). */
export const ZSTD_LEVEL = int({ min: -131072, max: 22 });

/**
 * Kafka's MetadataVersion releases, each with its last IV (0 for releases with none). A release
 * alone ("2.8", "0.10.2") means its last IV; "2.8-IV0" names one; "2.8.1" counts as "2.8".
 */
const RELEASE_LAST_IV: Readonly<Record<string, number | null>> = {
  "0.8.0": null,
  "0.8.1": null,
  "0.8.2": null,
  "0.9.0": null,
  "0.10.0": 1,
  "0.10.1": 2,
  "0.10.2": 0,
  "0.11.0": 2,
  "1.0": 0,
  "1.1": 0,
  "2.0": 1,
  "2.1": 2,
  "2.2": 1,
  "2.3": 1,
  "2.4": 1,
  "2.5": 0,
  "2.6": 0,
  "2.7": 2,
  "2.8": 1,
  "3.0": 1,
  "3.1": 0,
  "3.2": 0,
  "3.3": 3,
  "3.4": 0,
  "3.5": 2,
  "3.6": 2,
  "3.7": 4,
  "3.8": 0,
  "3.9": 0,
};

function isMetadataVersion(text: string): boolean {
  const segments = text.split(".");
  const count = text.startsWith("0.") ? 3 : 2;
  const key = segments.length <= count ? text : segments.slice(0, count).join(".");
  const [release = "", iv, ...rest] = key.split("-IV");
  const lastIv = RELEASE_LAST_IV[release];
  if (lastIv === undefined || rest.length > 0) return false;
  if (iv === undefined) return true;
  return lastIv !== null && /^\d$/.test(iv) && Number(iv) <= lastIv;
}

/** message.format.version: any version Kafka 3.9 knows (it ignores the value since 3.0). */
export const messageFormatVersion = (): ValueType<string> =>
  valueType({
    type: "STRING",
    expected: "a Kafka version such as 3.0-IV1 or 2.8",
    schema: () => z.string().trim().refine(isMetadataVersion),
    format: (value) => value,
    refusal: (text) => ({
      value: text.trim(),
      reason: `Version ${text.trim()} is not a valid version`,
    }),
  });

const REPLICA = /^(\d+:\d+)?$/;
const splitItems = (text: string) => (text.trim() === "" ? [] : text.trim().split(/\s*,\s*/));

/**
 * leader/follower.replication.throttled.replicas: `*`, or `partition:broker` pairs separated by
 * commas (Kafka's ThrottledReplicaListValidator, which also lets empty items through).
 */
export function throttledReplicas(name: string): ValueType<string[]> {
  const valid = (items: string[]) => items.join("") === "*" || items.every((i) => REPLICA.test(i));
  return valueType({
    type: "LIST",
    expected: "* or a list of partitionId:brokerId",
    schema: () => z.string().transform(splitItems).refine(valid),
    format: (value) => value.join(","),
    refusal: (text) => ({
      value: `[${splitItems(text).join(", ")}]`,
      reason:
        `${name} must be the literal '*' or a list of replicas in the following format: ` +
        "[partitionId]:[brokerId],[partitionId]:[brokerId],...",
    }),
  });
}
