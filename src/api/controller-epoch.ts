/**
 * Requests from the controller (LeaderAndIsr, UpdateMetadata, StopReplica) carry its epoch. A
 * broker heeds only the newest controller it has heard from: a deposed controller that has not
 * noticed yet gets STALE_CONTROLLER_EPOCH, as in Kafka, and cannot undo its successor's work.
 */
import type { MetadataCache } from "../server/metadata-cache.ts";

/** Records the sender as the controller unless a newer one spoke already; returns whether. */
export function acceptControllerRequest(
  cache: MetadataCache,
  controllerId: number,
  controllerEpoch: number,
): boolean {
  return cache.setController(controllerId, controllerEpoch);
}
