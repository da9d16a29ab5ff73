package quill.compat4;

import java.time.Duration;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.function.BooleanSupplier;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.GroupType;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * The KIP-848 scenario with a Kafka 4 KafkaConsumer (group.protocol=consumer): one member joins
 * and gets every partition, a second joins and the partitions are split between them (the first
 * gives up before the second gets), the second leaves and the first gets them all back, offsets
 * are committed, and a member started later in the same group reads only what came after.
 * Usage: ConsumerProtocol BOOTSTRAP TOPIC GROUP ASSIGNOR. Exits 0 with "OK" on success.
 */
public final class ConsumerProtocol {
  private static final int PARTITIONS = 4;
  private static final int FIRST_BATCH = 40;
  private static final int SECOND_BATCH = 12;
  private static final long DEADLINE_MS = 60_000;

  private final String bootstrap;
  private final String topic;
  private final String group;
  private final String assignor;
  private final Map<String, String> seen = new HashMap<>();

  private ConsumerProtocol(String[] args) {
    bootstrap = args[0];
    topic = args[1];
    group = args[2];
    assignor = args[3];
  }

  public static void main(String[] args) throws Exception {
    new ConsumerProtocol(args).run();
    System.out.println("OK");
  }

  private void run() throws Exception {
    try (Admin admin = Admin.create(Map.of("bootstrap.servers", bootstrap))) {
      admin.createTopics(List.of(new NewTopic(topic, PARTITIONS, (short) 1))).all().get();
      produce(0, FIRST_BATCH);
      try (KafkaConsumer<String, String> a = consumer("a");
          KafkaConsumer<String, String> b = consumer("b")) {
        a.subscribe(List.of(topic), committing("a", a));
        pollUntil(List.of(a), () -> a.assignment().size() == PARTITIONS, "a owns every partition");
        b.subscribe(List.of(topic), committing("b", b));
        pollUntil(List.of(a, b), () -> split(a, b), "a and b split the partitions");
        describe(admin, 2);
        pollUntil(List.of(a, b), () -> seen.size() == FIRST_BATCH, "every record read");
        a.commitSync();
        b.commitSync();
        b.close();
        pollUntil(List.of(a), () -> a.assignment().size() == PARTITIONS, "a owns all again");
        a.commitSync();
      }
      produce(FIRST_BATCH, SECOND_BATCH);
      seen.clear();
      try (KafkaConsumer<String, String> c = consumer("c")) {
        c.subscribe(List.of(topic));
        pollUntil(List.of(c), () -> seen.size() == SECOND_BATCH, "c reads the new records");
        for (String value : seen.keySet()) {
          int n = Integer.parseInt(value.substring(2));
          if (n < FIRST_BATCH) throw new IllegalStateException("redelivered " + value);
        }
        c.commitSync();
      }
    }
  }

  private boolean split(KafkaConsumer<String, String> a, KafkaConsumer<String, String> b) {
    Set<TopicPartition> both = new HashSet<>(a.assignment());
    both.addAll(b.assignment());
    return a.assignment().size() == PARTITIONS / 2
        && b.assignment().size() == PARTITIONS / 2
        && both.size() == PARTITIONS;
  }

  private void describe(Admin admin, int members) throws Exception {
    ConsumerGroupDescription d =
        admin.describeConsumerGroups(List.of(group)).describedGroups().get(group).get();
    if (d.type() != GroupType.CONSUMER || d.members().size() != members) {
      throw new IllegalStateException("describe: " + d);
    }
    if (!assignor.equals(d.partitionAssignor())) {
      throw new IllegalStateException("assignor " + d.partitionAssignor());
    }
    System.out.println("described " + d.groupState() + " epoch " + d.groupEpoch().orElse(-1));
  }

  private void produce(int from, int count) throws Exception {
    Properties p = new Properties();
    p.put("bootstrap.servers", bootstrap);
    p.put("key.serializer", StringSerializer.class.getName());
    p.put("value.serializer", StringSerializer.class.getName());
    try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
      for (int i = from; i < from + count; i++) {
        producer.send(new ProducerRecord<>(topic, i % PARTITIONS, "k", "v-" + i)).get();
      }
    }
  }

  private KafkaConsumer<String, String> consumer(String name) {
    Properties p = new Properties();
    p.put("bootstrap.servers", bootstrap);
    p.put("group.id", group);
    p.put("client.id", name);
    p.put("group.protocol", "consumer");
    p.put("group.remote.assignor", assignor);
    p.put("auto.offset.reset", "earliest");
    p.put("enable.auto.commit", "false");
    p.put("key.deserializer", StringDeserializer.class.getName());
    p.put("value.deserializer", StringDeserializer.class.getName());
    return new KafkaConsumer<>(p);
  }

  /** Commits what was read before partitions are given up, as apps without auto-commit must. */
  private ConsumerRebalanceListener committing(String name, KafkaConsumer<String, String> c) {
    return new ConsumerRebalanceListener() {
      @Override
      public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
        System.out.println(name + " revoked " + partitions);
        if (!partitions.isEmpty()) c.commitSync();
      }

      @Override
      public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
        System.out.println(name + " assigned " + partitions);
      }
    };
  }

  private void pollUntil(
      List<KafkaConsumer<String, String>> consumers, BooleanSupplier done, String what) {
    long deadline = System.currentTimeMillis() + DEADLINE_MS;
    while (!done.getAsBoolean()) {
      if (System.currentTimeMillis() > deadline) {
        throw new IllegalStateException("timed out waiting until " + what);
      }
      for (KafkaConsumer<String, String> c : consumers) {
        for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(100))) {
          String where = r.partition() + "@" + r.offset();
          String before = seen.put(r.value(), where);
          if (before != null && !before.equals(where)) {
            throw new IllegalStateException(r.value() + " at " + before + " and " + where);
          }
        }
      }
    }
    System.out.println("done: " + what);
  }
}
