package quill.compat;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.Properties;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;

/**
 * One member of a group being rolled from the classic protocol to KIP-848 and back
 * (test/e2e/group-migration-java.test.ts): compiled against kafka-clients 3.9 (classic) and
 * 4.4 (run with group.protocol=consumer). It polls, prints every record it reads as
 * "R value", commits after each poll and in onPartitionsRevoked (at-least-once), prints
 * "ASSIGNED", "REVOKED" and "COMMITFAIL" lines, and closes (leaving the group) when a line
 * arrives on stdin, then prints "OK". Usage: RollingMember BOOTSTRAP TOPIC GROUP PROTOCOL NAME.
 */
public final class RollingMember {
  private static volatile boolean stopping = false;

  public static void main(String[] args) throws Exception {
    Properties p = new Properties();
    p.put("bootstrap.servers", args[0]);
    p.put("group.id", args[2]);
    p.put("client.id", args[4]);
    p.put("auto.offset.reset", "earliest");
    p.put("enable.auto.commit", "false");
    p.put("key.deserializer", StringDeserializer.class.getName());
    p.put("value.deserializer", StringDeserializer.class.getName());
    if (args[3].equals("consumer")) {
      p.put("group.protocol", "consumer");
    } else {
      p.put("session.timeout.ms", "10000");
      p.put("heartbeat.interval.ms", "500");
    }
    Thread stdin = new Thread(() -> {
      try {
        new BufferedReader(new InputStreamReader(System.in)).readLine();
      } catch (Exception e) {
        // stdin closed: stop too
      }
      stopping = true;
    });
    stdin.setDaemon(true);
    stdin.start();
    try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(p)) {
      consumer.subscribe(List.of(args[1]), new ConsumerRebalanceListener() {
        @Override
        public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
          System.out.println("REVOKED " + partitions);
          if (!partitions.isEmpty()) commit(consumer);
        }

        @Override
        public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
          System.out.println("ASSIGNED " + partitions);
        }

        @Override
        public void onPartitionsLost(Collection<TopicPartition> partitions) {
          System.out.println("LOST " + partitions);
        }
      });
      while (!stopping) {
        ConsumerRecords<String, String> records;
        try {
          records = consumer.poll(Duration.ofMillis(100));
        } catch (Exception e) {
          System.out.println("POLLFAIL " + e);
          continue;
        }
        StringBuilder out = new StringBuilder();
        for (ConsumerRecord<String, String> r : records) out.append("R ").append(r.value()).append('\n');
        System.out.print(out);
        if (!records.isEmpty()) commit(consumer);
      }
    }
    System.out.println("OK");
  }

  private static void commit(KafkaConsumer<String, String> consumer) {
    try {
      consumer.commitSync(Duration.ofSeconds(30));
    } catch (Exception e) {
      System.out.println("COMMITFAIL " + e);
    }
  }
}
