package quill.compat4;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.List;
import java.util.Properties;
import java.util.Set;
import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;

/**
 * Two members of one group (group.protocol=consumer or classic) that keep polling and
 * committing while the test kills the group's coordinator: prints "READY" with each member's
 * id and epoch (generation for classic) once the topic's partitions are split between them,
 * every rebalance callback as it happens, and "DONE" with the ids and epochs again once COUNT
 * records were read; then waits for a line on stdin before the members leave. PROTOCOL
 * "mixed" is a group being upgraded: a (classic) alone reads FIRST records and commits, prints
 * "JOINING", and b (group.protocol=consumer) joins. A record read again prints "DUPLICATE".
 * Usage: FailoverConsumer BOOTSTRAP TOPIC GROUP PROTOCOL COUNT [FIRST].
 */
public final class FailoverConsumer {
  private static final long DEADLINE_MS = 120_000;

  public static void main(String[] args) throws Exception {
    String bootstrap = args[0];
    String topic = args[1];
    String group = args[2];
    String protocol = args[3];
    int count = Integer.parseInt(args[4]);
    int first = args.length > 5 ? Integer.parseInt(args[5]) : 0;
    boolean mixed = protocol.equals("mixed");
    Set<String> seen = new HashSet<>();
    try (KafkaConsumer<String, String> a =
            consumer(bootstrap, group, mixed ? "classic" : protocol, "a");
        KafkaConsumer<String, String> b =
            consumer(bootstrap, group, mixed ? "consumer" : protocol, "b")) {
      List<KafkaConsumer<String, String>> both = List.of(a, b);
      long deadline = System.currentTimeMillis() + DEADLINE_MS;
      a.subscribe(List.of(topic), logging("a"));
      if (mixed) {
        while (a.assignment().isEmpty() || seen.size() < first) poll(List.of(a), seen, deadline);
        System.out.println("JOINING");
      }
      b.subscribe(List.of(topic), logging("b"));
      while (a.assignment().isEmpty() || b.assignment().isEmpty() || !disjoint(a, b)) {
        poll(both, seen, deadline);
      }
      // A few more polls so that both members have heartbeated in their final epochs.
      for (int i = 0; i < 10; i++) poll(both, seen, deadline);
      System.out.println("READY " + ids(a, b));
      while (seen.size() < count) poll(both, seen, deadline);
      System.out.println("DONE " + ids(a, b));
      // The members stay in the group until the test, having looked at it, says go.
      System.in.read();
    }
    System.out.println("OK");
  }

  private static void poll(
      List<KafkaConsumer<String, String>> consumers, Set<String> seen, long deadline) {
    if (System.currentTimeMillis() > deadline) throw new IllegalStateException("timed out");
    for (KafkaConsumer<String, String> c : consumers) {
      List<String> values = new ArrayList<>();
      for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(100))) values.add(r.value());
      if (values.isEmpty()) continue;
      for (String v : values) if (!seen.add(v)) System.out.println("DUPLICATE " + v);
      // Committed with the member's epoch: refused if the new coordinator forgot it.
      c.commitSync();
    }
  }

  private static boolean disjoint(KafkaConsumer<String, String> a, KafkaConsumer<String, String> b) {
    Set<TopicPartition> overlap = new HashSet<>(a.assignment());
    overlap.retainAll(b.assignment());
    return overlap.isEmpty();
  }

  private static String ids(KafkaConsumer<String, String> a, KafkaConsumer<String, String> b) {
    return "a=" + id(a.groupMetadata()) + " b=" + id(b.groupMetadata());
  }

  private static String id(ConsumerGroupMetadata m) {
    return m.memberId() + ":" + m.generationId();
  }

  private static KafkaConsumer<String, String> consumer(
      String bootstrap, String group, String protocol, String name) {
    Properties p = new Properties();
    p.put("bootstrap.servers", bootstrap);
    p.put("group.id", group);
    p.put("client.id", name);
    p.put("group.protocol", protocol);
    p.put("auto.offset.reset", "earliest");
    p.put("enable.auto.commit", "false");
    p.put("session.timeout.ms", "30000");
    p.put("heartbeat.interval.ms", "500");
    p.put("key.deserializer", StringDeserializer.class.getName());
    p.put("value.deserializer", StringDeserializer.class.getName());
    if (protocol.equals("consumer")) {
      // Classic-only keys are refused with group.protocol=consumer.
      p.remove("session.timeout.ms");
      p.remove("heartbeat.interval.ms");
    }
    return new KafkaConsumer<>(p);
  }

  private static ConsumerRebalanceListener logging(String name) {
    return new ConsumerRebalanceListener() {
      @Override
      public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
        System.out.println(name + " revoked " + partitions);
      }

      @Override
      public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
        System.out.println(name + " assigned " + partitions);
      }

      @Override
      public void onPartitionsLost(Collection<TopicPartition> partitions) {
        System.out.println(name + " lost " + partitions);
      }
    };
  }
}
