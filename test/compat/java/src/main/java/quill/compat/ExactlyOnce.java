package quill.compat;

import java.time.Duration;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Exactly-once consume-transform-produce with the Java client, as the Kafka documentation
 * writes it (KIP-447): a read_committed consumer in a group, a transactional producer, offsets
 * sent to the transaction with the consumer's group metadata.
 *
 *   pipeline: reads IN, writes "out-<value>" to OUT, one transaction per poll, until every IN
 *             partition's committed offset reaches its end; on any non-fatal error the producer
 *             is recreated (initTransactions aborts what was open) and the consumer rewinds to
 *             the committed offsets. Prints "committed <n>" after each commit.
 *   verify:   reads OUT with read_committed from the start and prints one line per distinct
 *             value with its count, then "total <n>", until EXPECTED records or IDLE_MS idle.
 */
public final class ExactlyOnce {
  static final String BOOTSTRAP = System.getenv("BOOTSTRAP");
  static final String IN = System.getenv("IN_TOPIC");
  static final String OUT = System.getenv("OUT_TOPIC");

  public static void main(String[] args) throws Exception {
    if (args.length > 0 && args[0].equals("verify")) {
      verify(Integer.parseInt(System.getenv("EXPECTED")));
    } else {
      pipeline();
    }
  }

  static KafkaProducer<String, String> newProducer() {
    Properties p = new Properties();
    p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, BOOTSTRAP);
    p.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, "eos-pipeline");
    p.put(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, "20000");
    p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "30000");
    p.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, "5000");
    p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, "30000");
    KafkaProducer<String, String> producer =
        new KafkaProducer<>(p, new StringSerializer(), new StringSerializer());
    // Retried: while the broker restarts, initTransactions times out.
    for (int attempt = 0; ; attempt++) {
      try {
        producer.initTransactions();
        return producer;
      } catch (KafkaException e) {
        if (attempt >= 20) throw e;
        System.err.println("initTransactions failed, retrying: " + e);
        producer.close(Duration.ZERO);
        producer = new KafkaProducer<>(p, new StringSerializer(), new StringSerializer());
      }
    }
  }

  static void pipeline() throws Exception {
    Properties c = new Properties();
    c.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, BOOTSTRAP);
    c.put(ConsumerConfig.GROUP_ID_CONFIG, "eos-pipeline");
    c.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
    c.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
    c.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
    c.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, "50");
    c.put(ConsumerConfig.REQUEST_TIMEOUT_MS_CONFIG, "5000");
    KafkaConsumer<String, String> consumer =
        new KafkaConsumer<>(c, new StringDeserializer(), new StringDeserializer());
    consumer.subscribe(List.of(IN), new ConsumerRebalanceListener() {
      public void onPartitionsRevoked(Collection<TopicPartition> partitions) {}
      public void onPartitionsAssigned(Collection<TopicPartition> partitions) {}
    });
    KafkaProducer<String, String> producer = newProducer();
    long committed = 0;
    while (!caughtUp(consumer)) {
      ConsumerRecords<String, String> records = consumer.poll(Duration.ofMillis(500));
      if (records.isEmpty()) continue;
      try {
        producer.beginTransaction();
        Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
        for (ConsumerRecord<String, String> r : records) {
          producer.send(new ProducerRecord<>(OUT, r.key(), "out-" + r.value()));
          offsets.put(new TopicPartition(r.topic(), r.partition()),
              new OffsetAndMetadata(r.offset() + 1));
        }
        producer.sendOffsetsToTransaction(offsets, consumer.groupMetadata());
        producer.commitTransaction();
        committed += records.count();
        System.out.println("committed " + committed);
        System.out.flush();
      } catch (ProducerFencedException e) {
        throw e;
      } catch (KafkaException e) {
        System.err.println("transaction failed, starting over: " + e);
        producer.close(Duration.ZERO);
        producer = newProducer();
        rewind(consumer);
      }
    }
    producer.close();
    consumer.close();
    System.out.println("done");
  }

  /** Every assigned partition's committed offset is its end offset (and something is assigned). */
  static boolean caughtUp(KafkaConsumer<String, String> consumer) {
    Set<TopicPartition> assigned = consumer.assignment();
    if (assigned.isEmpty()) return false;
    try {
      Map<TopicPartition, Long> ends = consumer.endOffsets(assigned);
      Map<TopicPartition, OffsetAndMetadata> committed = consumer.committed(assigned);
      for (TopicPartition tp : assigned) {
        OffsetAndMetadata c = committed.get(tp);
        if (c == null || c.offset() < ends.get(tp)) return false;
      }
      return assigned.size() == consumer.partitionsFor(IN).size();
    } catch (KafkaException e) {
      return false;
    }
  }

  /** Back to the committed offsets: what the aborted transaction read is read again. */
  static void rewind(KafkaConsumer<String, String> consumer) {
    for (int attempt = 0; ; attempt++) {
      try {
        Set<TopicPartition> assigned = consumer.assignment();
        Map<TopicPartition, OffsetAndMetadata> committed = consumer.committed(assigned);
        for (TopicPartition tp : assigned) {
          OffsetAndMetadata c = committed.get(tp);
          if (c != null) consumer.seek(tp, c.offset());
          else consumer.seekToBeginning(List.of(tp));
        }
        return;
      } catch (KafkaException e) {
        if (attempt >= 20) throw e;
        System.err.println("rewind failed, retrying: " + e);
      }
    }
  }

  static void verify(int expected) {
    Properties c = new Properties();
    c.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, BOOTSTRAP);
    c.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
    c.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
    KafkaConsumer<String, String> consumer =
        new KafkaConsumer<>(c, new StringDeserializer(), new StringDeserializer());
    List<TopicPartition> partitions = consumer.partitionsFor(OUT).stream()
        .map(p -> new TopicPartition(OUT, p.partition())).toList();
    consumer.assign(partitions);
    consumer.seekToBeginning(partitions);
    Map<String, Integer> counts = new HashMap<>();
    int total = 0;
    long idleSince = System.currentTimeMillis();
    while (total < expected || System.currentTimeMillis() - idleSince < 2000) {
      ConsumerRecords<String, String> records = consumer.poll(Duration.ofMillis(200));
      if (records.isEmpty()) {
        if (System.currentTimeMillis() - idleSince > 20_000) break;
        continue;
      }
      idleSince = System.currentTimeMillis();
      for (ConsumerRecord<String, String> r : records) {
        counts.merge(r.value(), 1, Integer::sum);
        total++;
      }
    }
    consumer.close();
    Set<String> printed = new HashSet<>();
    for (Map.Entry<String, Integer> e : counts.entrySet()) {
      if (e.getValue() != 1 && printed.add(e.getKey())) {
        System.out.println("duplicate " + e.getKey() + " " + e.getValue());
      }
    }
    System.out.println("distinct " + counts.size());
    System.out.println("total " + total);
  }
}
