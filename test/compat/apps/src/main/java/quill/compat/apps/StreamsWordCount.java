package quill.compat.apps;

import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsConfig;

/**
 * The Kafka Streams word count (WordCountApp) at-least-once. After the first batch is counted
 * and the broker's cleaner has compacted the changelog (offsets missing from it), the
 * application is stopped, its local state directory deleted and started again: it must rebuild
 * the store from the compacted changelog and go on counting a second batch, with exact counts.
 */
final class StreamsWordCount {
  private static final int LINES_PER_BATCH = 400;

  private static final long CLEANED_TIMEOUT_MS = 90_000;

  private final WordCountApp app =
      new WordCountApp("compat-wordcount", StreamsConfig.AT_LEAST_ONCE).compactEarly();
  private KafkaStreams streams;

  void run(Steps steps) throws Exception {
    try (Admin admin = Env.admin()) {
      steps.run("create-topics", () -> {
        app.createTopics(admin);
        return null;
      });
      steps.run("count", () -> {
        app.produceLines(0, LINES_PER_BATCH);
        streams = app.start();
        return app.awaitExactCounts(streams);
      });
      steps.run("changelog-compacted", () -> {
        String policy = Env.cleanupPolicy(admin, app.changelog);
        Steps.check(policy.equals("compact"), app.changelog + " has cleanup.policy " + policy);
        return app.changelog + " cleanup.policy=compact";
      });
      steps.run("repartition-purged", () -> awaitRepartitionPurged(admin));
      steps.run("changelog-cleaned", this::awaitChangelogCleaned);
      steps.run("restore-after-state-wipe", () -> {
        streams.close(Duration.ofSeconds(30));
        Env.deleteTree(app.stateDir.toFile());
        app.produceLines(LINES_PER_BATCH, 2 * LINES_PER_BATCH);
        streams = app.start();
        return app.awaitExactCounts(streams);
      });
    } finally {
      if (streams != null) streams.close(Duration.ofSeconds(30));
    }
  }

  /**
   * Reads the changelog from its start to its end until some offsets are missing from it: the
   * cleaner removed superseded counts (an at-least-once changelog has no transaction markers, so
   * nothing else leaves gaps).
   */
  private String awaitChangelogCleaned() throws Exception {
    return Compacted.awaitGaps(app.changelog, WordCountApp.PARTITIONS, CLEANED_TIMEOUT_MS);
  }

  private String awaitRepartitionPurged(Admin admin) throws Exception {
    Map<TopicPartition, OffsetSpec> earliest = new HashMap<>();
    for (var tp : Env.partitionsOf(app.repartition, WordCountApp.PARTITIONS)) {
      earliest.put(tp, OffsetSpec.earliest());
    }
    long[] trimmed = {0};
    Steps.await(30_000, "DeleteRecords on " + app.repartition, () -> {
      var offsets = admin.listOffsets(earliest).all().get(30, TimeUnit.SECONDS);
      trimmed[0] = offsets.values().stream().mapToLong(o -> o.offset()).sum();
      return trimmed[0] > 0 ? null : "every partition still starts at 0";
    });
    return app.repartition + " log start offsets sum to " + trimmed[0];
  }
}
