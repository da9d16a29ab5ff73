package quill.compat4;

import java.time.Duration;
import java.util.Collection;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.function.BooleanSupplier;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.SubscriptionPattern;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * KIP-848 regex subscription with a Kafka 4 KafkaConsumer (group.protocol=consumer,
 * subscribe(SubscriptionPattern), resolved by the broker): PREFIX-a is consumed, PREFIX-b created
 * later is picked up and consumed, PREFIX-a deleted is revoked, and a topic the pattern does not
 * match is never read. Usage: RegexSubscription BOOTSTRAP PREFIX GROUP. Exits 0 with "OK".
 */
public final class RegexSubscription {
  private static final long DEADLINE_MS = 60_000;
  private final String bootstrap;
  private final String prefix;
  private final Set<String> seen = new HashSet<>();
  private final Set<TopicPartition> revoked = new HashSet<>();

  private RegexSubscription(String bootstrap, String prefix) {
    this.bootstrap = bootstrap;
    this.prefix = prefix;
  }

  public static void main(String[] args) throws Exception {
    new RegexSubscription(args[0], args[1]).run(args[2]);
    System.out.println("OK");
  }

  private void run(String group) throws Exception {
    String a = prefix + "-a";
    String b = prefix + "-b";
    String other = "not-" + prefix;
    try (Admin admin = Admin.create(Map.of("bootstrap.servers", bootstrap))) {
      admin.createTopics(List.of(new NewTopic(a, 2, (short) 1), new NewTopic(other, 1, (short) 1)))
          .all().get();
      produce(a, 10);
      produce(other, 5);
      try (KafkaConsumer<String, String> c = consumer(group)) {
        c.subscribe(new SubscriptionPattern(prefix + "-.*"), recording());
        pollUntil(c, () -> count(a) == 10, "read " + a);
        System.out.println("subscribed " + c.assignment().size());
        admin.createTopics(List.of(new NewTopic(b, 1, (short) 1))).all().get();
        produce(b, 5);
        pollUntil(c, () -> count(b) == 5, "read " + b + " created after the subscription");
        admin.deleteTopics(List.of(a)).all().get();
        pollUntil(c, () -> assignedTopics(c).equals(Set.of(b)), a + " revoked");
        if (revoked.stream().noneMatch(tp -> tp.topic().equals(a))) {
          throw new IllegalStateException("no revocation of " + a + ": " + revoked);
        }
        if (count(other) != 0) throw new IllegalStateException("read " + other);
        System.out.println("assignment " + c.assignment());
      }
    }
  }

  private long count(String topic) {
    return seen.stream().filter(v -> v.startsWith(topic + "/")).count();
  }

  private static Set<String> assignedTopics(KafkaConsumer<String, String> c) {
    Set<String> out = new HashSet<>();
    for (TopicPartition tp : c.assignment()) out.add(tp.topic());
    return out;
  }

  private void produce(String topic, int count) throws Exception {
    Properties p = new Properties();
    p.put("bootstrap.servers", bootstrap);
    p.put("key.serializer", StringSerializer.class.getName());
    p.put("value.serializer", StringSerializer.class.getName());
    try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
      for (int i = 0; i < count; i++) {
        producer.send(new ProducerRecord<>(topic, "k", topic + "/" + i)).get();
      }
    }
  }

  private KafkaConsumer<String, String> consumer(String group) {
    Properties p = new Properties();
    p.put("bootstrap.servers", bootstrap);
    p.put("group.id", group);
    p.put("group.protocol", "consumer");
    p.put("auto.offset.reset", "earliest");
    p.put("key.deserializer", StringDeserializer.class.getName());
    p.put("value.deserializer", StringDeserializer.class.getName());
    return new KafkaConsumer<>(p);
  }

  private ConsumerRebalanceListener recording() {
    return new ConsumerRebalanceListener() {
      @Override
      public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
        revoked.addAll(partitions);
        System.out.println("revoked " + partitions);
      }

      @Override
      public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
        System.out.println("assigned " + partitions);
      }
    };
  }

  private void pollUntil(KafkaConsumer<String, String> c, BooleanSupplier done, String what) {
    long deadline = System.currentTimeMillis() + DEADLINE_MS;
    while (!done.getAsBoolean()) {
      if (System.currentTimeMillis() > deadline) {
        throw new IllegalStateException("timed out waiting until " + what + "; seen " + seen);
      }
      for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(100))) {
        if (!seen.add(r.value())) throw new IllegalStateException("read twice: " + r.value());
      }
    }
    System.out.println("done: " + what);
  }
}
