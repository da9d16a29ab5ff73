package quill.compat.apps;

import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.config.TopicConfig;
import org.apache.kafka.common.serialization.LongDeserializer;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.KeyValue;
import org.apache.kafka.streams.StoreQueryParameters;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.errors.InvalidStateStoreException;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.state.KeyValueStore;
import org.apache.kafka.streams.state.QueryableStoreTypes;
import org.apache.kafka.streams.state.ReadOnlyKeyValueStore;

/**
 * The word count both Streams checks run, at a given processing guarantee: lines are split into
 * words, re-keyed by word (through a repartition topic, which Streams trims with DeleteRecords)
 * and counted into a persistent store backed by a compacted changelog topic; the counts also go
 * to an output topic. The lines are generated, so the expected counts are known exactly.
 */
final class WordCountApp {
  static final String STORE = "word-counts";
  static final int PARTITIONS = 3;
  private static final List<String> WORDS = List.of("alpha", "bravo", "charlie", "delta",
      "echo", "foxtrot", "golf", "hotel", "india", "juliett", "kilo", "lima", "mike",
      "november", "oscar", "papa", "quebec", "romeo", "sierra", "tango");
  private static final long COUNT_TIMEOUT_MS = 90_000;

  final String appId;
  final String input;
  final String output;
  final String changelog;
  final String repartition;
  final Path stateDir;
  private final String guarantee;
  /** Small changelog segments and no record cache, so the broker's cleaner has work early. */
  private boolean compactEarly = false;
  final Map<String, Long> expected = new TreeMap<>();

  WordCountApp(String appId, String guarantee) {
    this.appId = appId;
    this.guarantee = guarantee;
    input = appId + "-lines";
    output = appId + "-counts";
    changelog = appId + "-" + STORE + "-changelog";
    repartition = appId + "-" + STORE + "-repartition";
    stateDir = Env.WORK_DIR.resolve(appId + "-state");
  }

  void createTopics(Admin admin) throws Exception {
    Env.createTopic(admin, input, PARTITIONS);
    Env.createTopic(admin, output, PARTITIONS);
  }

  KafkaStreams start() {
    return start(null);
  }

  /**
   * Every count update goes to the changelog (no record cache) and the changelog's segments
   * roll every 4 KiB, so the broker's LogCleaner compacts it while the application runs.
   */
  WordCountApp compactEarly() {
    compactEarly = true;
    return this;
  }

  /** Starts the application; `listener` (if any) hears its state changes from the start. */
  KafkaStreams start(KafkaStreams.StateListener listener) {
    Properties config = new Properties();
    config.put(StreamsConfig.APPLICATION_ID_CONFIG, appId);
    config.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, Env.BOOTSTRAP);
    config.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, guarantee);
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
    if (compactEarly) {
      config.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);
      // Batches of at most 2 KiB, so each fits the changelog's 4 KiB segments.
      config.put(StreamsConfig.producerPrefix(ProducerConfig.BATCH_SIZE_CONFIG), 2048);
    }
    var store = Materialized.<String, Long, KeyValueStore<Bytes, byte[]>>as(STORE)
        .withKeySerde(Serdes.String()).withValueSerde(Serdes.Long());
    if (compactEarly) {
      store = store.withLoggingEnabled(Map.of(TopicConfig.SEGMENT_BYTES_CONFIG, "4096"));
    }
    StreamsBuilder builder = new StreamsBuilder();
    builder.stream(input, Consumed.with(Serdes.String(), Serdes.String()))
        .flatMapValues(line -> Arrays.asList(line.split(" ")))
        .groupBy((key, word) -> word, Grouped.with(Serdes.String(), Serdes.String()))
        .count(store)
        .toStream()
        .to(output, Produced.with(Serdes.String(), Serdes.Long()));
    KafkaStreams app = new KafkaStreams(builder.build(), config);
    if (listener != null) app.setStateListener(listener);
    app.start();
    return app;
  }

  /** Lines [from, to): line i holds 1 to 5 words picked by i. */
  void produceLines(int from, int to) throws Exception {
    Properties config = new Properties();
    config.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, Env.BOOTSTRAP);
    config.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
    config.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
    try (var producer = new KafkaProducer<String, String>(config)) {
      for (int i = from; i < to; i++) {
        StringBuilder line = new StringBuilder();
        for (int j = 0; j <= i % 5; j++) {
          String word = WORDS.get((i * 7 + j * 3) % WORDS.size());
          line.append(j == 0 ? "" : " ").append(word);
          expected.merge(word, 1L, Long::sum);
        }
        producer.send(new ProducerRecord<>(input, "line-" + i, line.toString())).get();
      }
    }
  }

  /** The store of the running `streams` holds exactly the expected counts. */
  String awaitExactCounts(KafkaStreams streams) throws Exception {
    Steps.await(COUNT_TIMEOUT_MS, "exact counts in the store", () -> {
      KafkaStreams.State state = streams.state();
      Steps.check(state != KafkaStreams.State.ERROR && state != KafkaStreams.State.NOT_RUNNING,
          "the application stopped (state " + state + "); see its stderr");
      if (state != KafkaStreams.State.RUNNING) return "state " + state;
      Map<String, Long> actual = new TreeMap<>();
      try {
        ReadOnlyKeyValueStore<String, Long> store = streams.store(StoreQueryParameters
            .fromNameAndType(STORE, QueryableStoreTypes.<String, Long>keyValueStore()));
        try (var all = store.all()) {
          while (all.hasNext()) {
            KeyValue<String, Long> entry = all.next();
            actual.put(entry.key, entry.value);
          }
        }
      } catch (InvalidStateStoreException migrating) {
        // A rebalance began after the state check (after a broker restart the group
        // coordinator may not know the member any more): Streams' answer is to ask again.
        return "store not queryable: " + migrating.getMessage();
      }
      return actual.equals(expected) ? null : "store " + actual + ", expected " + expected;
    });
    long total = expected.values().stream().mapToLong(Long::longValue).sum();
    return expected.size() + " words, " + total + " occurrences";
  }

  /**
   * Reads the output topic from the start at `isolation` until every word's latest count is the
   * expected one; returns the highest count seen per word (a count above the expected one is a
   * double-counted line).
   */
  Map<String, Long> readOutput(String isolation) throws Exception {
    Properties config = new Properties();
    config.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, Env.BOOTSTRAP);
    config.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, isolation);
    config.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
    config.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
    config.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, LongDeserializer.class.getName());
    Map<String, Long> latest = new TreeMap<>();
    Map<String, Long> highest = new TreeMap<>();
    try (var consumer = new KafkaConsumer<String, Long>(config)) {
      consumer.assign(Env.partitionsOf(output, PARTITIONS));
      consumer.seekToBeginning(consumer.assignment());
      Steps.await(COUNT_TIMEOUT_MS, "the expected counts in " + output, () -> {
        for (var record : consumer.poll(Duration.ofMillis(500))) {
          latest.put(record.key(), record.value());
          highest.merge(record.key(), record.value(), Math::max);
        }
        return latest.equals(expected) ? null : "latest " + latest + ", expected " + expected;
      });
    }
    return highest;
  }
}
