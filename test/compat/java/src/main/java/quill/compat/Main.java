package quill.compat;

import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.ListOffsetsResult.ListOffsetsResultInfo;
import org.apache.kafka.clients.admin.MemberDescription;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.ConsumerGroupState;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * The compatibility scenario with the Java client, as an ordinary user writes it: a KafkaProducer
 * with default settings (so idempotence is on), KafkaConsumers each polling in its own thread, and
 * the Admin client for topics, configs, groups and offsets. Same contract as
 * test/compat/support/scenario.ts: one JSON line per step on stdout.
 */
public final class Main {
  static final String BOOTSTRAP = System.getenv("BOOTSTRAP");
  static final String TOPIC = System.getenv("TOPIC");
  static final String GROUP = System.getenv("GROUP");
  static final int PARTITION_COUNT = 3;
  static final int RECORDS_PER_CODEC = 10_000;
  static final int SENTINEL_COUNT = PARTITION_COUNT;
  static final long CONSUME_TIMEOUT_MS = 90_000;
  static final long RESTART_TIMEOUT_MS = 45_000;

  private final Steps steps = new Steps();
  private final Admin admin;
  private List<Member> members = new ArrayList<>();
  private long produced = 0;

  private Main(Admin admin) {
    this.admin = admin;
  }

