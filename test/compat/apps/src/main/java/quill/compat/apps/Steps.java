package quill.compat.apps;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Runs an application's steps in order, printing one JSON line each (the contract of
 * test/compat/support/scenario.ts); once a step fails the later ones are reported as skipped,
 * since each builds on the state the previous ones left.
 */
final class Steps {
  interface Body {
    String run() throws Exception;
  }

  private String failedStep = null;

  void run(String step, Body body) {
    if (failedStep != null) {
      emit(Map.of("step", step, "skipped", "skipped (after " + failedStep + " failed)"));
      return;
    }
    long startedMs = System.currentTimeMillis();
    Map<String, Object> line = new LinkedHashMap<>();
    line.put("step", step);
    try {
      String detail = body.run();
      line.put("ok", true);
      if (detail != null) line.put("detail", detail);
    } catch (Exception error) {
      failedStep = step;
      line.put("ok", false);
      line.put("error", describe(error));
    }
    line.put("ms", System.currentTimeMillis() - startedMs);
    emit(line);
  }

  static void check(boolean condition, String message) {
    if (!condition) throw new IllegalStateException(message);
  }

  static String describe(Throwable error) {
    Throwable cause = error;
    while (cause.getCause() != null && cause.getCause() != cause) cause = cause.getCause();
    return error == cause
        ? error.getClass().getSimpleName() + ": " + error.getMessage()
        : error.getClass().getSimpleName() + ": " + error.getMessage() + " (cause "
            + cause.getClass().getSimpleName() + ": " + cause.getMessage() + ")";
  }

  /** Waits until `probe` holds, checking every 200 ms; fails with `what` after `timeoutMs`. */
  static void await(long timeoutMs, String what, Probe probe) throws Exception {
    long deadline = System.currentTimeMillis() + timeoutMs;
    String last = "";
    while (System.currentTimeMillis() < deadline) {
      last = probe.check();
      if (last == null) return;
      Thread.sleep(200);
    }
    throw new IllegalStateException("timed out after " + timeoutMs + " ms waiting for " + what
        + ": " + last);
  }

  /** null when the condition holds, else what is still missing. */
  interface Probe {
    String check() throws Exception;
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
