package quill.compat4;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.ShareGroupDescription;
import org.apache.kafka.clients.admin.ShareMemberDescription;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.GroupIdNotFoundException;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Share groups (KIP-932) with the Kafka 4.4 KafkaShareConsumer, all members on one partition.
 * Usage: ShareConsumers MODE BOOTSTRAP TOPIC GROUP [ARG]; prints what it saw and "OK".
 *
 * exactly N RECORDS: N members in implicit mode; every record reaches exactly one member (the
 *   test then checks with kafka-share-groups.sh that the group's start offset passed them all).
 * acks LIMIT: one member in explicit mode; r0 is RELEASEd once (redelivered with count 2), r1
 *   REJECTed (never redelivered), "poison" always RELEASEd (delivered LIMIT times, then archived).
 * hold: one member acquires 5 records, says "held 5" and waits to be killed (never acknowledges).
 * renew HOLD_MS: one explicit-mode member acquires 5 records and keeps them for HOLD_MS (longer
 *   than their lock) by acknowledging them RENEW (KIP-1222) every 500 ms, taking each renewed
 *   record back from poll; then it ACCEPTs them. A second member polls all along and must get
 *   none of them; the holder's last deliveries must still be the first (RENEW counts none).
 * takeover N: a member of the same group gets the N held records, released when the holder's
 *   connection closed (or once their locks expire).
 * failover N: (test/broker/share-groups-cluster.test.ts) N explicit-mode members ACCEPT every
 *   record while the test produces and kills brokers; prints "READY" once they are assigned and
 *   "accepted K" every 100 confirmed acknowledgements. After "expect END" on stdin they run until
 *   every offset below END was delivered and its acknowledgement answered (and 3 s more), then
 *   print what each offset went through: never delivered, delivered again after its ACCEPT was
 *   confirmed, confirmed twice, never confirmed (its acknowledgement failed, e.g. in flight at a
 *   crash), redeliveries and how many of them came with a higher delivery count.
 * bench N RECORDS: (scripts/bench-share-groups.ts) RECORDS records of 100 bytes are produced,
 *   then N implicit-mode members (group config share.auto.offset.reset=earliest) consume them;
 *   prints the records per second from the first record received to the last.
 */
public final class ShareConsumers {
  private static final long DEADLINE_MS = 60_000;

  private final String bootstrap;
  private final String topic;
  private final String group;

  private ShareConsumers(String bootstrap, String topic, String group) {
    this.bootstrap = bootstrap;
    this.topic = topic;
    this.group = group;
  }

  public static void main(String[] args) throws Exception {
    ShareConsumers s = new ShareConsumers(args[1], args[2], args[3]);
    switch (args[0]) {
      case "exactly" -> s.exactly(Integer.parseInt(args[4]), Integer.parseInt(args[5]));
      case "acks" -> s.acks(Integer.parseInt(args[4]));
      case "hold" -> s.hold();
      case "takeover" -> s.takeover(Integer.parseInt(args[4]));
      case "renew" -> s.renew(Long.parseLong(args[4]));
      case "failover" -> new ShareFailover(s.bootstrap, s.topic, s.group).run(Integer.parseInt(args[4]));
      case "bench" -> s.bench(Integer.parseInt(args[4]), Integer.parseInt(args[5]));
      default -> throw new IllegalArgumentException(args[0]);
    }
    System.out.println("OK");
    System.out.flush();
  }

  private void exactly(int members, int records) throws Exception {
    createTopic();
    Map<String, Integer> seen = new ConcurrentHashMap<>();
    AtomicInteger duplicates = new AtomicInteger();
    List<Thread> threads = new ArrayList<>();
    List<AtomicInteger> counts = new ArrayList<>();
    long deadline = System.currentTimeMillis() + DEADLINE_MS;
    for (int i = 0; i < members; i++) {
      AtomicInteger count = new AtomicInteger();
      counts.add(count);
      Thread t = new Thread(() -> {
        try (KafkaShareConsumer<String, String> c = consumer("implicit")) {
          c.subscribe(List.of(topic));
          // Keep polling a little after the last record, so a duplicate would show up.
          long quietUntil = Long.MAX_VALUE;
          while (System.currentTimeMillis() < Math.min(deadline, quietUntil)) {
            for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) {
              count.incrementAndGet();
              if (seen.put(r.value(), 1) != null) duplicates.incrementAndGet();
            }
            if (seen.size() >= records && quietUntil == Long.MAX_VALUE) {
              quietUntil = System.currentTimeMillis() + 1_500;
            }
          }
          c.commitSync();
        }
      });
      t.start();
      threads.add(t);
    }
    awaitMembers(members);
    produce(values("v", records));
    for (Thread t : threads) t.join();
    for (int i = 0; i < members; i++) System.out.println("member " + i + " got " + counts.get(i));
    System.out.println("distinct " + seen.size() + " duplicates " + duplicates.get());
    check(seen.size() == records && duplicates.get() == 0, "not exactly once");
  }

  private void bench(int members, int records) throws Exception {
    createTopic();
    try (Admin admin = Admin.create(Map.of("bootstrap.servers", bootstrap))) {
      ConfigResource resource = new ConfigResource(ConfigResource.Type.GROUP, group);
      AlterConfigOp op =
          new AlterConfigOp(
              new ConfigEntry("share.auto.offset.reset", "earliest"), AlterConfigOp.OpType.SET);
      admin.incrementalAlterConfigs(Map.of(resource, List.of(op))).all().get();
    }
    String value = "x".repeat(100);
    List<String> vs = new ArrayList<>();
    for (int i = 0; i < records; i++) vs.add(value);
    produce(vs);
    AtomicInteger total = new AtomicInteger();
    long[] firstMs = {0};
    long deadline = System.currentTimeMillis() + 10 * DEADLINE_MS;
    List<Thread> threads = new ArrayList<>();
    for (int i = 0; i < members; i++) {
      Thread t = new Thread(() -> {
        try (KafkaShareConsumer<String, String> c = consumer("implicit", "500")) {
          c.subscribe(List.of(topic));
          while (total.get() < records && System.currentTimeMillis() < deadline) {
            int n = c.poll(Duration.ofMillis(100)).count();
            if (n > 0) {
              synchronized (firstMs) {
                if (firstMs[0] == 0) firstMs[0] = System.currentTimeMillis();
              }
              total.addAndGet(n);
            }
          }
          c.commitSync();
        }
      });
      t.start();
      threads.add(t);
    }
    long lastMs = 0;
    while (total.get() < records && System.currentTimeMillis() < deadline) Thread.sleep(5);
    lastMs = System.currentTimeMillis();
    for (Thread t : threads) t.join();
    double seconds = (lastMs - firstMs[0]) / 1000.0;
    System.out.printf("bench members=%d records=%d seconds=%.2f rate=%.0f%n",
        members, total.get(), seconds, total.get() / seconds);
  }

  private void acks(int limit) throws Exception {
    createTopic();
    Map<String, Integer> deliveries = new TreeMap<>();
    Map<String, Integer> lastCount = new TreeMap<>();
    try (KafkaShareConsumer<String, String> c = consumer("explicit")) {
      c.subscribe(List.of(topic));
      c.poll(Duration.ofMillis(100));
      awaitMembers(1);
      List<String> vs = values("r", 5);
      vs.add("poison");
      produce(vs);
      long deadline = System.currentTimeMillis() + DEADLINE_MS;
      long quietUntil = Long.MAX_VALUE;
      while (System.currentTimeMillis() < Math.min(deadline, quietUntil)) {
        for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) {
          String v = r.value();
          int n = deliveries.merge(v, 1, Integer::sum);
          lastCount.put(v, (int) r.deliveryCount().orElse((short) -1));
          AcknowledgeType type = AcknowledgeType.ACCEPT;
          if (v.equals("poison") || (v.equals("r0") && n == 1)) type = AcknowledgeType.RELEASE;
          if (v.equals("r1")) type = AcknowledgeType.REJECT;
          c.acknowledge(r, type);
        }
        c.commitSync();
        if (deliveries.getOrDefault("poison", 0) >= limit && quietUntil == Long.MAX_VALUE) {
          quietUntil = System.currentTimeMillis() + 1_500;
        }
      }
    }
    System.out.println("deliveries " + deliveries);
    System.out.println("counts " + lastCount);
    check(deliveries.get("r0") == 2 && lastCount.get("r0") == 2, "r0 not redelivered once");
    check(deliveries.get("r1") == 1, "r1 redelivered after REJECT");
    check(deliveries.get("poison") == limit, "poison not archived at the limit");
  }

  private void hold() throws Exception {
    createTopic();
    try (KafkaShareConsumer<String, String> c = consumer("explicit")) {
      c.subscribe(List.of(topic));
      c.poll(Duration.ofMillis(100));
      awaitMembers(1);
      produce(values("h", 5));
      int held = 0;
      long deadline = System.currentTimeMillis() + DEADLINE_MS;
      while (held < 5 && System.currentTimeMillis() < deadline) {
        held += c.poll(Duration.ofMillis(200)).count();
      }
      System.out.println("held " + held);
      System.out.flush();
      Thread.sleep(DEADLINE_MS);
    }
  }

  private void renew(long holdMs) throws Exception {
    createTopic();
    Map<String, Integer> other = new ConcurrentHashMap<>();
    Map<String, Integer> counts = new TreeMap<>();
    int renewals = 0;
    try (KafkaShareConsumer<String, String> holder = consumer("explicit")) {
      holder.subscribe(List.of(topic));
      holder.poll(Duration.ofMillis(100));
      awaitMembers(1);
      produce(values("w", 5));
      List<ConsumerRecord<String, String>> held = new ArrayList<>();
      long deadline = System.currentTimeMillis() + DEADLINE_MS;
      while (held.size() < 5 && System.currentTimeMillis() < deadline) {
        for (ConsumerRecord<String, String> r : holder.poll(Duration.ofMillis(200))) held.add(r);
      }
      check(held.size() == 5, "held " + held.size());
      Thread poller = new Thread(() -> {
        try (KafkaShareConsumer<String, String> c = consumer("explicit")) {
          c.subscribe(List.of(topic));
          long end = System.currentTimeMillis() + holdMs + 3_000;
          while (System.currentTimeMillis() < end) {
            for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) {
              other.merge(r.value(), 1, Integer::sum);
              c.acknowledge(r, AcknowledgeType.ACCEPT);
            }
            c.commitSync();
          }
        }
      });
      poller.start();
      long until = System.currentTimeMillis() + holdMs;
      while (System.currentTimeMillis() < until) {
        Thread.sleep(500);
        for (ConsumerRecord<String, String> r : held) holder.acknowledge(r, AcknowledgeType.RENEW);
        holder.commitSync();
        renewals++;
        // The renewed records come back from poll, still this member's.
        held.clear();
        long back = System.currentTimeMillis() + 5_000;
        while (held.size() < 5 && System.currentTimeMillis() < back) {
          for (ConsumerRecord<String, String> r : holder.poll(Duration.ofMillis(100))) {
            held.add(r);
          }
        }
        check(held.size() == 5, "renewed records back " + held.size());
      }
      for (ConsumerRecord<String, String> r : held) {
        counts.put(r.value(), (int) r.deliveryCount().orElse((short) -1));
        holder.acknowledge(r, AcknowledgeType.ACCEPT);
      }
      holder.commitSync();
      poller.join();
    }
    System.out.println("renewals " + renewals);
    System.out.println("counts " + counts);
    System.out.println("other " + new TreeMap<>(other));
    check(other.isEmpty(), "another member got renewed records");
    check(counts.size() == 5 && counts.values().stream().allMatch(c -> c == 1), "counts moved");
  }

  private void takeover(int expected) throws Exception {
    long start = System.currentTimeMillis();
    int got = 0;
    try (KafkaShareConsumer<String, String> c = consumer("explicit")) {
      c.subscribe(List.of(topic));
      long deadline = start + DEADLINE_MS;
      while (got < expected && System.currentTimeMillis() < deadline) {
        for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) {
          got++;
          System.out.println("took " + r.value() + " count " + r.deliveryCount().orElse((short) -1));
          c.acknowledge(r, AcknowledgeType.ACCEPT);
        }
        c.commitSync();
      }
    }
    check(got == expected, "took " + got + " of " + expected);
  }

  private KafkaShareConsumer<String, String> consumer(String ackMode) {
    // Small fetches, so that the members of one partition take turns.
    return consumer(ackMode, "10");
  }

  static KafkaShareConsumer<String, String> consumer(
      String bootstrap, String group, String ackMode, String maxPollRecords) {
    return new ShareConsumers(bootstrap, "", group).consumer(ackMode, maxPollRecords);
  }

  private KafkaShareConsumer<String, String> consumer(String ackMode, String maxPollRecords) {
    Properties p = new Properties();
    p.put("bootstrap.servers", bootstrap);
    p.put("group.id", group);
    p.put("share.acknowledgement.mode", ackMode);
    p.put("max.poll.records", maxPollRecords);
    p.put("key.deserializer", StringDeserializer.class.getName());
    p.put("value.deserializer", StringDeserializer.class.getName());
    return new KafkaShareConsumer<>(p);
  }

  private void createTopic() throws Exception {
    try (Admin admin = Admin.create(Map.of("bootstrap.servers", bootstrap))) {
      admin.createTopics(List.of(new NewTopic(topic, 1, (short) 1))).all().get();
    }
  }

  static void awaitMembers(String bootstrap, String group, int members) throws Exception {
    new ShareConsumers(bootstrap, "", group).awaitMembers(members);
  }

  /** Waits until the group has this many members, each assigned the partition. */
  private void awaitMembers(int members) throws Exception {
    long deadline = System.currentTimeMillis() + DEADLINE_MS;
    try (Admin admin = Admin.create(Map.of("bootstrap.servers", bootstrap))) {
      while (System.currentTimeMillis() < deadline) {
        ShareGroupDescription d;
        try {
          d = admin.describeShareGroups(List.of(group)).all().get().get(group);
        } catch (ExecutionException e) {
          // Not there until the first member's heartbeat.
          if (!(e.getCause() instanceof GroupIdNotFoundException)) throw e;
          Thread.sleep(100);
          continue;
        }
        Collection<ShareMemberDescription> ms = d.members();
        boolean assigned =
            ms.size() == members
                && ms.stream().allMatch(m -> !m.assignment().topicPartitions().isEmpty());
        if (assigned) {
          System.out.println("described " + d.groupState() + " members " + ms.size());
          return;
        }
        Thread.sleep(100);
      }
    }
    throw new IllegalStateException("members not assigned in time");
  }

  private static List<String> values(String prefix, int count) {
    List<String> out = new ArrayList<>();
    for (int i = 0; i < count; i++) out.add(prefix + i);
    return out;
  }

  private void produce(List<String> values) throws Exception {
    Properties p = new Properties();
    p.put("bootstrap.servers", bootstrap);
    p.put("key.serializer", StringSerializer.class.getName());
    p.put("value.serializer", StringSerializer.class.getName());
    // One batch: an explicit-mode member that holds records cannot poll again without acking.
    p.put("linger.ms", "200");
    try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
      for (String v : values) producer.send(new ProducerRecord<>(topic, 0, null, v));
      producer.flush();
    }
  }

  private static void check(boolean ok, String what) {
    if (!ok) throw new IllegalStateException(what);
  }
}
