package quill.compat.apps;

import java.util.Map;
import org.apache.kafka.common.utils.AppInfoParser;

/**
 * Real Kafka applications against Quill, one per run: `kafka-streams` (a Streams word count),
 * `kafka-streams-eos` (the same at exactly_once_v2, with a SIGKILL of a second JVM running it),
 * `kafka-connect` (a distributed Connect worker with the FileStream connectors) or
 * `kafka-delete-records` (Kafka's kafka-delete-records.sh). Each prints one JSON line per step.
 */
public final class Main {
  public static void main(String[] args) throws Exception {
    String app = args.length > 0 ? args[0] : "";
    Steps.emit(Map.of("client", app, "version", AppInfoParser.getVersion()));
    Steps steps = new Steps();
    switch (app) {
      case "kafka-streams" -> new StreamsWordCount().run(steps);
      case "kafka-streams-eos" -> new StreamsExactlyOnce().run(steps);
      case "kafka-streams-eos-child" -> StreamsExactlyOnce.runChild();
      case "kafka-connect" -> new ConnectFileStream().run(steps);
      case "kafka-delete-records" -> new DeleteRecordsTool().run(steps);
      default -> throw new IllegalArgumentException("unknown application " + app);
    }
    System.exit(0);
  }
}
