package quill.compat4;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.InvalidProducerEpochException;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Transactions v2 across a cluster (the test puts the transaction coordinator, the partitions'
 * leader and the group coordinator on different brokers): consume-transform-produce with
 * sendOffsetsToTransaction from a KIP-848 consumer, one transaction committed and one aborted;
 * then a transaction whose records are written, after which it prints "SENT" and waits for a
 * line on stdin (the test kills the transaction coordinator with kill -9 meanwhile) before it
 * commits; whatever that commit's outcome, a new transaction must commit. Last, a read_committed
 * consumer reads the output from the start until it has passed that last transaction.
 * Usage: TransactionsV2Cluster BOOTSTRAP INPUT OUTPUT GROUP TXN_ID (the topics exist, one
 * partition each, INPUT holding at least 20 records). Prints what happened; exits 0 with "OK".
 */
public final class TransactionsV2Cluster {
  private static final long DEADLINE_MS = 90_000;
  private static final int BATCH = 10;

  private final String bootstrap;
  private final String input;
  private final String output;
  private final String group;
  private final String txnId;

  private TransactionsV2Cluster(String[] args) {
    bootstrap = args[0];
    input = args[1];
    output = args[2];
    group = args[3];
    txnId = args[4];
  }

  public static void main(String[] args) throws Exception {
    new TransactionsV2Cluster(args).run();
    System.out.println("OK");
  }

  private void run() throws Exception {
    KafkaProducer<String, String> producer = producer();
    producer.initTransactions();
    try (KafkaConsumer<String, String> consumer = consumer(group)) {
      consumer.subscribe(List.of(input));
      transform(producer, consumer, true);
      transform(producer, consumer, false);
    }
    producer.beginTransaction();
    for (int i = 0; i < 5; i++) producer.send(new ProducerRecord<>(output, "crash-" + i)).get();
    System.out.println("SENT");
    new BufferedReader(new InputStreamReader(System.in)).readLine();
    producer = commitAfterCrash(producer);
    producer.beginTransaction();
    for (int i = 0; i < 5; i++) producer.send(new ProducerRecord<>(output, "after-" + i)).get();
    producer.commitTransaction();
    System.out.println("after committed");
    producer.close(Duration.ofSeconds(5));
    System.out.println("read_committed " + String.join(",", readCommitted()));
    try (Admin admin = Admin.create(Map.of("bootstrap.servers", bootstrap))) {
      OffsetAndMetadata offset = admin.listConsumerGroupOffsets(group)
          .partitionsToOffsetAndMetadata().get().get(new TopicPartition(input, 0));
      System.out.println("group offset " + (offset == null ? "none" : offset.offset()));
    }
  }

  /**
   * Commits the transaction open while its coordinator died. It may commit (the new coordinator
   * found it in __transaction_state) or fail; an abortable failure is aborted, a fatal one
   * (fenced) needs a new producer, whose initTransactions ends what the old one left open.
   */
  private KafkaProducer<String, String> commitAfterCrash(KafkaProducer<String, String> producer) {
    try {
      producer.commitTransaction();
      System.out.println("crash committed");
      return producer;
    } catch (ProducerFencedException | InvalidProducerEpochException fatal) {
      System.out.println("crash fenced " + fatal);
    } catch (KafkaException failed) {
      try {
        producer.abortTransaction();
        System.out.println("crash aborted " + failed);
        return producer;
      } catch (KafkaException abortFailed) {
        System.out.println("crash unresolved " + failed + "; abort: " + abortFailed);
      }
    }
    producer.close(Duration.ofSeconds(5));
    KafkaProducer<String, String> next = producer();
    next.initTransactions();
    return next;
  }

  /** Reads BATCH or more input records and writes one output record each, with the offsets. */
  private void transform(
      KafkaProducer<String, String> producer, KafkaConsumer<String, String> consumer,
      boolean commit) {
    List<ConsumerRecord<String, String>> records = new ArrayList<>();
    long deadline = System.currentTimeMillis() + DEADLINE_MS;
    while (records.size() < BATCH) {
      if (System.currentTimeMillis() > deadline) throw new IllegalStateException("no input");
      consumer.poll(Duration.ofMillis(200)).forEach(records::add);
    }
    String prefix = commit ? "committed-" : "aborted-";
    producer.beginTransaction();
    Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
    List<String> values = new ArrayList<>();
    for (ConsumerRecord<String, String> r : records) {
      values.add(prefix + r.value());
      producer.send(new ProducerRecord<>(output, prefix + r.value()));
      offsets.put(new TopicPartition(r.topic(), r.partition()), new OffsetAndMetadata(r.offset() + 1));
    }
    producer.sendOffsetsToTransaction(offsets, consumer.groupMetadata());
    if (commit) producer.commitTransaction();
    else producer.abortTransaction();
    System.out.println((commit ? "committed " : "aborted ") + String.join(",", values));
    System.out.println((commit ? "committed offset " : "aborted offset ")
        + offsets.values().iterator().next().offset());
  }

  private KafkaProducer<String, String> producer() {
    Properties p = new Properties();
    p.put("bootstrap.servers", bootstrap);
    p.put("transactional.id", txnId);
    p.put("transaction.timeout.ms", "20000");
    p.put("key.serializer", StringSerializer.class.getName());
    p.put("value.serializer", StringSerializer.class.getName());
    return new KafkaProducer<>(p);
  }

  private KafkaConsumer<String, String> consumer(String groupId) {
    Properties c = new Properties();
    c.put("bootstrap.servers", bootstrap);
    c.put("group.id", groupId);
    c.put("group.protocol", "consumer");
    c.put("isolation.level", "read_committed");
    c.put("auto.offset.reset", "earliest");
    c.put("enable.auto.commit", "false");
    c.put("max.poll.records", String.valueOf(BATCH));
    c.put("key.deserializer", StringDeserializer.class.getName());
    c.put("value.deserializer", StringDeserializer.class.getName());
    return new KafkaConsumer<>(c);
  }

  /** The output's committed values from the start, until the last transaction was read. */
  private List<String> readCommitted() {
    List<String> seen = new ArrayList<>();
    try (KafkaConsumer<String, String> consumer = consumer("reader-" + output)) {
      TopicPartition tp = new TopicPartition(output, 0);
      consumer.assign(List.of(tp));
      consumer.seekToBeginning(List.of(tp));
      long deadline = System.currentTimeMillis() + DEADLINE_MS;
      while (!seen.contains("after-4") && System.currentTimeMillis() < deadline) {
        consumer.poll(Duration.ofMillis(200)).forEach(r -> seen.add(r.value()));
      }
    }
    return seen;
  }
}
