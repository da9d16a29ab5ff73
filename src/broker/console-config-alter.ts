import { createHmac, timingSafeEqual } from "node:crypto";
import { DYNAMIC_BROKER_KEYS } from "../config/dynamic-broker-keys.ts";
import { KafkaError } from "../protocol/errors.ts";
import {
  AclOperation,
  CLUSTER_RESOURCE_NAME,
  ResourceType,
} from "../security/authorized-operations.ts";
import { ConfigOperation } from "../server/admin-manager.ts";
import type { ConsoleContext } from "./console-context.ts";
import { type Html, html } from "./console-html.ts";

/**
 * Altering configs from the console: a form on a topic's page, shown to a user the authorizer
 * allows ALTER_CONFIGS on the topic, and one on the broker configs page for ALTER_CONFIGS on the
 * cluster (this broker's dynamic configs, or the cluster-wide default of every broker), each
 * posting one IncrementalAlterConfigs operation (SET, DELETE, APPEND, SUBTRACT) that goes
 * through the same `AdminManager.alterTopicConfigs` / `BrokerConfigManager.alterBrokerConfigs`
 * as the Kafka API, so a value or key the API refuses is refused here with the same error.
 *
 * Cross-site request forgery: a browser sends its basic credentials (or none are needed) with
 * a form another site posts here, so every post must carry a token only a page of this
 * listener can read: an HMAC of the logged-in principal under a key drawn at start (a page of
 * another origin cannot read it, and it is worthless for another user or after a restart).
 * A post whose `Origin` is another origin, or that a browser marks `Sec-Fetch-Site:
 * cross-site`, is refused before anything else.
 */
const OPERATIONS = ["SET", "DELETE", "APPEND", "SUBTRACT"] as const;
type OperationName = (typeof OPERATIONS)[number];

/** Form posts carry one key and one value: anything larger is not a config. */
export const CONFIG_FORM_BYTES_MAX = 64 * 1024;

export function csrfToken(ctx: ConsoleContext): string {
  return createHmac("sha256", ctx.csrfKey).update(ctx.principal).digest("base64url");
}

function tokenMatches(ctx: ConsoleContext, token: string): boolean {
  const expected = Buffer.from(csrfToken(ctx));
  const given = Buffer.from(token);
  return given.length === expected.length && timingSafeEqual(given, expected);
}

/** What a form alters: a topic, or a broker entity (this broker's id, or "" for all brokers). */
export type ConfigTarget =
  | { readonly kind: "topic"; readonly name: string }
  | { readonly kind: "broker"; readonly name: string };

/** The form on the topic page, for a user allowed to alter the topic's configs. */
export function configAlterForm(ctx: ConsoleContext, topic: string): Html {
  return alterForm(ctx, `/console/topics/${encodeURIComponent(topic)}/configs`, "retention.ms");
}

/** The form on the broker configs page: this broker or the cluster-wide default. */
export function brokerConfigAlterForm(ctx: ConsoleContext): Html {
  const id = ctx.services.brokerId;
  const entity = html`<label>for <select name="entity">
<option value="${id}">broker ${id}</option>
<option value="">every broker (cluster default)</option></select></label>`;
  return alterForm(ctx, "/console/configs", "log.retention.ms", entity);
}

function alterForm(ctx: ConsoleContext, action: string, example: string, extra: Html | "" = "") {
  const options = OPERATIONS.map((o) => html`<option value="${o}">${o}</option>`);
  return html`<form class="alter-config" method="post" action="${action}">
<input type="hidden" name="csrf" value="${csrfToken(ctx)}">${extra}
<label>operation <select name="operation">${options}</select></label>
<label>key <input name="key" required placeholder="${example}"></label>
<label>value <input name="value" placeholder="(none for DELETE)"></label>
<button type="submit">Alter</button></form>`;
}

/** The broker keys the console's form (and IncrementalAlterConfigs) may change, sorted. */
export const dynamicBrokerKeys = (): string[] => [...DYNAMIC_BROKER_KEYS].sort();

/** What a post to a config form did: the page shows it above the configs. */
export type AlterOutcome =
  | { readonly ok: true; readonly key: string }
  | { readonly ok: false; readonly status: number; readonly message: string };

