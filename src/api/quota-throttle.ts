/**
 * What a request costs against its client's quotas, as Kafka's KafkaApis records it: a produce
 * its request bytes (producer_byte_rate), every request its handler time as a share of one
 * thread (request_percentage, not for acks=0 produces), a consumer fetch its response bytes
 * (consumer_byte_rate, recorded by the fetch handler, which answers without records when over).
 * The throttle time is the largest of these; the response carries it and the connection is then
 * muted for it (KIP-219). Inter-broker APIs, follower fetches and the SASL exchange are exempt.
 */
import { ApiKey, type ProduceRequest } from "../protocol/generated/index.ts";
import type { ClientQuotaManager } from "../server/client-quota-manager.ts";
import type { ControllerMutationQuota } from "../server/controller-mutation-quota.ts";
import type { RequestContext } from "./handler.ts";

/** Kafka exempts these from request quotas (cluster actions and the authentication phase). */
const REQUEST_QUOTA_EXEMPT: ReadonlySet<number> = new Set([
  ApiKey.ApiVersions,
  ApiKey.SaslHandshake,
  ApiKey.SaslAuthenticate,
  ApiKey.LeaderAndIsr,
  ApiKey.StopReplica,
  ApiKey.UpdateMetadata,
  ApiKey.ControlledShutdown,
  ApiKey.WriteTxnMarkers,
  ApiKey.AlterPartition,
]);

/** Handler time to Kafka's unit: percent of one thread, over one second. */
const PERCENT_PER_MS = 100 / 1000;

/** The request's throttle time in ms; 0 when within every quota that applies. */
export function quotaThrottleMs(
  quotas: ClientQuotaManager,
  ctx: RequestContext,
  request: unknown,
  frameBytes: number,
  handlerMs: number,
): number {
  const apiKey = ctx.header.requestApiKey;
  const principal = ctx.conn.principal;
  const clientId = ctx.header.clientId ?? "";
  const nowMs = Date.now();
  let throttleMs = ctx.throttleMs ?? 0;
  let exempt = ctx.quotaExempt === true || REQUEST_QUOTA_EXEMPT.has(apiKey);
  if (apiKey === ApiKey.Produce) {
    const bytesMs = quotas.recordAndGetThrottleTimeMs(
      "producer_byte_rate",
      principal,
      clientId,
      frameBytes,
      nowMs,
    );
    throttleMs = Math.max(throttleMs, bytesMs);
    exempt ||= (request as ProduceRequest).acks === 0;
  }
  if (exempt) return throttleMs;
  const value = handlerMs * PERCENT_PER_MS;
  const requestMs = quotas.recordAndGetThrottleTimeMs(
    "request_percentage",
    principal,
    clientId,
    value,
    nowMs,
  );
  // Kafka's ClientRequestQuotaManager bounds this one throttle at one quota sample.
  return Math.max(throttleMs, Math.min(requestMs, quotas.window.sampleMs));
}

/**
 * The controller mutation quota (KIP-599) of a CreateTopics, CreatePartitions or DeleteTopics
 * request: strict from `strictSinceVersion` on, permissive below, as Kafka's KafkaApis asks for.
 */
export function controllerMutationQuota(
  ctx: RequestContext,
  strictSinceVersion: number,
): ControllerMutationQuota {
  const strict = ctx.apiVersion >= strictSinceVersion;
  const clientId = ctx.header.clientId ?? "";
  return ctx.broker.clientQuotas.controllerMutationQuota(ctx.conn.principal, clientId, strict);
}

/** The quota's throttle time goes into the response, and the connection is muted for it. */
export function settleControllerMutationQuota(
  ctx: RequestContext,
  quota: ControllerMutationQuota,
): void {
  const throttleMs = quota.settle();
  if (throttleMs > 0) ctx.throttleMs = Math.max(ctx.throttleMs ?? 0, throttleMs);
}
