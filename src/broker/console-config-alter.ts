import { createHmac, timingSafeEqual } from "node:crypto";
import { KafkaError } from "../protocol/errors.ts";
import { AclOperation, ResourceType } from "../security/authorized-operations.ts";
import { ConfigOperation } from "../server/admin-manager.ts";
import type { ConsoleContext } from "./console-context.ts";
import { type Html, html } from "./console-html.ts";

/**
 * Altering a topic's configs from the console: a form on the topic page, shown to a user the
 * authorizer allows ALTER_CONFIGS on the topic, posting one IncrementalAlterConfigs operation
 * (SET, DELETE, APPEND, SUBTRACT) that goes through the same `AdminManager.alterTopicConfigs` as
 * the Kafka API, so a value the API refuses is refused here with the same error.
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

/** The form on the topic page, for a user allowed to alter the topic's configs. */
export function configAlterForm(ctx: ConsoleContext, topic: string): Html {
  const options = OPERATIONS.map((o) => html`<option value="${o}">${o}</option>`);
  return html`<form class="alter-config" method="post"
 action="/console/topics/${encodeURIComponent(topic)}/configs">
<input type="hidden" name="csrf" value="${csrfToken(ctx)}">
<label>operation <select name="operation">${options}</select></label>
<label>key <input name="key" required placeholder="retention.ms"></label>
<label>value <input name="value" placeholder="(none for DELETE)"></label>
<button type="submit">Alter</button></form>`;
}

/** What a post to `/console/topics/<name>/configs` did: the page shows it above the configs. */
export type AlterOutcome =
  | { readonly ok: true; readonly key: string }
  | { readonly ok: false; readonly status: number; readonly message: string };

/** Checks and applies one posted change; never throws for what the user sent. */
export async function alterTopicConfig(
  ctx: ConsoleContext,
  request: Request,
  url: URL,
  topic: string,
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
  const allowed = (op: AclOperation) => ctx.allowed(op, ResourceType.TOPIC, topic);
  if (!allowed(AclOperation.DESCRIBE) && !allowed(AclOperation.ALTER_CONFIGS)) {
    return refused(404, "no such topic");
  }
  if (!allowed(AclOperation.ALTER_CONFIGS)) {
    return refused(403, "TOPIC_AUTHORIZATION_FAILED: not allowed to alter this topic's configs");
  }
  return await applyChange(ctx, form, topic);
}

async function applyChange(
  ctx: ConsoleContext,
  form: URLSearchParams,
  topic: string,
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
    await ctx.services.adminManager.alterTopicConfigs(topic, [change], false);
  } catch (error) {
    if (!(error instanceof KafkaError)) throw error;
    return { ok: false, status: 400, message: `${error.errorName}: ${error.message}` };
  }
  ctx.log.info(`console: ${ctx.principal} altered topic ${topic}: ${operation} ${key}`, {
    topic,
    principal: ctx.principal,
    host: ctx.host,
  });
  return { ok: true, key };
}

function isCrossSite(request: Request): boolean {
  const site = request.headers.get("sec-fetch-site");
  return site === "cross-site" || site === "same-site";
}
