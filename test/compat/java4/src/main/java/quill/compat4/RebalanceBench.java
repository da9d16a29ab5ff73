package quill.compat4;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;

/**
 * Rebalance time of a group of Kafka 4 KafkaConsumers, for scripts/bench-kip848-rebalance.ts:
 * MEMBERS-1 members settle, then the last joins ("join ms": until every member owns a share
 * and the shares cover the topic without overlap), then one leaves ("leave ms": until the
 * others cover it again). All members are polled from one thread, 10 ms each.
 * Usage: RebalanceBench BOOTSTRAP TOPIC GROUP PROTOCOL(consumer|classic-eager|classic-cooperative)
 * MEMBERS PARTITIONS HEARTBEAT_MS. Prints "join ms N" and "leave ms N".
 */
public final class RebalanceBench {
  private static final long DEADLINE_MS = 120_000;

  public static void main(String[] args) throws Exception {
    String bootstrap = args[0];
    String topic = args[1];
    String group = args[2];
    String protocol = args[3];
    int members = Integer.parseInt(args[4]);
    int partitions = Integer.parseInt(args[5]);
    String heartbeatMs = args[6];
    try (Admin admin = Admin.create(Map.of("bootstrap.servers", bootstrap))) {
      admin.createTopics(List.of(new NewTopic(topic, partitions, (short) 1))).all().get();
    }
    List<KafkaConsumer<String, String>> group0 = new ArrayList<>();
    try {
      for (int i = 0; i < members - 1; i++) group0.add(join(bootstrap, topic, group, protocol, heartbeatMs));
      settle(group0, partitions);
      long joinStart = System.nanoTime();
      group0.add(join(bootstrap, topic, group, protocol, heartbeatMs));
      settle(group0, partitions);
      System.out.println("join ms " + (System.nanoTime() - joinStart) / 1_000_000);
      long leaveStart = System.nanoTime();
      group0.remove(0).close();
      settle(group0, partitions);
      System.out.println("leave ms " + (System.nanoTime() - leaveStart) / 1_000_000);
    } finally {
      for (KafkaConsumer<String, String> c : group0) c.close(Duration.ZERO);
    }
  }

  private static KafkaConsumer<String, String> join(
      String bootstrap, String topic, String group, String protocol, String heartbeatMs) {
    Properties p = new Properties();
    p.put("bootstrap.servers", bootstrap);
    p.put("group.id", group);
    p.put("key.deserializer", StringDeserializer.class.getName());
    p.put("value.deserializer", StringDeserializer.class.getName());
    if (protocol.equals("consumer")) {
      p.put("group.protocol", "consumer");
    } else {
      p.put("group.protocol", "classic");
      p.put("heartbeat.interval.ms", heartbeatMs);
      p.put(
          "partition.assignment.strategy",
          protocol.equals("classic-eager")
              ? "org.apache.kafka.clients.consumer.RangeAssignor"
              : "org.apache.kafka.clients.consumer.CooperativeStickyAssignor");
    }
    KafkaConsumer<String, String> c = new KafkaConsumer<>(p);
    c.subscribe(List.of(topic));
    return c;
  }

  /** Polls every member until each owns a share and the shares cover the topic exactly. */
  private static void settle(List<KafkaConsumer<String, String>> consumers, int partitions) {
    long deadline = System.currentTimeMillis() + DEADLINE_MS;
    while (!covered(consumers, partitions)) {
      if (System.currentTimeMillis() > deadline) throw new IllegalStateException("no settle");
      for (KafkaConsumer<String, String> c : consumers) c.poll(Duration.ofMillis(10));
    }
  }

  private static boolean covered(List<KafkaConsumer<String, String>> consumers, int partitions) {
    Set<TopicPartition> all = new HashSet<>();
    int total = 0;
    for (KafkaConsumer<String, String> c : consumers) {
      if (c.assignment().isEmpty()) return false;
      all.addAll(c.assignment());
      total += c.assignment().size();
    }
    return all.size() == partitions && total == partitions;
  }
}
