package quill.compat.apps;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ListTransactionsOptions;
import org.apache.kafka.clients.admin.TransactionState;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsConfig;

/**
 * The Kafka Streams word count (WordCountApp) at processing.guarantee=exactly_once_v2: every
 * task's output, changelog writes and input offsets go in one transaction (KIP-447). After a
 * first batch is counted, the application runs in a second JVM, which is killed with SIGKILL
 * while one of its transactions is open (seen with ListTransactions). Started again on the same state
 * directory, it must abort that transaction, restore its store from the changelog read
 * committed, and end with exact counts. Then, with the application running again, the broker
 * coordinating one of its open transactions is killed with kill -9 (and restarted by the
 * harness; on a cluster its partitions and the coordinator move to the other brokers while it
 * is down, and a restart waits out its ZooKeeper session), and the counts must be exact again. A
 * read_committed reader of the output topic must never see a count above the exact one (a line
 * counted twice).
 */
final class StreamsExactlyOnce {
  private static final int LINES = 300;
  private static final String CHILD = "kafka-streams-eos-child";

  private final WordCountApp app =
      new WordCountApp("compat-wordcount-eos", StreamsConfig.EXACTLY_ONCE_V2);
  private KafkaStreams streams;
  private int nextLine = LINES;
  /** The broker broker-kill-mid-transaction killed. */
  private int killed = -1;

  void run(Steps steps) throws Exception {
    try (Admin admin = Env.admin()) {
      steps.run("create-topics", () -> {
        app.createTopics(admin);
        return null;
      });
      steps.run("count", () -> {
        app.produceLines(0, LINES);
        streams = app.start();
        return app.awaitExactCounts(streams);
      });
      steps.run("sigkill-mid-transaction", () -> killMidTransaction(admin));
      steps.run("restore-exact-after-kill", () -> {
        app.produceLines(nextLine, 2 * LINES);
        nextLine = 2 * LINES;
        streams = app.start();
        return app.awaitExactCounts(streams);
      });
      steps.run("broker-kill-mid-transaction", () -> killCoordinatorMidTransaction(admin));
      steps.run("exact-after-broker-kill", () -> {
        app.produceLines(nextLine, 3 * LINES);
        String counts = app.awaitExactCounts(streams);
        return counts + (Env.restarted(killed) ? "" : ", the killed broker still restarting");
      });
      steps.run("output-read-committed", () -> {
        Map<String, Long> highest = app.readOutput("read_committed");
        Steps.check(highest.equals(app.expected),
            "highest counts read " + highest + ", expected " + app.expected);
        return "every word's highest committed count is its exact count";
      });
    } finally {
      if (streams != null) streams.close(Duration.ofSeconds(30));
    }
  }

  /**
   * Hands the application to a second JVM, feeds it lines a few at a time until one of its
   * transactions is seen open (ListTransactions), and kills it then.
   */
  private String killMidTransaction(Admin admin) throws Exception {
    streams.close(Duration.ofSeconds(30));
    streams = null;
    Path log = Env.WORK_DIR.resolve("streams-eos-child.log");
    Process child = Env.java("quill.compat.apps.Main", List.of(CHILD), log);
    String open;
    try {
      Steps.await(60_000, "the second JVM's application RUNNING", () -> {
        Steps.check(child.isAlive(), "the second JVM exited; see " + log);
        return Files.readString(log).contains("state RUNNING") ? null : "not running yet";
      });
      open = null;
      while (open == null && nextLine < LINES + LINES / 2) {
        app.produceLines(nextLine, nextLine + 5);
        nextLine += 5;
        open = ongoingTransaction(admin);
      }
      Steps.check(open != null, "no transaction of the application was seen open");
    } finally {
      child.destroyForcibly();
      child.waitFor();
    }
    return "SIGKILL with " + open + " ongoing after line " + nextLine;
  }

  /**
   * Feeds the application running in this JVM until one of its transactions is open, then has
   * scripts/compat.ts kill -9 the broker coordinating that transaction and start it again. The
   * application goes on through the failover (on a cluster the id's __transaction_state
   * partition moves to another broker, which finishes or aborts what was open).
   */
  private String killCoordinatorMidTransaction(Admin admin) throws Exception {
    String open = null;
    while (open == null && nextLine < 2 * LINES + LINES / 2) {
      app.produceLines(nextLine, nextLine + 5);
      nextLine += 5;
      open = ongoingTransaction(admin);
    }
    Steps.check(open != null, "no transaction of the application was seen open");
    int coordinator = admin.describeTransactions(List.of(open)).description(open)
        .get(30, TimeUnit.SECONDS).coordinatorId();
    Env.killBroker(coordinator);
    killed = coordinator;
    return "kill -9 of broker " + coordinator + ", coordinator of " + open
        + " (ongoing after line " + nextLine + ")";
  }

  private String ongoingTransaction(Admin admin) throws Exception {
    var options = new ListTransactionsOptions().filterStates(List.of(TransactionState.ONGOING));
    for (var txn : admin.listTransactions(options).all().get(30, TimeUnit.SECONDS)) {
      if (txn.transactionalId().startsWith(app.appId)) return txn.transactionalId();
    }
    return null;
  }

  /** The second JVM: runs the application until it is killed, printing its state changes. */
  static void runChild() throws Exception {
    WordCountApp app = new WordCountApp("compat-wordcount-eos", StreamsConfig.EXACTLY_ONCE_V2);
    KafkaStreams streams = app.start(
        (now, old) -> System.out.println("state " + now));
    Thread.sleep(Long.MAX_VALUE);
    streams.close();
  }
}
