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
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;

/**
 * KIP-848 static membership with a Kafka 4 KafkaConsumer (group.protocol=consumer,
 * group.instance.id): members "ia" and "ib" split the partitions; "ib" closes (a static leave,
 * epoch -2) and a new consumer with the same instance id gets exactly its partitions back,
 * while the group epoch stays and "ia" loses nothing. Usage: StaticMember BOOTSTRAP TOPIC GROUP.
 * Exits 0 with "OK" on success.
 */
public final class StaticMember {
  private static final int PARTITIONS = 4;
  private static final long DEADLINE_MS = 60_000;

  public static void main(String[] args) throws Exception {
    String bootstrap = args[0];
    String topic = args[1];
    String group = args[2];
    Set<TopicPartition> revokedFromA = new HashSet<>();
    try (Admin admin = Admin.create(Map.of("bootstrap.servers", bootstrap))) {
      admin.createTopics(List.of(new NewTopic(topic, PARTITIONS, (short) 1))).all().get();
      try (KafkaConsumer<String, String> a = consumer(bootstrap, group, "ia")) {
        a.subscribe(List.of(topic), recording(revokedFromA));
        Set<TopicPartition> fromB;
        try (KafkaConsumer<String, String> b = consumer(bootstrap, group, "ib")) {
          b.subscribe(List.of(topic));
          pollUntil(List.of(a, b), () -> split(a, b), "a and b split the partitions");
          fromB = new HashSet<>(b.assignment());
        }
        revokedFromA.clear();
        int epoch = describe(admin, group);
        System.out.println("b left; group epoch " + epoch);
        try (KafkaConsumer<String, String> b2 = consumer(bootstrap, group, "ib")) {
          b2.subscribe(List.of(topic));
          pollUntil(List.of(a, b2), () -> !b2.assignment().isEmpty(), "b2 is assigned");
          if (!b2.assignment().equals(fromB)) {
            throw new IllegalStateException("b2 got " + b2.assignment() + ", b had " + fromB);
          }
          if (describe(admin, group) != epoch) throw new IllegalStateException("epoch moved");
          if (!revokedFromA.isEmpty()) throw new IllegalStateException("a lost " + revokedFromA);
          System.out.println("b2 took over " + fromB + " at group epoch " + epoch);
        }
      }
    }
    System.out.println("OK");
  }

  private static boolean split(KafkaConsumer<String, String> a, KafkaConsumer<String, String> b) {
    Set<TopicPartition> both = new HashSet<>(a.assignment());
    both.addAll(b.assignment());
    return a.assignment().size() == PARTITIONS / 2
        && b.assignment().size() == PARTITIONS / 2
        && both.size() == PARTITIONS;
  }

  private static int describe(Admin admin, String group) throws Exception {
    ConsumerGroupDescription d =
        admin.describeConsumerGroups(List.of(group)).describedGroups().get(group).get();
    return d.groupEpoch().orElse(-1);
  }

  private static KafkaConsumer<String, String> consumer(
      String bootstrap, String group, String instanceId) {
    Properties p = new Properties();
    p.put("bootstrap.servers", bootstrap);
    p.put("group.id", group);
    p.put("group.instance.id", instanceId);
    p.put("client.id", instanceId);
    p.put("group.protocol", "consumer");
    p.put("auto.offset.reset", "earliest");
    p.put("key.deserializer", StringDeserializer.class.getName());
    p.put("value.deserializer", StringDeserializer.class.getName());
    return new KafkaConsumer<>(p);
  }

  private static ConsumerRebalanceListener recording(Set<TopicPartition> revoked) {
    return new ConsumerRebalanceListener() {
      @Override
      public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
        revoked.addAll(partitions);
      }

      @Override
      public void onPartitionsAssigned(Collection<TopicPartition> partitions) {}

      @Override
      public void onPartitionsLost(Collection<TopicPartition> partitions) {
        revoked.addAll(partitions);
      }
    };
  }

  private static void pollUntil(
      List<KafkaConsumer<String, String>> consumers, BooleanSupplier done, String what) {
    long deadline = System.currentTimeMillis() + DEADLINE_MS;
    while (!done.getAsBoolean()) {
      if (System.currentTimeMillis() > deadline) {
        throw new IllegalStateException("timed out waiting until " + what);
      }
      for (KafkaConsumer<String, String> c : consumers) c.poll(Duration.ofMillis(100));
    }
  }
}
