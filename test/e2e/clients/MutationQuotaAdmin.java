// Kafka 3.9's Admin client against a controller_mutation_rate (KIP-599), run as a single-file
// program by test/e2e/controller-mutation-quota-tool.test.ts: it overdraws its bucket with one
// topic, sees the next one refused when it asks not to retry, then creates one with the default
// options, which retry THROTTLING_QUOTA_EXCEEDED until the bucket has refilled.
// Args: <bootstrap> <client-id> <prefix> <partitions of the first topic>.
import java.util.List;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.CreateTopicsOptions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.common.errors.ThrottlingQuotaExceededException;

public class MutationQuotaAdmin {
  public static void main(String[] args) throws Exception {
    Properties props = new Properties();
    props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
    props.put(AdminClientConfig.CLIENT_ID_CONFIG, args[1]);
    String prefix = args[2];
    int partitions = Integer.parseInt(args[3]);
    try (Admin admin = Admin.create(props)) {
      admin.createTopics(List.of(new NewTopic(prefix + "-big", partitions, (short) 1)))
          .all().get();
      System.out.println("created " + prefix + "-big");
      CreateTopicsOptions noRetry = new CreateTopicsOptions().retryOnQuotaViolation(false);
      try {
        admin.createTopics(List.of(new NewTopic(prefix + "-refused", 1, (short) 1)), noRetry)
            .all().get();
        System.out.println("not refused");
      } catch (ExecutionException e) {
        if (!(e.getCause() instanceof ThrottlingQuotaExceededException)) throw e;
        ThrottlingQuotaExceededException t = (ThrottlingQuotaExceededException) e.getCause();
        System.out.println("refused throttleTimeMs=" + t.throttleTimeMs() + " " + t.getMessage());
      }
      long startNs = System.nanoTime();
      admin.createTopics(List.of(new NewTopic(prefix + "-retried", 1, (short) 1))).all().get();
      long waitedMs = (System.nanoTime() - startNs) / 1_000_000;
      System.out.println("created " + prefix + "-retried after waitedMs=" + waitedMs);
    }
  }
}
