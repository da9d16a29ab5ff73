import java.io.BufferedReader;
import java.io.ByteArrayOutputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.PrintStream;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Base64;

/**
 * Runs Kafka command-line tools (the main classes the kafka-*.sh scripts start) one after another
 * in this one JVM, so a test pays the JVM's start and the tools' class loading once instead of
 * once per command (test/support/tool-jvm.ts). One request per stdin line: an id, the main class
 * and the arguments, tab-separated and each Base64; one answer per stdout line: the id, the exit
 * code, the tool's stdout and its stderr (Base64). Each request runs in its own thread, so
 * requests may overlap; what a tool prints, from that thread or threads it starts, is captured for
 * that request. Exit.exit (every Kafka tool calls it, the Scala ones through kafka.utils.Exit; the
 * class is org.apache.kafka.common.utils.Exit up to 3.9, ...utils.internals.Exit in 4.x)
 * ends the request with its code instead of the JVM: the first call's code counts and what is
 * printed after it is dropped, as if the process had ended there (a tool whose catch-all catches
 * the exception cannot print more or change the code). An exception out of main is exit code 1
 * with its stack trace, as the JVM would print it.
 */
public final class ToolRunner {
  private static final class ExitCalled extends RuntimeException {
    final int code;

    ExitCalled(int code) {
      super("exit " + code, null, false, false);
      this.code = code;
    }
  }

  /** What one request printed, and the code of its first Exit.exit (null while it runs). */
  private static final class Request {
    final ByteArrayOutputStream[] streams = {
      new ByteArrayOutputStream(), new ByteArrayOutputStream()
    };
    volatile Integer exitCode;
  }

  /** The request the current thread works for; null outside a request. */
  private static final InheritableThreadLocal<Request> CURRENT = new InheritableThreadLocal<>();

  private static final OutputStream DROPPED = OutputStream.nullOutputStream();

  /** Writes to the current request's buffer, else to `fallback` (the JVM's own stderr). */
  private static final class Routed extends OutputStream {
    private final int which;
    private final OutputStream fallback;

    Routed(int which, OutputStream fallback) {
      this.which = which;
      this.fallback = fallback;
    }

    private OutputStream target() {
      Request request = CURRENT.get();
      if (request == null) return fallback;
      return request.exitCode == null ? request.streams[which] : DROPPED;
    }

    @Override
    public void write(int b) throws java.io.IOException {
      OutputStream t = target();
      synchronized (t) {
        t.write(b);
      }
    }

    @Override
    public void write(byte[] b, int off, int len) throws java.io.IOException {
      OutputStream t = target();
      synchronized (t) {
        t.write(b, off, len);
      }
    }
  }

  private static PrintStream answers;

  public static void main(String[] argv) throws Exception {
    answers = new PrintStream(System.out, true, StandardCharsets.UTF_8);
    PrintStream jvmErr = System.err;
    // Before any tool class loads: Scala's Console and loggers keep the streams they first see.
    System.setOut(new PrintStream(new Routed(0, jvmErr), true, StandardCharsets.UTF_8));
    System.setErr(new PrintStream(new Routed(1, jvmErr), true, StandardCharsets.UTF_8));
    for (String exitClass : EXIT_CLASSES) installExit(exitClass);
    BufferedReader in =
        new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    answers.println("READY");
    for (String line; (line = in.readLine()) != null; ) {
      String[] fields = line.split("\t", -1);
      Thread thread = new Thread(() -> serve(fields), "tool-" + fields[0]);
      thread.setDaemon(true);
      thread.start();
    }
    Runtime.getRuntime().halt(0);
  }

  private static final String[] EXIT_CLASSES = {
    "org.apache.kafka.common.utils.Exit", "org.apache.kafka.common.utils.internals.Exit"
  };

  /** Makes the Exit class's exit and halt end the request (see exit), if the class exists. */
  private static void installExit(String name) throws ReflectiveOperationException {
    Class<?> exitClass;
    try {
      exitClass = Class.forName(name);
    } catch (ClassNotFoundException absent) {
      return;
    }
    Class<?> procedure = Class.forName(name + "$Procedure");
    Object handler = Proxy.newProxyInstance(
        procedure.getClassLoader(),
        new Class<?>[] {procedure},
        (proxy, method, args) -> {
          switch (method.getName()) {
            case "equals":
              return proxy == args[0];
            case "hashCode":
              return System.identityHashCode(proxy);
            case "toString":
              return "ToolRunner exit procedure";
            default:
              break;
          }
          exit((Integer) args[0]);
          return null;
        });
    exitClass.getMethod("setExitProcedure", procedure).invoke(null, handler);
    exitClass.getMethod("setHaltProcedure", procedure).invoke(null, handler);
  }

  private static void exit(int code) {
    Request request = CURRENT.get();
    if (request != null && request.exitCode == null) {
      System.out.flush();
      System.err.flush();
      request.exitCode = code;
    }
    throw new ExitCalled(code);
  }

  private static void serve(String[] fields) {
    String id = fields[0];
    String[] decoded = Arrays.stream(fields)
        .skip(1)
        .map(f -> new String(Base64.getDecoder().decode(f), StandardCharsets.UTF_8))
        .toArray(String[]::new);
    Request request = new Request();
    CURRENT.set(request);
    int returned = run(decoded[0], Arrays.copyOfRange(decoded, 1, decoded.length));
    System.out.flush();
    System.err.flush();
    Integer exited = request.exitCode;
    int code = exited == null ? returned : exited;
    request.exitCode = code;
    CURRENT.remove();
    String out;
    String err;
    synchronized (request.streams[0]) {
      out = Base64.getEncoder().encodeToString(request.streams[0].toByteArray());
    }
    synchronized (request.streams[1]) {
      err = Base64.getEncoder().encodeToString(request.streams[1].toByteArray());
    }
    synchronized (answers) {
      answers.println(id + "\t" + code + "\t" + out + "\t" + err);
    }
  }

  private static int run(String mainClass, String[] args) {
    try {
      Method main = Class.forName(mainClass).getMethod("main", String[].class);
      main.invoke(null, (Object) args);
      return 0;
    } catch (InvocationTargetException e) {
      Throwable cause = e.getCause();
      if (cause instanceof ExitCalled) return ((ExitCalled) cause).code;
      // A caught-and-rethrown exit still ends with the first code (serve reads it).
      if (CURRENT.get().exitCode != null) return 1;
      System.err.print("Exception in thread \"main\" ");
      cause.printStackTrace();
      return 1;
    } catch (ReflectiveOperationException e) {
      System.err.println("Error: could not run " + mainClass + ": " + e);
      return 1;
    }
  }
}
