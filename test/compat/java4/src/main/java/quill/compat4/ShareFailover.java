package quill.compat4;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.common.TopicIdPartition;

/**
 * ShareConsumers failover: explicit-mode share consumers that record, per offset of the one
 * partition, every delivery and every acknowledgement outcome, while brokers are killed under
 * them (usage in ShareConsumers).
 */
final class ShareFailover {
  private static final long DEADLINE_MS = 120_000;
  private static final long QUIET_MS = 3_000;

  /** What one offset went through. */
  private static final class Seen {
    int deliveries;
    int confirmed;
    int failed;
    int deliveredAfterConfirm;
    int lastCount;
    int redeliveries;
    int countKept;
  }

  private final String bootstrap;
  private final String topic;
  private final String group;
  private final Map<Long, Seen> seen = new HashMap<>();
  private final AtomicBoolean stop = new AtomicBoolean();
  private final AtomicLong lastEventMs = new AtomicLong(System.currentTimeMillis());
  private long confirmedTotal;

  ShareFailover(String bootstrap, String topic, String group) {
    this.bootstrap = bootstrap;
    this.topic = topic;
    this.group = group;
  }

  void run(int members) throws Exception {
    List<Thread> threads = new ArrayList<>();
    for (int i = 0; i < members; i++) {
      Thread t = new Thread(this::member);
      t.start();
      threads.add(t);
    }
    ShareConsumers.awaitMembers(bootstrap, group, members);
    System.out.println("READY");
    System.out.flush();
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
    String line = in.readLine();
    long end = Long.parseLong(line.split(" ")[1]);
    long deadline = System.currentTimeMillis() + DEADLINE_MS;
    while (System.currentTimeMillis() < deadline) {
      boolean settled = settled(end);
      if (settled && System.currentTimeMillis() - lastEventMs.get() > QUIET_MS) break;
      Thread.sleep(100);
    }
    stop.set(true);
    for (Thread t : threads) t.join();
    report(end);
  }

  private void member() {
    try (KafkaShareConsumer<String, String> c =
        ShareConsumers.consumer(bootstrap, group, "explicit", "10")) {
      c.setAcknowledgementCommitCallback(this::acknowledged);
      c.subscribe(List.of(topic));
      while (!stop.get()) {
        for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(100))) {
          delivered(r.offset(), r.deliveryCount().orElse((short) 0));
          Thread.sleep(5); // "processing": keeps records in flight when a broker dies
          c.acknowledge(r, AcknowledgeType.ACCEPT);
        }
        try {
          c.commitSync(Duration.ofSeconds(10));
        } catch (RuntimeException e) {
          // Failed acknowledgements reach the callback too.
        }
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  private synchronized void delivered(long offset, int deliveryCount) {
    Seen s = seen.computeIfAbsent(offset, o -> new Seen());
    if (s.confirmed > 0) s.deliveredAfterConfirm++;
    if (s.deliveries > 0) {
      s.redeliveries++;
      if (deliveryCount > s.lastCount) s.countKept++;
    }
    s.deliveries++;
    s.lastCount = deliveryCount;
    lastEventMs.set(System.currentTimeMillis());
  }

  private synchronized void acknowledged(Map<TopicIdPartition, Set<Long>> offsets, Exception e) {
    for (Set<Long> os : offsets.values()) {
      for (long o : os) {
        Seen s = seen.computeIfAbsent(o, x -> new Seen());
        if (e == null) {
          s.confirmed++;
          if (++confirmedTotal % 100 == 0) System.out.println("accepted " + confirmedTotal);
        } else {
          s.failed++;
        }
      }
    }
    System.out.flush();
    lastEventMs.set(System.currentTimeMillis());
  }

  /** Every offset below END delivered, and its last delivery's acknowledgement answered. */
  private synchronized boolean settled(long end) {
    for (long o = 0; o < end; o++) {
      Seen s = seen.get(o);
      if (s == null || s.deliveries == 0 || s.confirmed + s.failed < s.deliveries) return false;
    }
    return true;
  }

  private synchronized void report(long end) {
    int skipped = 0, afterConfirm = 0, twice = 0, unconfirmed = 0, redelivered = 0, kept = 0;
    for (long o = 0; o < end; o++) {
      Seen s = seen.get(o);
      if (s == null || s.deliveries == 0) {
        skipped++;
        continue;
      }
      afterConfirm += s.deliveredAfterConfirm;
      if (s.confirmed > 1) twice++;
      if (s.confirmed == 0) unconfirmed++;
      redelivered += s.redeliveries;
      kept += s.countKept;
    }
    System.out.println("skipped " + skipped);
    System.out.println("delivered-after-accept " + afterConfirm);
    System.out.println("accepted-twice " + twice);
    System.out.println("unconfirmed " + unconfirmed);
    System.out.println("redelivered " + redelivered + " count-kept " + kept);
    System.out.flush();
  }
}
