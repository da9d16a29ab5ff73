package quill.compat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.stream.IntStream;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ListConsumerGroupOffsetsOptions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * The transactions steps with the Java client (see test/compat/support/scenario.ts): an aborted
 * and a committed transaction on a topic of their own, a read_committed consumer that must see
 * only the committed records, then consume-transform-produce with sendOffsetsToTransaction and
 * the consumer's group metadata (KIP-447), as the Kafka documentation writes it.
 */
final class Transactions implements AutoCloseable {
  static final int TXN_RECORDS = 5;
  static final long TXN_END_OFFSET = 2 * TXN_RECORDS + 2;
  static final long TXN_INPUT_END = 2 * TXN_RECORDS + 1;
  static final long TXN_WAIT_MS = 30_000;

  private final Admin admin;
  private final String topic = Main.TOPIC + "-txn";
  private final String group = Main.GROUP + "-txn";
  private final TopicPartition partition = new TopicPartition(topic, 0);
  private final List<ConsumerRecord<String, String>> read = new ArrayList<>();
  private KafkaConsumer<String, String> reader;

  Transactions(Admin admin) {
    this.admin = admin;
  }

  String transactions() throws Exception {
    NewTopic newTopic = new NewTopic(topic, Optional.of(1), Optional.empty());
    admin.createTopics(List.of(newTopic)).all().get();
    try (KafkaProducer<String, String> producer = producer("txn")) {
      producer.initTransactions();
      for (String prefix : List.of("aborted", "committed")) {
        producer.beginTransaction();
        for (String value : values(prefix)) {
          producer.send(new ProducerRecord<>(topic, 0, null, value));
        }
        // abortTransaction drops what is still unsent; the aborted records must reach the log.
        producer.flush();
        if (prefix.equals("aborted")) producer.abortTransaction();
        else producer.commitTransaction();
      }
    }
    reader = reader();
    readUntil(TXN_RECORDS);
    checkSeen("after commit and abort", values("committed"));
    long end = admin.listOffsets(Map.of(partition, OffsetSpec.latest())).all().get()
        .get(partition).offset();
    Steps.check(end == TXN_END_OFFSET, "end offset " + end + ", not " + TXN_END_OFFSET);
    return TXN_RECORDS + " committed seen, " + TXN_RECORDS + " aborted not, end offset " + end;
  }

  String consumeTransformProduce() throws Exception {
    Steps.check(reader != null, "no reader from the transactions step");
    List<ConsumerRecord<String, String>> inputs = List.copyOf(read);
    try (KafkaProducer<String, String> producer = producer("ctp")) {
      producer.initTransactions();
      producer.beginTransaction();
      for (ConsumerRecord<String, String> input : inputs) {
        producer.send(new ProducerRecord<>(topic, 0, null, "out " + input.value()));
      }
      long next = inputs.get(inputs.size() - 1).offset() + 1;
      var offsets = Map.of(partition, new OffsetAndMetadata(next));
      producer.sendOffsetsToTransaction(offsets, reader.groupMetadata());
      producer.commitTransaction();
    }
    readUntil(2 * TXN_RECORDS);
    List<String> expected = new ArrayList<>(values("committed"));
    expected.addAll(values("out committed"));
    checkSeen("the reader", expected);
    // requireStable: the commit marker reaches the group's coordinator after commitTransaction
    // returns (as in Kafka); until then a stable read is UNSTABLE_OFFSET_COMMIT and retried.
    ListConsumerGroupOffsetsOptions stable =
        new ListConsumerGroupOffsetsOptions().requireStable(true);
    OffsetAndMetadata committed = admin.listConsumerGroupOffsets(group, stable)
        .partitionsToOffsetAndMetadata().get().get(partition);
    long offset = committed == null ? -1 : committed.offset();
    Steps.check(offset == TXN_INPUT_END, "group offset " + offset + ", not " + TXN_INPUT_END);
    return TXN_RECORDS + " transformed, group offset " + offset;
  }

  @Override
  public void close() {
    if (reader != null) reader.close();
  }

  private static List<String> values(String prefix) {
    return IntStream.range(0, TXN_RECORDS).mapToObj(i -> prefix + " " + i).toList();
  }

  private KafkaProducer<String, String> producer(String id) {
    Properties config = new Properties();
    config.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, Main.BOOTSTRAP);
    config.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, Main.TOPIC + "-" + id);
    config.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
    config.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
    return new KafkaProducer<>(Security.apply(config));
  }

  /** A read_committed consumer of the partition in the transactions' group, never committing. */
  private KafkaConsumer<String, String> reader() {
    Properties config = new Properties();
    config.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, Main.BOOTSTRAP);
    config.put(ConsumerConfig.GROUP_ID_CONFIG, group);
    config.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
    config.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
    config.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
    config.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
    KafkaConsumer<String, String> consumer = new KafkaConsumer<>(Security.apply(config));
    consumer.assign(List.of(partition));
    consumer.seekToBeginning(List.of(partition));
    return consumer;
  }

  /** Polls until `count` records, then once more so a record delivered late shows. */
  private void readUntil(int count) {
    long deadlineMs = System.currentTimeMillis() + TXN_WAIT_MS;
    while (read.size() < count && System.currentTimeMillis() < deadlineMs) {
      reader.poll(Duration.ofMillis(100)).forEach(read::add);
    }
    reader.poll(Duration.ofMillis(200)).forEach(read::add);
  }

  private void checkSeen(String what, List<String> expected) {
    List<String> seen = read.stream().map(ConsumerRecord::value).toList();
    Steps.check(seen.equals(expected), what + ": read_committed saw " + seen);
  }
}
