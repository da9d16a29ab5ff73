package quill.compat.apps;

import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
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
    Properties config = new Properties();
    config.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, Env.BOOTSTRAP);
    config.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
    config.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG,
        ByteArrayDeserializer.class.getName());
    List<TopicPartition> partitions = Env.partitionsOf(app.changelog, WordCountApp.PARTITIONS);
    long[] found = {0, 0};
    try (var consumer = new KafkaConsumer<byte[], byte[]>(config)) {
      consumer.assign(partitions);
      Steps.await(CLEANED_TIMEOUT_MS, "the cleaner to compact " + app.changelog, () -> {
        found[0] = 0;
        found[1] = 0;
        consumer.seekToBeginning(partitions);
        Map<TopicPartition, Long> ends = consumer.endOffsets(partitions);
        // The offset before each partition's start: records removed there are a gap too.
        Map<TopicPartition, Long> previous = new HashMap<>();
        consumer.beginningOffsets(partitions).forEach((tp, start) -> previous.put(tp, start - 1));
        for (int polls = 0; polls < 100 && partitions.stream()
            .anyMatch(tp -> consumer.position(tp) < ends.get(tp)); polls++) {
          for (var record : consumer.poll(Duration.ofMillis(200))) {
            var tp = new TopicPartition(record.topic(), record.partition());
            if (record.offset() > previous.put(tp, record.offset()) + 1) found[1]++;
            found[0]++;
          }
        }
        return found[1] > 0 ? null : found[0] + " records, none removed yet";
      });
    }
    return app.changelog + ": " + found[0] + " records left, " + found[1] + " gaps";
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
