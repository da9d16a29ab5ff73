package quill.compat;

import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/** Runs steps in order, printing one JSON line each; a step whose dependency failed is skipped. */
final class Steps {
  interface Body {
    String run() throws Exception;
  }

  // Map.of takes at most ten pairs, so the table is built from alternating names and lists.
  private static final Map<String, List<String>> DEPENDS_ON = table(
      "wrong-password", List.of(),
      "create-topic", List.of(),
      "produce-gzip", List.of("create-topic"),
      "produce-zstd", List.of("create-topic"),
      "consume-group", List.of("produce-gzip", "produce-zstd"),
      "commit", List.of("consume-group"),
      "restart-no-redelivery", List.of("consume-group", "commit"),
      "describe-group", List.of("restart-no-redelivery"),
      "list-offsets", List.of("produce-gzip", "produce-zstd"),
      "transactions", List.of("create-topic"),
      "consume-transform-produce", List.of("transactions"),
      "delete-topic", List.of("create-topic"));

  private final Set<String> failed = new HashSet<>();
  /** ONLY_STEPS (comma-separated) runs just those steps; the others print no line. */
  private static final String ONLY_STEPS = System.getenv("ONLY_STEPS");

  @SuppressWarnings("unchecked")
  private static Map<String, List<String>> table(Object... pairs) {
    Map<String, List<String>> table = new HashMap<>();
    for (int i = 0; i < pairs.length; i += 2) {
      table.put((String) pairs[i], (List<String>) pairs[i + 1]);
    }
    return Map.copyOf(table);
  }

  void run(String step, Body body) {
    if (ONLY_STEPS != null && !List.of(ONLY_STEPS.split(",")).contains(step)) return;
    for (String dependency : DEPENDS_ON.get(step)) {
      if (failed.contains(dependency)) {
        failed.add(step);
        emit(Map.of("step", step, "skipped", "skipped (after " + dependency + " failed)"));
        return;
      }
    }
    long startedMs = System.currentTimeMillis();
    Map<String, Object> line = new LinkedHashMap<>();
    line.put("step", step);
    try {
      String detail = body.run();
      line.put("ok", true);
      if (detail != null) line.put("detail", detail);
    } catch (Exception error) {
      failed.add(step);
      line.put("ok", false);
      line.put("error", Main.describe(error));
    }
    line.put("ms", System.currentTimeMillis() - startedMs);
    emit(line);
  }

  static void check(boolean condition, String message) {
    if (!condition) throw new IllegalStateException(message);
  }

  /** Prints a flat JSON object of strings, numbers and booleans. */
  static synchronized void emit(Map<String, ?> line) {
    StringBuilder json = new StringBuilder("{");
    for (var entry : line.entrySet()) {
      if (json.length() > 1) json.append(',');
      json.append(quote(entry.getKey())).append(':');
      Object value = entry.getValue();
      json.append(value instanceof String ? quote((String) value) : String.valueOf(value));
    }
    System.out.println(json.append('}'));
    System.out.flush();
  }

  private static String quote(String text) {
    StringBuilder quoted = new StringBuilder("\"");
    for (char c : text.toCharArray()) {
      if (c == '"' || c == '\\') quoted.append('\\').append(c);
      else if (c < 0x20) quoted.append(String.format("\\u%04x", (int) c));
      else quoted.append(c);
    }
    return quoted.append('"').toString();
  }
}
