package quill.compat;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.HashSet;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.StringDeserializer;

/**
 * One member of the group: a KafkaConsumer polling in its own thread (KafkaConsumer is not
 * thread-safe, so commits and close happen on that thread too, when the main thread asks).
 */
final class Member implements Runnable {
  final int index;
  private final List<Records.Consumed> records = new ArrayList<>();
  private final Thread thread;
  private volatile boolean assigned = false;
  /** The partitions the consumer owned after its last poll. */
  private volatile Set<TopicPartition> owned = Set.of();
  private volatile boolean stopping = false;
  private volatile CompletableFuture<Void> commitRequest = null;
  private volatile Throwable lastError = null;

  private Member(int index) {
    this.index = index;
    this.thread = new Thread(this, "member-" + index);
    this.thread.start();
  }

  static List<Member> startTwo() {
    return new ArrayList<>(List.of(new Member(0), new Member(1)));
  }

  static Member start(int index) {
    return new Member(index);
  }

  @Override
  public void run() {
    Properties config = new Properties();
    config.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, Main.BOOTSTRAP);
    config.put(ConsumerConfig.GROUP_ID_CONFIG, Main.GROUP);
    config.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
    config.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
    config.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
    config.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
    // The java4 row (the Kafka 4.4 client) sets -Dquill.groupProtocol=consumer (KIP-848).
    String protocol = System.getProperty("quill.groupProtocol");
    if (protocol != null) config.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, protocol);
    try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(Security.apply(config))) {
      consumer.subscribe(List.of(Main.TOPIC), new ConsumerRebalanceListener() {
        /** Commits what was read before a rebalance moves it, as apps without auto-commit must. */
        @Override
        public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
          if (!partitions.isEmpty()) consumer.commitSync(Duration.ofSeconds(30));
        }

        /** Lost partitions are another member's already: nothing may be committed for them. */
        @Override
        public void onPartitionsLost(Collection<TopicPartition> partitions) {}

        @Override
        public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
          assigned = true;
        }
      });
      while (!stopping) {
        pollOnce(consumer);
        owned = Set.copyOf(consumer.assignment());
        CompletableFuture<Void> request = commitRequest;
        if (request != null) {
          commitRequest = null;
          try {
            consumer.commitSync(Duration.ofSeconds(30));
            request.complete(null);
          } catch (RuntimeException error) {
            request.completeExceptionally(error);
          }
        }
      }
    } catch (RuntimeException error) {
      lastError = error;
    }
  }

  private void pollOnce(KafkaConsumer<String, String> consumer) {
    try {
      for (ConsumerRecord<String, String> record : consumer.poll(Duration.ofMillis(100))) {
        List<String[]> headers = new ArrayList<>();
        for (Header header : record.headers()) {
          String value = new String(header.value(), StandardCharsets.UTF_8);
          headers.add(new String[] {header.key(), value});
        }
        synchronized (records) {
          records.add(new Records.Consumed(
              index, record.partition(), record.key(), record.value(), headers));
        }
      }
    } catch (RuntimeException error) {
      lastError = error;
      if (!(error instanceof org.apache.kafka.common.errors.RetriableException)) stopping = true;
    }
  }

  void commitSync() throws Exception {
    CompletableFuture<Void> request = new CompletableFuture<>();
    commitRequest = request;
    request.get(40, TimeUnit.SECONDS);
  }

  int count() {
    synchronized (records) {
      return records.size();
    }
  }

  static List<Records.Consumed> all(List<Member> members) {
    List<Records.Consumed> all = new ArrayList<>();
    for (Member member : members) {
      synchronized (member.records) {
        all.addAll(member.records);
      }
    }
    return all;
  }

  /** The partitions the members own together; a partition two own is counted once. */
  static Set<TopicPartition> owned(List<Member> members) {
    Set<TopicPartition> all = new HashSet<>();
    for (Member member : members) all.addAll(member.owned);
    return all;
  }

  /** Every member owns a partition, no two own the same one, and together they own `count`. */
  static boolean split(List<Member> members, int count) {
    int sum = members.stream().mapToInt(member -> member.owned.size()).sum();
    boolean each = members.stream().allMatch(member -> !member.owned.isEmpty());
    return each && sum == count && owned(members).size() == count;
  }

  static boolean allAssigned(List<Member> members) {
    return members.stream().allMatch(member -> member.assigned);
  }

  /** Waits for `done`, failing at once with a member's error or after the timeout. */
  static void waitFor(String what, long timeoutMs, List<Member> members, BooleanSupplier done)
      throws Exception {
    long deadline = System.currentTimeMillis() + timeoutMs;
    while (!done.getAsBoolean()) {
      for (Member member : members) {
        if (member.lastError != null && !member.thread.isAlive()) {
          throw new IllegalStateException("consumer failed: " + Main.describe(member.lastError));
        }
      }
      if (System.currentTimeMillis() > deadline) {
        String last = members.stream()
            .filter(m -> m.lastError != null)
            .map(m -> "; last client error: " + Main.describe(m.lastError))
            .findFirst()
            .orElse("");
        throw new IllegalStateException(
            "timed out after " + timeoutMs + " ms waiting for " + what + last);
      }
      Thread.sleep(50);
    }
  }

  static void closeAll(List<Member> members) {
    for (Member member : members) member.stopping = true;
    for (Member member : members) {
      try {
        member.thread.join(60_000);
      } catch (InterruptedException error) {
        Thread.currentThread().interrupt();
      }
    }
    members.clear();
  }
}
