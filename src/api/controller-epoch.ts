/**
 * Requests from the controller (LeaderAndIsr, UpdateMetadata, StopReplica) carry its epoch. A
 * broker heeds only the newest controller it has heard from: a deposed controller that has not
 * noticed yet gets STALE_CONTROLLER_EPOCH, as in Kafka, and cannot undo its successor's work.
 */
import type { MetadataCache } from "../server/metadata-cache.ts";
import type { BrokerServices } from "./broker-services.ts";

/**
 * Records the sender as the controller unless a newer one spoke already; returns whether. In a
 * cluster the sender must also be the controller ZooKeeper names, with its epoch
 * (`ControllerRequestGuard`): an epoch no controller has yet is a forgery, not news.
 */
export async function acceptControllerRequest(
  broker: Pick<BrokerServices, "metadataCache" | "controllerRequestGuard">,
  controllerId: number,
  controllerEpoch: number,
): Promise<boolean> {
  const cache = broker.metadataCache;
  if (controllerEpoch < cache.controllerEpoch) return false;
  const guard = broker.controllerRequestGuard;
  if (guard !== null && !(await guard.isCurrentController(controllerId, controllerEpoch))) {
    return false;
  }
  return cache.setController(controllerId, controllerEpoch);
}

/** Longest wait for this broker's own registration before judging a request's broker epoch. */
const REGISTRATION_WAIT_MS = 30_000;

/**
 * Broker epochs (KIP-380): a controller request carries the epoch of the registration it was
 * meant for. One meant for an earlier incarnation of this broker (restarted on the same port, or
 * registered again after its session expired) is stale and answered STALE_BROKER_EPOCH, as
 * Kafka's isBrokerEpochStale. This broker listens before it registers, and a controller that
 * read the new registration may speak before the czxid is read back, so a request with an epoch
 * waits for the registration first.
 */
export async function isStaleBrokerEpoch(
  cache: MetadataCache,
  epochInRequest: bigint,
): Promise<boolean> {
  if (epochInRequest === -1n) return false;
  await cache.whenBrokerEpochKnown(REGISTRATION_WAIT_MS);
  return cache.isStaleBrokerEpoch(epochInRequest);
}