/** Checks and applies one posted change; never throws for what the user sent. */
export async function alterConfig(
  ctx: ConsoleContext,
  request: Request,
  url: URL,
  target: ConfigTarget,
): Promise<AlterOutcome> {
  const refused = (status: number, message: string): AlterOutcome => ({
    ok: false,
    status,
    message,
  });
  const origin = request.headers.get("origin");
  if ((origin !== null && origin !== url.origin) || isCrossSite(request)) {
    return refused(403, "refused: the form was posted from another site");
  }
  const length = Number(request.headers.get("content-length") ?? "0");
  if (!(length <= CONFIG_FORM_BYTES_MAX)) return refused(413, "refused: form too large");
  let form: URLSearchParams;
  try {
    form = new URLSearchParams(await request.text());
  } catch {
    return refused(400, "refused: unreadable form");
  }
  if (!tokenMatches(ctx, form.get("csrf") ?? "")) {
    return refused(403, "refused: missing or stale form token; reload the page");
  }
  const denied = denial(ctx, target);
  if (denied !== null) return denied;
  if (target.kind === "broker") {
    const entity = form.get("entity") ?? "";
    if (entity !== "" && entity !== String(ctx.services.brokerId)) {
      return refused(400, "INVALID_REQUEST: this console alters its own broker or the default");
    }
    return await applyChange(ctx, form, { kind: "broker", name: entity });
  }
  return await applyChange(ctx, form, target);
}

/** The ACL check of the API for the target (ALTER_CONFIGS on the topic or the cluster). */
function denial(ctx: ConsoleContext, target: ConfigTarget): AlterOutcome | null {
  if (target.kind === "broker") {
    const ok = ctx.allowed(AclOperation.ALTER_CONFIGS, ResourceType.CLUSTER, CLUSTER_RESOURCE_NAME);
    if (ok) return null;
    const message = "CLUSTER_AUTHORIZATION_FAILED: not allowed to alter broker configs";
    return { ok: false, status: 403, message };
  }
  const allowed = (op: AclOperation) => ctx.allowed(op, ResourceType.TOPIC, target.name);
  if (!allowed(AclOperation.DESCRIBE) && !allowed(AclOperation.ALTER_CONFIGS)) {
    return { ok: false, status: 404, message: "no such topic" };
  }
  if (allowed(AclOperation.ALTER_CONFIGS)) return null;
  const message = "TOPIC_AUTHORIZATION_FAILED: not allowed to alter this topic's configs";
  return { ok: false, status: 403, message };
}

async function applyChange(
  ctx: ConsoleContext,
  form: URLSearchParams,
  target: ConfigTarget,
): Promise<AlterOutcome> {
  const operation = OPERATIONS.find((o) => o === form.get("operation"));
  const key = (form.get("key") ?? "").trim();
  if (operation === undefined || key === "") {
    return { ok: false, status: 400, message: "INVALID_REQUEST: an operation and a key" };
  }
  const value = operation === "DELETE" ? null : (form.get("value") ?? "");
  const change = {
    name: key,
    operation: ConfigOperation[operation satisfies OperationName],
    value,
  };
  try {
    if (target.kind === "topic") {
      await ctx.services.adminManager.alterTopicConfigs(target.name, [change], false);
    } else {
      await ctx.services.brokerConfigManager.alterBrokerConfigs(target.name, [change], false);
    }
  } catch (error) {
    if (!(error instanceof KafkaError)) throw error;
    return { ok: false, status: 400, message: `${error.errorName}: ${error.message}` };
  }
  const what =
    target.kind === "topic"
      ? `topic ${target.name}`
      : target.name === ""
        ? "the default of every broker"
        : `broker ${target.name}`;
  ctx.log.info(`console: ${ctx.principal} altered ${what}: ${operation} ${key}`, {
    ...(target.kind === "topic" ? { topic: target.name } : {}),
    principal: ctx.principal,
    host: ctx.host,
  });
  return { ok: true, key };
}

function isCrossSite(request: Request): boolean {
  const site = request.headers.get("sec-fetch-site");
  return site === "cross-site" || site === "same-site";
}
