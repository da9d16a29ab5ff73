package quill.compat.apps;

import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StoreQueryParameters;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.QueryableStoreTypes;
import org.apache.kafka.streams.state.ReadOnlyKeyValueStore;

/**
 * A Kafka Streams word count (at-least-once): lines are split into words, re-keyed by word
 * (through a repartition topic, which Streams trims with DeleteRecords) and counted into a
 * persistent store backed by a compacted changelog topic. After the first batch is counted the
 * application is stopped, its local state directory deleted and started again: it must rebuild
 * the store from the changelog and go on counting a second batch, with exact counts.
 */
final class StreamsWordCount {
  private static final String APP_ID = "compat-wordcount";
  private static final String INPUT = "compat-streams-lines";
  private static final String OUTPUT = "compat-streams-counts";
  private static final String STORE = "word-counts";
  private static final String CHANGELOG = APP_ID + "-" + STORE + "-changelog";
  private static final String REPARTITION = APP_ID + "-" + STORE + "-repartition";
  private static final int PARTITIONS = 3;
  private static final int LINES_PER_BATCH = 400;
  private static final List<String> WORDS = List.of("alpha", "bravo", "charlie", "delta",
      "echo", "foxtrot", "golf", "hotel", "india", "juliett", "kilo", "lima", "mike",
      "november", "oscar", "papa", "quebec", "romeo", "sierra", "tango");
  private static final long COUNT_TIMEOUT_MS = 90_000;

  private final Map<String, Long> expected = new TreeMap<>();
  private final Path stateDir = Env.WORK_DIR.resolve("streams-state");
  private KafkaStreams streams;

  void run(Steps steps) throws Exception {
    try (Admin admin = Env.admin()) {
      steps.run("create-topics", () -> {
        Env.createTopic(admin, INPUT, PARTITIONS);
        Env.createTopic(admin, OUTPUT, PARTITIONS);
        return null;
      });
      steps.run("count", () -> {
        produceBatch(0);
        streams = start();
        return awaitExactCounts();
      });
      steps.run("changelog-compacted", () -> {
        String policy = Env.cleanupPolicy(admin, CHANGELOG);
        Steps.check(policy.equals("compact"), CHANGELOG + " has cleanup.policy " + policy);
        return CHANGELOG + " cleanup.policy=compact";
      });
      steps.run("repartition-purged", () -> awaitRepartitionPurged(admin));
      steps.run("restore-after-state-wipe", () -> {
        streams.close(Duration.ofSeconds(30));
        Env.deleteTree(stateDir.toFile());
        produceBatch(1);
        streams = start();
        return awaitExactCounts();
      });
    } finally {
      if (streams != null) streams.close(Duration.ofSeconds(30));
    }
  }

  private KafkaStreams start() {
    Properties config = new Properties();
    config.put(StreamsConfig.APPLICATION_ID_CONFIG, APP_ID);
    config.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, Env.BOOTSTRAP);
    config.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.AT_LEAST_ONCE);
    config.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, (int) Env.REPLICATION);
    config.put(StreamsConfig.STATE_DIR_CONFIG, stateDir.toString());
    config.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 500);
    // Streams deletes consumed repartition records at most this often (DeleteRecords).
    config.put(StreamsConfig.REPARTITION_PURGE_INTERVAL_MS_CONFIG, 1000);
    config.put(StreamsConfig.consumerPrefix(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG), "earliest");
    // Streams does not leave its group on close, so the restarted instance waits for the old
    // member's session to expire: the broker's minimum keeps that wait short.
    config.put(StreamsConfig.consumerPrefix(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG), 6000);
    config.put(StreamsConfig.consumerPrefix(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG), 1000);
    StreamsBuilder builder = new StreamsBuilder();
    builder.stream(INPUT, Consumed.with(Serdes.String(), Serdes.String()))
        .flatMapValues(line -> Arrays.asList(line.split(" ")))
        .groupBy((key, word) -> word, Grouped.with(Serdes.String(), Serdes.String()))
        .count(Materialized.<String, Long, KeyValueStore<Bytes, byte[]>>as(STORE)
            .withKeySerde(Serdes.String()).withValueSerde(Serdes.Long()))
        .toStream()
        .to(OUTPUT, Produced.with(Serdes.String(), Serdes.Long()));
    KafkaStreams app = new KafkaStreams(builder.build(), config);
    app.start();
    return app;
  }

  /** Line i holds 1 to 5 words picked by i, so the expected counts are known exactly. */
  private void produceBatch(int batch) throws Exception {
    Properties config = new Properties();
    config.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, Env.BOOTSTRAP);
    config.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
    config.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
    try (var producer = new KafkaProducer<String, String>(config)) {
      for (int i = batch * LINES_PER_BATCH; i < (batch + 1) * LINES_PER_BATCH; i++) {
        StringBuilder line = new StringBuilder();
        for (int j = 0; j <= i % 5; j++) {
          String word = WORDS.get((i * 7 + j * 3) % WORDS.size());
          line.append(j == 0 ? "" : " ").append(word);
          expected.merge(word, 1L, Long::sum);
        }
        producer.send(new ProducerRecord<>(INPUT, "line-" + i, line.toString())).get();
      }
    }
  }

  /** The store, queried once the application runs, holds exactly the expected counts. */
  private String awaitExactCounts() throws Exception {
    Steps.await(COUNT_TIMEOUT_MS, "exact counts in the store", () -> {
      KafkaStreams.State state = streams.state();
      Steps.check(state != KafkaStreams.State.ERROR && state != KafkaStreams.State.NOT_RUNNING,
          "the application stopped (state " + state + "); see its stderr");
      if (state != KafkaStreams.State.RUNNING) return "state " + state;
      ReadOnlyKeyValueStore<String, Long> store = streams.store(StoreQueryParameters
          .fromNameAndType(STORE, QueryableStoreTypes.<String, Long>keyValueStore()));
      Map<String, Long> actual = new TreeMap<>();
      try (var all = store.all()) {
        while (all.hasNext()) {
          KeyValue<String, Long> entry = all.next();
          actual.put(entry.key, entry.value);
        }
      }
      return actual.equals(expected) ? null : "store " + actual + ", expected " + expected;
    });
    long total = expected.values().stream().mapToLong(Long::longValue).sum();
    return expected.size() + " words, " + total + " occurrences";
  }

  private String awaitRepartitionPurged(Admin admin) throws Exception {
    Map<TopicPartition, OffsetSpec> earliest = new HashMap<>();
    for (int p = 0; p < PARTITIONS; p++) {
      earliest.put(new TopicPartition(REPARTITION, p), OffsetSpec.earliest());
    }
    long[] trimmed = {0};
    Steps.await(30_000, "DeleteRecords on " + REPARTITION, () -> {
      var offsets = admin.listOffsets(earliest).all().get(30, TimeUnit.SECONDS);
      trimmed[0] = offsets.values().stream().mapToLong(o -> o.offset()).sum();
      return trimmed[0] > 0 ? null : "every partition still starts at 0";
    });
    return REPARTITION + " log start offsets sum to " + trimmed[0];
  }
}
