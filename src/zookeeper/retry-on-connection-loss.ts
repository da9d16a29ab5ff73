/**
 * Start-up writes that may be repeated (creating persistent paths, the cluster id, a broker id
 * sequence bump): ZooKeeperClient leaves writes lost with their connection to the caller, since
 * only the caller knows whether a repeat is safe. These callers do, so they retry on a lost
 * connection or session until their deadline, as Kafka's ZooKeeper client retries its requests.
 */
import { ConnectionLossError, SessionExpiredError } from "./zookeeper-errors.ts";

/** Pause before a retry: the client reconnects meanwhile (a call also waits for a connection). */
const RETRY_PAUSE_MS = 100;

export async function retryOnConnectionLoss<T>(
  write: () => Promise<T>,
  timeoutMs: number,
): Promise<T> {
  const deadlineMs = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await write();
    } catch (error) {
      const lost = error instanceof ConnectionLossError || error instanceof SessionExpiredError;
      if (!lost || Date.now() >= deadlineMs) throw error;
    }
    await Bun.sleep(RETRY_PAUSE_MS);
  }
}
