package quill.compat;

import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.CommonClientConfigs;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.common.config.SaslConfigs;
import org.apache.kafka.common.config.SslConfigs;
import org.apache.kafka.common.errors.SaslAuthenticationException;

/**
 * The connection's security settings from the environment (see scenario.ts): unset
 * SECURITY_PROTOCOL means PLAINTEXT; SASL_SSL adds SCRAM with SASL_USERNAME/SASL_PASSWORD and
 * trusts the CA in SSL_CA_LOCATION (a PEM file), as a user configures the client.
 */
final class Security {
  static final String PROTOCOL = System.getenv("SECURITY_PROTOCOL");

  private Security() {}

  static boolean enabled() {
    return PROTOCOL != null && !PROTOCOL.isEmpty();
  }

  /** Adds the security settings to a client's config; returns it for chaining. */
  static Properties apply(Properties config) {
    return apply(config, System.getenv("SASL_PASSWORD"));
  }

  private static Properties apply(Properties config, String password) {
    if (!enabled()) return config;
    config.put(CommonClientConfigs.SECURITY_PROTOCOL_CONFIG, PROTOCOL);
    config.put(SaslConfigs.SASL_MECHANISM, System.getenv("SASL_MECHANISM"));
    config.put(SaslConfigs.SASL_JAAS_CONFIG,
        "org.apache.kafka.common.security.scram.ScramLoginModule required username=\""
            + System.getenv("SASL_USERNAME") + "\" password=\"" + password + "\";");
    config.put(SslConfigs.SSL_TRUSTSTORE_TYPE_CONFIG, "PEM");
    config.put(SslConfigs.SSL_TRUSTSTORE_LOCATION_CONFIG, System.getenv("SSL_CA_LOCATION"));
    return config;
  }

  /** An Admin with a wrong password must fail with the client's SaslAuthenticationException. */
  static String wrongPassword() throws Exception {
    Properties config = new Properties();
    config.put(CommonClientConfigs.BOOTSTRAP_SERVERS_CONFIG, Main.BOOTSTRAP);
    config.put(CommonClientConfigs.RETRIES_CONFIG, "0");
    try (Admin admin = Admin.create(apply(config, "not-" + System.getenv("SASL_PASSWORD")))) {
      admin.describeCluster().nodes().get(30, TimeUnit.SECONDS);
    } catch (ExecutionException error) {
      Throwable cause = error.getCause();
      Steps.check(cause instanceof SaslAuthenticationException, "failed with " + cause);
      return cause.getClass().getSimpleName() + ": " + cause.getMessage();
    }
    throw new IllegalStateException("an Admin with a wrong password described the cluster");
  }
}
