package quill.compat4;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Transactions v2 (KIP-890 part 2) with the Kafka 4 transactional producer: an aborted and two
 * committed transactions on one partition (the epoch bumps at each EndTxn, so each transaction
 * runs under a new epoch), a consume-transform-produce step whose offsets go to the transaction
 * without AddOffsetsToTxn, a second producer with the same transactional.id fencing the first,
 * and a read_committed consumer that must see exactly the committed records.
 * Usage: TransactionsV2 BOOTSTRAP TOPIC TXN_ID. Prints what it saw; exits 0 with "OK".
 */
public final class TransactionsV2 {
  private static final long DEADLINE_MS = 60_000;

  public static void main(String[] args) throws Exception {
    String bootstrap = args[0];
    String topic = args[1];
    String txnId = args[2];
    String output = topic + "-out";
    try (Admin admin = Admin.create(Map.of("bootstrap.servers", bootstrap))) {
      admin
          .createTopics(List.of(new NewTopic(topic, 1, (short) 1), new NewTopic(output, 1, (short) 1)))
          .all()
          .get();
    }
    KafkaProducer<String, String> first = producer(bootstrap, txnId);
    first.initTransactions();
    send(first, topic, "aborted", 5, false);
    send(first, topic, "committed-a", 5, true);
    send(first, topic, "committed-b", 3, true);
    transform(bootstrap, first, topic, output);
    // The same id from a new producer fences the first: its next transaction cannot commit.
    KafkaProducer<String, String> second = producer(bootstrap, txnId);
    second.initTransactions();
    try {
      first.beginTransaction();
      first.send(new ProducerRecord<>(topic, "zombie")).get();
      first.commitTransaction();
      System.out.println("zombie committed");
    } catch (Exception e) {
      // A send is refused with INVALID_PRODUCER_EPOCH (the leader's answer, as Kafka's), the
      // commit with PRODUCER_FENCED (the coordinator's).
      Throwable cause = e.getCause() == null ? e : e.getCause();
      System.out.println("first fenced " + cause.getClass().getSimpleName());
    }
    first.close(Duration.ofSeconds(5));
    send(second, topic, "committed-c", 2, true);
    second.close();
    List<String> seen = readCommitted(bootstrap, topic, 10);
    System.out.println("read_committed " + String.join(",", seen));
    List<String> out = readCommitted(bootstrap, output, 8);
    System.out.println("output " + out.size());
    System.out.println("OK");
  }

  private static KafkaProducer<String, String> producer(String bootstrap, String txnId) {
    Properties p = new Properties();
    p.put("bootstrap.servers", bootstrap);
    p.put("transactional.id", txnId);
    p.put("key.serializer", StringSerializer.class.getName());
    p.put("value.serializer", StringSerializer.class.getName());
    return new KafkaProducer<>(p);
  }

  private static void send(
      KafkaProducer<String, String> producer, String topic, String prefix, int n, boolean commit)
      throws Exception {
    producer.beginTransaction();
    for (int i = 0; i < n; i++) producer.send(new ProducerRecord<>(topic, prefix + "-" + i)).get();
    if (commit) producer.commitTransaction();
    else producer.abortTransaction();
    System.out.println((commit ? "committed " : "aborted ") + prefix);
  }

  /** Reads the input in a group and writes one record per input with the offsets, in one go. */
  private static void transform(
      String bootstrap, KafkaProducer<String, String> producer, String topic, String output)
      throws Exception {
    try (KafkaConsumer<String, String> consumer = consumer(bootstrap, "ctp-" + topic)) {
      consumer.subscribe(List.of(topic));
      List<ConsumerRecord<String, String>> records = new ArrayList<>();
      long deadline = System.currentTimeMillis() + DEADLINE_MS;
      while (records.size() < 8 && System.currentTimeMillis() < deadline) {
        consumer.poll(Duration.ofMillis(200)).forEach(records::add);
      }
      producer.beginTransaction();
      Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
      for (ConsumerRecord<String, String> r : records) {
        producer.send(new ProducerRecord<>(output, r.value().toUpperCase()));
        offsets.put(new TopicPartition(r.topic(), r.partition()), new OffsetAndMetadata(r.offset() + 1));
      }
      producer.sendOffsetsToTransaction(offsets, consumer.groupMetadata());
      producer.commitTransaction();
      long committed = consumer.committed(offsets.keySet()).values().iterator().next().offset();
      System.out.println("transformed " + records.size() + " committed offset " + committed);
    }
  }

  private static KafkaConsumer<String, String> consumer(String bootstrap, String group) {
    Properties c = new Properties();
    c.put("bootstrap.servers", bootstrap);
    c.put("group.id", group);
    c.put("group.protocol", "consumer");
    c.put("isolation.level", "read_committed");
    c.put("auto.offset.reset", "earliest");
    c.put("enable.auto.commit", "false");
    c.put("key.deserializer", StringDeserializer.class.getName());
    c.put("value.deserializer", StringDeserializer.class.getName());
    return new KafkaConsumer<>(c);
  }

  /** Every committed value of the one-partition topic, read from the start. */
  private static List<String> readCommitted(String bootstrap, String topic, int expected) {
    List<String> seen = new ArrayList<>();
    try (KafkaConsumer<String, String> consumer = consumer(bootstrap, "reader-" + topic)) {
      TopicPartition tp = new TopicPartition(topic, 0);
      consumer.assign(List.of(tp));
      consumer.seekToBeginning(List.of(tp));
      long deadline = System.currentTimeMillis() + DEADLINE_MS;
      while (System.currentTimeMillis() < deadline) {
        consumer.poll(Duration.ofMillis(200)).forEach(r -> seen.add(r.value()));
        if (seen.size() >= expected && consumer.position(tp) >= consumer.endOffsets(List.of(tp)).get(tp)) {
          break;
        }
      }
    }
    return seen;
  }
}
