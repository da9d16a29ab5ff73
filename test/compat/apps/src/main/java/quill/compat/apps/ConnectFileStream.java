package quill.compat.apps;

import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;

/**
 * A Kafka Connect worker in distributed mode (org.apache.kafka.connect.cli.ConnectDistributed,
 * its own JVM) keeping its configs, offsets and statuses in compacted topics on Quill, running
 * the FileStream source (lines of a file into a topic) and sink (the topic into another file).
 * The worker is stopped (SIGTERM, as an operator stops it) while more lines are written, then
 * started again: the output file must end up holding every input line once, in order.
 */
final class ConnectFileStream {
  private static final String LINES_TOPIC = "compat-connect-lines";
  private static final List<String> WORKER_TOPICS =
      List.of("compat-connect-configs", "compat-connect-offsets", "compat-connect-status");
  private static final int LINES_PER_BATCH = 500;
  private static final int OFFSETS_PIECE_LINES = 50;
  private static final int OFFSET_PARTITIONS = 5;
  private static final long CLEANED_TIMEOUT_MS = 90_000;
  private static final long WORKER_START_TIMEOUT_MS = 90_000;
  private static final long COPY_TIMEOUT_MS = 90_000;

  private final Path input = Env.WORK_DIR.resolve("connect-input.txt");
  private final Path output = Env.WORK_DIR.resolve("connect-output.txt");
  private final Path workerConfig = Env.WORK_DIR.resolve("connect-worker.properties");
  private final HttpClient http = HttpClient.newHttpClient();
  private final List<String> written = new ArrayList<>();
  private int restPort;
  private Process worker;
  private int workerRuns = 0;

  void run(Steps steps) throws Exception {
    try (Admin admin = Env.admin()) {
      steps.run("worker-start", () -> {
        Env.createTopic(admin, LINES_TOPIC, 1);
        writeWorkerConfig();
        startWorker();
        return "REST on port " + restPort;
      });
      steps.run("internal-topics-compacted", () -> {
        for (String topic : WORKER_TOPICS) {
          String policy = Env.cleanupPolicy(admin, topic);
          Steps.check(policy.equals("compact"), topic + " has cleanup.policy " + policy);
        }
        return String.join(", ", WORKER_TOPICS) + ": compact";
      });
      steps.run("file-source-to-sink", () -> {
        Files.writeString(input, "");
        putConnector("compat-file-source", Map.of(
            "connector.class", "org.apache.kafka.connect.file.FileStreamSourceConnector",
            "file", input.toString(), "topic", LINES_TOPIC, "tasks.max", "1"));
        putConnector("compat-file-sink", Map.of(
            "connector.class", "org.apache.kafka.connect.file.FileStreamSinkConnector",
            "file", output.toString(), "topics", LINES_TOPIC, "tasks.max", "1"));
        appendLines(0, LINES_PER_BATCH);
        return awaitOutputExact();
      });
      steps.run("offsets-topic-cleaned", () -> {
        // More lines in three pieces, each offset commit (1 s apart) into a new segment of
        // the offsets topic (segment.ms below): superseded offsets for the broker to clean.
        for (int piece = 0; piece < 3; piece++) {
          appendLines(written.size(), OFFSETS_PIECE_LINES);
          Thread.sleep(1_200);
        }
        return awaitOffsetsCleaned();
      });
      steps.run("restart-resumes-exactly", () -> {
        stopWorker();
        appendLines(written.size(), LINES_PER_BATCH);
        startWorker();
        return awaitOutputExact();
      });
    } finally {
      if (worker != null && worker.isAlive()) stopWorker();
    }
  }

  private void writeWorkerConfig() throws Exception {
    try (ServerSocket socket = new ServerSocket(0)) {
      restPort = socket.getLocalPort();
    }
    Map<String, String> config = new LinkedHashMap<>();
    config.put("bootstrap.servers", Env.BOOTSTRAP);
    config.put("group.id", "compat-connect");
    config.put("listeners", "http://127.0.0.1:" + restPort);
    config.put("key.converter", "org.apache.kafka.connect.storage.StringConverter");
    config.put("value.converter", "org.apache.kafka.connect.storage.StringConverter");
    config.put("config.storage.topic", WORKER_TOPICS.get(0));
    config.put("offset.storage.topic", WORKER_TOPICS.get(1));
    config.put("status.storage.topic", WORKER_TOPICS.get(2));
    config.put("config.storage.replication.factor", String.valueOf(Env.REPLICATION));
    config.put("offset.storage.replication.factor", String.valueOf(Env.REPLICATION));
    config.put("status.storage.replication.factor", String.valueOf(Env.REPLICATION));
    config.put("offset.storage.partitions", String.valueOf(OFFSET_PARTITIONS));
    config.put("status.storage.partitions", "1");
    config.put("offset.flush.interval.ms", "1000");
    // Topic configs of the offsets topic (Connect passes offset.storage.* on, KIP-605): a new
    // segment for every commit at least 100 ms after the last, so the cleaner has sealed ones.
    config.put("offset.storage.segment.ms", "100");
    // The FileStream connectors are on the worker's classpath; no plugin directory is scanned.
    config.put("plugin.discovery", "only_scan");
    Env.writeProperties(workerConfig, config);
  }