  public static void main(String[] args) throws Exception {
    Steps.emit(Map.of("client", "java", "version", clientVersion()));
    Properties config = new Properties();
    config.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, BOOTSTRAP);
    try (Admin admin = Admin.create(Security.apply(config))) {
      new Main(admin).run();
    }
    System.exit(0);
  }

  /**
   * The kafka-clients version on the classpath, from the file its jar carries (AppInfoParser,
   * which reads it, moved to an internal package in 4.0; this program is built against both).
   */
  private static String clientVersion() throws Exception {
    Properties version = new Properties();
    String path = "/kafka/kafka-version.properties";
    try (InputStream in = KafkaProducer.class.getResourceAsStream(path)) {
      if (in != null) version.load(in);
    }
    return version.getProperty("version", "?");
  }

  private void run() {
    if (Security.enabled()) steps.run("wrong-password", Security::wrongPassword);
    steps.run("create-topic", this::createTopic);
    steps.run("produce-gzip", () -> produce("gzip"));
    steps.run("produce-zstd", () -> produce("zstd"));
    steps.run("consume-group", this::consumeGroup);
    steps.run("commit", this::commit);
    Member.closeAll(members);
    steps.run("restart-no-redelivery", this::restart);
    steps.run("describe-group", this::describeGroup);
    Member.closeAll(members);
    steps.run("list-offsets", this::listOffsets);
    try (Transactions transactions = new Transactions(admin)) {
      steps.run("transactions", transactions::transactions);
      steps.run("consume-transform-produce", transactions::consumeTransformProduce);
    }
    steps.run("delete-topic", this::deleteTopic);
  }

  private String createTopic() throws Exception {
    // No replication factor: the broker's default.replication.factor, as on any cluster.
    NewTopic newTopic = new NewTopic(TOPIC, Optional.of(PARTITION_COUNT), Optional.empty());
    admin.createTopics(List.of(newTopic)).all().get();
    TopicDescription description =
        admin.describeTopics(List.of(TOPIC)).allTopicNames().get().get(TOPIC);
    Steps.check(description.partitions().size() == PARTITION_COUNT,
        "topic has " + description.partitions().size() + " partitions");
    ConfigResource resource = new ConfigResource(ConfigResource.Type.TOPIC, TOPIC);
    var config = admin.describeConfigs(List.of(resource)).all().get().get(resource);
    Steps.check(config.get("cleanup.policy") != null, "describeConfigs has no cleanup.policy");
    return "describeConfigs: " + config.entries().size() + " entries";
  }

  static KafkaProducer<String, String> producer(String codec) {
    Properties config = new Properties();
    config.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, BOOTSTRAP);
    config.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
    config.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
    config.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, codec);
    return new KafkaProducer<>(Security.apply(config));
  }

  private String produce(String codec) throws Exception {
    try (KafkaProducer<String, String> producer = producer(codec)) {
      List<Future<RecordMetadata>> sent = new ArrayList<>();
      int first = codec.equals("gzip") ? 0 : RECORDS_PER_CODEC;
      for (int seq = first; seq < first + RECORDS_PER_CODEC; seq++) {
        RecordHeaders headers = new RecordHeaders();
        headers.add("seq", Integer.toString(seq).getBytes(StandardCharsets.UTF_8));
        headers.add("codec", codec.getBytes(StandardCharsets.UTF_8));
        String key = Records.keyFor(seq);
        String value = Records.valueFor(seq);
        sent.add(producer.send(new ProducerRecord<>(TOPIC, null, key, value, headers)));
      }
      producer.flush();
      for (Future<RecordMetadata> future : sent) future.get(60, TimeUnit.SECONDS);
    }
    produced += RECORDS_PER_CODEC;
    return RECORDS_PER_CODEC + " records";
  }

  private String consumeGroup() throws Exception {
    members = Member.startTwo();
    Member.waitFor("both members to be assigned", RESTART_TIMEOUT_MS, members,
        () -> Member.allAssigned(members));
    int expected = 2 * RECORDS_PER_CODEC;
    Member.waitFor(expected + " records", CONSUME_TIMEOUT_MS, members,
        () -> Member.all(members).size() >= expected);
    Thread.sleep(500); // Anything delivered twice arrives now, and the check sees it.
    List<String> problems = Records.verify(Member.all(members));
    Steps.check(problems.isEmpty(), String.join("; ", problems));
    return members.stream()
        .map(m -> "member " + m.index + ": " + m.count())
        .collect(Collectors.joining(", "));
  }

  private Map<TopicPartition, Long> offsets(OffsetSpec spec) throws Exception {
    Map<TopicPartition, OffsetSpec> request = new HashMap<>();
    for (int p = 0; p < PARTITION_COUNT; p++) request.put(new TopicPartition(TOPIC, p), spec);
    Map<TopicPartition, ListOffsetsResultInfo> result = admin.listOffsets(request).all().get();
    Map<TopicPartition, Long> offsets = new HashMap<>();
    result.forEach((partition, info) -> offsets.put(partition, info.offset()));
    return offsets;
  }

  private String commit() throws Exception {
    for (Member member : members) member.commitSync();
    Map<TopicPartition, OffsetAndMetadata> committed =
        admin.listConsumerGroupOffsets(GROUP).partitionsToOffsetAndMetadata().get();
    Map<TopicPartition, Long> ends = offsets(OffsetSpec.latest());
    for (var end : ends.entrySet()) {
      OffsetAndMetadata offset = committed.get(end.getKey());
      Steps.check(offset != null && offset.offset() == end.getValue(),
          end.getKey() + ": committed " + offset + ", end " + end.getValue());
    }
    return null;
  }

  /**
   * The group starts again from its committed offsets: member 0 joins and gets every partition,
   * member 1 joins and the group rebalances, splitting them; only the sentinels produced now
   * are delivered.
   */
  private String restart() throws Exception {
    members.add(Member.start(0));
    Member.waitFor("member 0 to own every partition", RESTART_TIMEOUT_MS, members,
        () -> Member.owned(members).size() == PARTITION_COUNT);
    members.add(Member.start(1));
    Member.waitFor("members 0 and 1 to split the partitions", RESTART_TIMEOUT_MS, members,
        () -> Member.split(members, PARTITION_COUNT));
    try (KafkaProducer<String, String> producer = producer("none")) {
      List<Future<RecordMetadata>> sent = new ArrayList<>();
      for (int p = 0; p < SENTINEL_COUNT; p++) {
        sent.add(producer.send(new ProducerRecord<>(TOPIC, p, "sentinel-" + p, "sentinel")));
      }
      for (Future<RecordMetadata> future : sent) future.get(30, TimeUnit.SECONDS);
    }
    produced += SENTINEL_COUNT;
    Member.waitFor("the sentinels", RESTART_TIMEOUT_MS, members,
        () -> Member.all(members).stream().filter(Records::isSentinel).count() >= SENTINEL_COUNT);
    long again = Member.all(members).stream().filter(r -> !Records.isSentinel(r)).count();
    Steps.check(again == 0, again + " records delivered again after the restart");
    return null;
  }

  private String describeGroup() throws Exception {
    ConsumerGroupDescription group =
        admin.describeConsumerGroups(List.of(GROUP)).all().get().get(GROUP);
    Steps.check(group.state() == ConsumerGroupState.STABLE, "group state " + group.state());
    Steps.check(group.members().size() == 2, group.members().size() + " members");
    boolean listed =
        admin.listConsumerGroups().all().get().stream().anyMatch(g -> g.groupId().equals(GROUP));
    Steps.check(listed, "listConsumerGroups does not show the group");
    List<List<Integer>> assigned = new ArrayList<>();
    for (MemberDescription member : group.members()) {
      assigned.add(member.assignment().topicPartitions().stream()
          .filter(partition -> partition.topic().equals(TOPIC))
          .map(TopicPartition::partition)
          .sorted()
          .toList());
    }
    String partitions = Records.checkAssignments(assigned);
    return group.state() + ", " + group.partitionAssignor() + ", partitions " + partitions
        + "; " + leave();
  }

  /** Member 1 leaves: the group rebalances and member 0 owns every partition again. */
  private String leave() throws Exception {
    Member.closeAll(members.subList(1, 2));
    Member.waitFor("member 0 to own every partition again", RESTART_TIMEOUT_MS, members,
        () -> Member.owned(members).size() == PARTITION_COUNT);
    ConsumerGroupDescription group =
        admin.describeConsumerGroups(List.of(GROUP)).all().get().get(GROUP);
    Steps.check(group.members().size() == 1, "after a leave: " + group.members().size()
        + " members");
    return "after member 1 left: 1 member, " + PARTITION_COUNT + " partitions";
  }

  private String listOffsets() throws Exception {
    Map<TopicPartition, Long> earliest = offsets(OffsetSpec.earliest());
    Map<TopicPartition, Long> latest = offsets(OffsetSpec.latest());
    Steps.check(earliest.values().stream().allMatch(o -> o == 0), "earliest " + earliest);
    long total = latest.values().stream().mapToLong(Long::longValue).sum();
    Steps.check(total == produced, "latest offsets add up to " + total + ", produced " + produced);
    return "earliest 0, latest "
        + latest.values().stream().map(String::valueOf).collect(Collectors.joining("/"));
  }

  private String deleteTopic() throws Exception {
    admin.deleteTopics(List.of(TOPIC)).all().get();
    long deadline = System.currentTimeMillis() + 10_000;
    while (admin.listTopics().names().get().contains(TOPIC)) {
      boolean inTime = System.currentTimeMillis() < deadline;
      Steps.check(inTime, "topic still listed 10 s after deleteTopics");
      Thread.sleep(100);
    }
    return null;
  }

  /** An exception and its causes, skipping the ExecutionException wrapper futures throw. */
  static String describe(Throwable error) {
    boolean wrapped = error instanceof ExecutionException && error.getCause() != null;
    Throwable current = wrapped ? error.getCause() : error;
    StringBuilder text = new StringBuilder(name(current));
    for (Throwable cause = current.getCause(); cause != null && cause != current; ) {
      text.append(" (cause: ").append(name(cause)).append(')');
      current = cause;
      cause = cause.getCause();
    }
    return text.toString();
  }

  private static String name(Throwable error) {
    return error.getClass().getSimpleName() + ": " + error.getMessage();
  }
}
