/**
 * Client quotas at start and while running: every stored quota is loaded before any listener
 * accepts a request, then kept current from the store's change notices until the broker stops.
 */
import type { BrokerConfig } from "../config/broker-config.ts";
import {
  type ClientQuotaStore,
  LocalClientQuotaStore,
  ZooKeeperClientQuotaStore,
} from "../metadata/client-quota-store.ts";
import { ClientQuotaManager } from "../server/client-quota-manager.ts";
import type { Logger } from "../util/logger.ts";
import type { ZooKeeperClient } from "../zookeeper/zookeeper-client.ts";
import type { CleanupStack } from "./cleanup-stack.ts";

export async function startClientQuotas(
  config: BrokerConfig,
  zooKeeper: ZooKeeperClient | null,
  log: Logger,
  cleanups: CleanupStack,
): Promise<{ clientQuotas: ClientQuotaManager; clientQuotaStore: ClientQuotaStore }> {
  const quotaLog = log.child("ClientQuotaManager");
  const store: ClientQuotaStore =
    zooKeeper === null
      ? new LocalClientQuotaStore(config["log.dirs"][0]!)
      : new ZooKeeperClientQuotaStore(zooKeeper, quotaLog);
  const manager = new ClientQuotaManager(
    { samples: config["quota.window.num"], sampleMs: config["quota.window.size.seconds"] * 1000 },
    {
      samples: config["controller.quota.window.num"],
      sampleMs: config["controller.quota.window.size.seconds"] * 1000,
    },
  );
  manager.replaceAll(await store.loadAll());
  const reload = () => {
    store.loadAll().then(
      (all) => manager.replaceAll(all),
      (error: unknown) => quotaLog.warn(`client quotas not reloaded: ${String(error)}`),
    );
  };
  const stop = store.follow((path, configs) => {
    quotaLog.info(`client quotas of ${path} now ${JSON.stringify(configs)}`);
    manager.update(path, configs);
  }, reload);
  cleanups.push("client quotas", async () => stop());
  return { clientQuotas: manager, clientQuotaStore: store };
}