  private void startWorker() throws Exception {
    workerRuns++;
    Path log = Env.WORK_DIR.resolve("connect-worker-" + workerRuns + ".log");
    worker = Env.java("org.apache.kafka.connect.cli.ConnectDistributed",
        List.of(workerConfig.toString()), log);
    Steps.await(WORKER_START_TIMEOUT_MS, "the worker's REST API (log in " + log + ")", () -> {
      if (!worker.isAlive()) {
        throw new IllegalStateException("the worker exited with " + worker.exitValue()
            + "; log in " + log);
      }
      try {
        int status = get("/connectors").statusCode();
        return status == 200 ? null : "GET /connectors: " + status;
      } catch (java.io.IOException notYet) {
        return "REST not up: " + notYet.getMessage();
      }
    });
  }

  /** SIGTERM: the worker commits its source and sink offsets as it stops. */
  private void stopWorker() throws Exception {
    worker.destroy();
    Steps.check(worker.waitFor(60, TimeUnit.SECONDS), "the worker did not stop in 60 s");
  }

  private HttpResponse<String> get(String path) throws Exception {
    var request = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + restPort + path))
        .GET().build();
    return http.send(request, HttpResponse.BodyHandlers.ofString());
  }

  private void putConnector(String name, Map<String, String> config) throws Exception {
    StringBuilder json = new StringBuilder("{");
    config.forEach((k, v) -> json.append(json.length() > 1 ? "," : "")
        .append('"').append(k).append("\":\"").append(v).append('"'));
    json.append('}');
    var request = HttpRequest.newBuilder(
            URI.create("http://127.0.0.1:" + restPort + "/connectors/" + name + "/config"))
        .header("Content-Type", "application/json")
        .PUT(HttpRequest.BodyPublishers.ofString(json.toString())).build();
    // A worker that has just joined its group may answer 409 (rebalance) for a moment.
    Steps.await(60_000, "PUT connector " + name, () -> {
      var response = http.send(request, HttpResponse.BodyHandlers.ofString());
      int status = response.statusCode();
      return status == 200 || status == 201 ? null : status + " " + response.body();
    });
  }

  private void appendLines(int from, int count) throws Exception {
    StringBuilder text = new StringBuilder();
    for (int i = from; i < from + count; i++) {
      String line = String.format("line %05d", i);
      written.add(line);
      text.append(line).append('\n');
    }
    Files.writeString(input, text, StandardOpenOption.APPEND);
  }

  /**
   * Reads the offsets topic from its start to its end until some offsets are missing in a
   * partition: the broker's cleaner removed superseded source offsets.
   */
  private String awaitOffsetsCleaned() throws Exception {
    return Compacted.awaitGaps(WORKER_TOPICS.get(1), OFFSET_PARTITIONS, CLEANED_TIMEOUT_MS);
  }

  /** Waits until the sink's file has as many lines as were written, then compares them. */
  private String awaitOutputExact() throws Exception {
    Steps.await(COPY_TIMEOUT_MS, written.size() + " lines in " + output, () -> {
      int lines = Files.exists(output) ? Files.readAllLines(output).size() : 0;
      return lines >= written.size() ? null : lines + " lines so far";
    });
    Thread.sleep(2_000); // Duplicates would arrive after the last new line; give them time.
    List<String> copied = Files.readAllLines(output);
    Steps.check(copied.equals(written), "output differs from input: " + copied.size()
        + " lines for " + written.size() + " written" + firstDifference(copied));
    return copied.size() + " lines, each once and in order";
  }

  private String firstDifference(List<String> copied) {
    for (int i = 0; i < Math.min(copied.size(), written.size()); i++) {
      if (!copied.get(i).equals(written.get(i))) {
        return "; line " + i + " is \"" + copied.get(i) + "\", expected \"" + written.get(i) + "\"";
      }
    }
    return "";
  }
}
