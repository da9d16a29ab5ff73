/**
 * Opening the broker's one ZooKeeper session from its config (`zookeeper.connect`,
 * `zookeeper.session.timeout.ms`, `zookeeper.connection.timeout.ms`), with the errors an
 * operator can act on instead of a stack trace.
 */
import type { BrokerConfig } from "../config/broker-config.ts";
import { ConfigError } from "../config/config-error.ts";
import { assert } from "../util/assert.ts";
import { InvalidConnectStringError, parseConnectString } from "../zookeeper/connect-string.ts";
import { ZooKeeperClient } from "../zookeeper/zookeeper-client.ts";
import { ZooKeeperUnavailableError } from "../zookeeper/zookeeper-errors.ts";

/**
 * The broker cannot start in cluster mode for a reason outside Quill: ZooKeeper unreachable,
 * or its broker id held by another live broker. `quill serve` prints the message as one line
 * and exits with 1, so a supervisor sees a failed start rather than a hang.
 */
export class ClusterStartupError extends Error {
  override readonly name: string = "ClusterStartupError";
}

/**
 * Connects to the ensemble and resolves once a session exists. Fails with ClusterStartupError
 * after `zookeeper.connection.timeout.ms` (default: the session timeout), as Kafka's broker does
 * when ZooKeeper is down at startup, and with ConfigError for a malformed connect string.
 */
export async function connectZooKeeper(config: BrokerConfig): Promise<ZooKeeperClient> {
  const connectString = config["zookeeper.connect"];
  assert(connectString !== null, "connectZooKeeper called without zookeeper.connect");
  try {
    parseConnectString(connectString);
  } catch (error) {
    if (error instanceof InvalidConnectStringError) {
      throw new ConfigError(`zookeeper.connect: ${error.message}`);
    }
    throw error;
  }
  const sessionTimeoutMs = config["zookeeper.session.timeout.ms"];
  const connectTimeoutMs = config["zookeeper.connection.timeout.ms"] ?? sessionTimeoutMs;
  try {
    return await ZooKeeperClient.connect(connectString, { sessionTimeoutMs, connectTimeoutMs });
  } catch (error) {
    if (!(error instanceof ZooKeeperUnavailableError)) throw error;
    throw new ClusterStartupError(
      `cannot reach ZooKeeper at ${connectString} within ${connectTimeoutMs} ms ` +
        "(zookeeper.connection.timeout.ms); is it running?",
      { cause: error },
    );
  }
}
