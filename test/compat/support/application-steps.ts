/**
 * The steps of each Kafka application in test/compat/apps, in order; scripts/compat.ts builds
 * the applications' table from them, and a test keeps them equal to the Java programs' steps.
 */
export const APPLICATION_STEPS = {
  "kafka-streams": [
    "create-topics",
    "count",
    "changelog-compacted",
    "repartition-purged",
    "changelog-cleaned",
    "restore-after-state-wipe",
  ],
  "kafka-streams-eos": [
    "create-topics",
    "count",
    "sigkill-mid-transaction",
    "restore-exact-after-kill",
    "broker-kill-mid-transaction",
    "exact-after-broker-kill",
    "output-read-committed",
  ],
  "kafka-connect": [
    "worker-start",
    "internal-topics-compacted",
    "file-source-to-sink",
    "offsets-topic-cleaned",
    "restart-resumes-exactly",
  ],
  "kafka-delete-records": ["produce", "delete-records", "above-high-watermark"],
} as const satisfies Record<string, readonly string[]>;

export type Application = keyof typeof APPLICATION_STEPS;
