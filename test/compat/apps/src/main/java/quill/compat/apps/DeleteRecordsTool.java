package quill.compat.apps;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * kafka-delete-records.sh, which is `kafka-run-class.sh org.apache.kafka.tools.DeleteRecordsCommand`:
 * the tool from Kafka's jars, run as its own Java process with an offset JSON file, moves a
 * partition's start; an offset above the high watermark is reported as the tool reports it.
 */
final class DeleteRecordsTool {
  private static final String TOPIC = "compat-delete-records";
  private static final int RECORDS = 100;
  private static final String TOOL = "org.apache.kafka.tools.DeleteRecordsCommand";

  void run(Steps steps) throws Exception {
    try (Admin admin = Env.admin()) {
      steps.run("produce", () -> produce(admin));
      steps.run("delete-records", () -> deleteAt(admin, 40));
      steps.run("above-high-watermark", this::aboveHighWatermark);
    }
  }

  private String produce(Admin admin) throws Exception {
    Env.createTopic(admin, TOPIC, 1);
    Properties config = new Properties();
    config.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, Env.BOOTSTRAP);
    config.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
    config.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
    try (var producer = new KafkaProducer<String, String>(config)) {
      for (int i = 0; i < RECORDS; i++) producer.send(new ProducerRecord<>(TOPIC, "v" + i));
      producer.flush();
    }
    return RECORDS + " records";
  }

  private String runTool(long offset) throws Exception {
    Path json = Env.WORK_DIR.resolve("offsets-" + offset + ".json");
    Files.writeString(json, "{\"partitions\":[{\"topic\":\"" + TOPIC + "\",\"partition\":0,"
        + "\"offset\":" + offset + "}],\"version\":1}");
    Path log = Env.WORK_DIR.resolve("delete-records-" + offset + ".log");
    Process tool = Env.java(TOOL,
        List.of("--bootstrap-server", Env.BOOTSTRAP, "--offset-json-file", json.toString()), log);
    Steps.check(tool.waitFor(60, TimeUnit.SECONDS), "the tool did not finish in 60 s");
    String output = Files.readString(log);
    Steps.check(tool.exitValue() == 0, "exit code " + tool.exitValue() + ": " + output);
    return output;
  }

  private String deleteAt(Admin admin, long offset) throws Exception {
    String output = runTool(offset);
    String expected = "partition: " + TOPIC + "-0\tlow_watermark: " + offset;
    Steps.check(output.contains(expected), "tool output lacks \"" + expected + "\": " + output);
    var partition = new TopicPartition(TOPIC, 0);
    long earliest = admin.listOffsets(Map.of(partition, OffsetSpec.earliest())).all()
        .get(30, TimeUnit.SECONDS).get(partition).offset();
    Steps.check(earliest == offset, "earliest offset " + earliest + ", expected " + offset);
    return "low_watermark " + offset + ", earliest " + earliest;
  }

  private String aboveHighWatermark() throws Exception {
    String output = runTool(RECORDS + 50);
    Steps.check(output.contains("OffsetOutOfRangeException"),
        "expected an OffsetOutOfRangeException in the tool's output: " + output);
    return "OffsetOutOfRangeException";
  }
}
