/**
 * What the broker does when a log dir fails (KIP-112), after the replica manager took its
 * partitions offline: tells the controller through a `/log_dir_event_notification` znode, as
 * Kafka's ZooKeeper-mode broker does, so that leadership of those partitions moves elsewhere.
 * With no log dir left the broker halts, as Kafka does: it could serve nothing.
 */
import { encodeLogDirEvent, LOG_DIR_EVENT_PREFIX } from "../metadata/kafka-znodes.ts";
import type { Logger } from "../util/logger.ts";
import type { ZooKeeperClient } from "../zookeeper/zookeeper-client.ts";
import { ZooKeeperUnavailableError } from "../zookeeper/zookeeper-errors.ts";

/** Attempts at writing the notification while ZooKeeper is unreachable, and the pause between. */
const NOTIFY_ATTEMPTS_MAX = 60;
const NOTIFY_RETRY_MS = 1_000;

export function logDirFailureHandler(
  zk: ZooKeeperClient | null,
  brokerId: number,
  log: Logger,
  halt: (code: number) => void = (code) => process.exit(code),
): (logDir: string, allOffline: boolean) => void {
  return (logDir, allOffline) => {
    if (allOffline) {
      log.error(`halting broker ${brokerId}: every log dir has failed (the last: ${logDir})`);
      halt(1);
      return;
    }
    if (zk !== null) void notifyController(zk, brokerId, log);
  };
}

/**
 * A sequential create that a lost connection may have applied is retried anyway: a second
 * notification only makes the controller ask this broker once more.
 */
async function notifyController(zk: ZooKeeperClient, brokerId: number, log: Logger) {
  for (let attempt = 1; attempt <= NOTIFY_ATTEMPTS_MAX; attempt++) {
    try {
      const path = await zk.create(LOG_DIR_EVENT_PREFIX, encodeLogDirEvent(brokerId), {
        mode: "persistent-sequential",
        createParents: true,
      });
      log.info(`told the controller of the failed log dir in ${path}`);
      return;
    } catch (error) {
      if (!(error instanceof ZooKeeperUnavailableError)) {
        log.error(`cannot write the log dir event notification: ${String(error)}`);
        return;
      }
      await Bun.sleep(NOTIFY_RETRY_MS);
    }
  }
  log.error(`gave up writing the log dir event notification after ${NOTIFY_ATTEMPTS_MAX} tries`);
}
