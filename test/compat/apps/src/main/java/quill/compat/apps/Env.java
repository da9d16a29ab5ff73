package quill.compat.apps;

import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;

/** What every application check gets from scripts/compat.ts, and helpers they share. */
final class Env {
  /** Every broker's address, so a client still starts while the first one is being killed. */
  static final String BOOTSTRAP =
      System.getenv().getOrDefault("BOOTSTRAP_SERVERS", System.getenv("BOOTSTRAP"));
  /** Brokers in the cluster: topics are replicated to all of them. */
  static final short REPLICATION = Short.parseShort(System.getenv().getOrDefault("BROKERS", "1"));
  /** A fresh directory for this run's files (state dirs, Connect's input and output files). */
  static final Path WORK_DIR = Path.of(System.getenv("WORK_DIR"));

  private Env() {}

  static Admin admin() {
    Properties config = new Properties();
    config.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, BOOTSTRAP);
    return Admin.create(config);
  }

  static void createTopic(Admin admin, String name, int partitions) throws Exception {
    admin.createTopics(List.of(new NewTopic(name, partitions, REPLICATION)))
        .all().get(30, TimeUnit.SECONDS);
  }

  static List<TopicPartition> partitionsOf(String topic, int partitions) {
    List<TopicPartition> out = new ArrayList<>();
    for (int p = 0; p < partitions; p++) out.add(new TopicPartition(topic, p));
    return out;
  }

  static String cleanupPolicy(Admin admin, String topic) throws Exception {
    ConfigResource resource = new ConfigResource(ConfigResource.Type.TOPIC, topic);
    var configs = admin.describeConfigs(List.of(resource)).all().get(30, TimeUnit.SECONDS);
    return configs.get(resource).get("cleanup.policy").value();
  }

  /**
   * Starts `mainClass` in a new JVM on this one's classpath, output to `log` (the child's own
   * logs stay out of the JSON lines on stdout).
   */
  static Process java(String mainClass, List<String> args, Path log) throws Exception {
    List<String> command = new ArrayList<>(List.of(
        Path.of(System.getProperty("java.home"), "bin", "java").toString(),
        "-Xmx512m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
        "-cp", System.getProperty("java.class.path"), mainClass));
    command.addAll(args);
    return new ProcessBuilder(command).redirectErrorStream(true)
        .redirectOutput(log.toFile()).start();
  }

  /**
   * Has scripts/compat.ts kill broker `id` with kill -9 (through the BROKER_CONTROL directory)
   * and returns once it is gone; the harness starts it again on the same data dir and port
   * meanwhile, and waits for that before the next client runs.
   */
  static void killBroker(int id) throws Exception {
    Path control = Path.of(System.getenv("BROKER_CONTROL"));
    Path killed = control.resolve("killed-" + id);
    Files.deleteIfExists(killed);
    Files.writeString(control.resolve("kill-" + id), "");
    Steps.await(30_000, "broker " + id + " to be killed", () ->
        Files.exists(killed) ? null : "still running");
  }

  /** Whether the harness has started broker `id` again since killBroker. */
  static boolean restarted(int id) {
    return Files.exists(Path.of(System.getenv("BROKER_CONTROL"), "restarted-" + id));
  }

  static void writeProperties(Path path, Map<String, String> values) throws Exception {
    StringBuilder text = new StringBuilder();
    values.forEach((k, v) -> text.append(k).append('=').append(v).append('\n'));
    Files.writeString(path, text);
  }

  static void deleteTree(File file) {
    File[] children = file.listFiles();
    if (children != null) for (File child : children) deleteTree(child);
    file.delete();
  }
}
