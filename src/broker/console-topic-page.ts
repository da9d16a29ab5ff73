import { AclOperation, ResourceType } from "../security/authorized-operations.ts";
import type { Partition } from "../server/partition.ts";
import { configAlterForm } from "./console-config-alter.ts";
import { type ConsoleContext, configText, localPartitions } from "./console-context.ts";
import { type Html, html, NOT_AUTHORIZED, page, table } from "./console-html.ts";
import { BROWSE_RECORDS_MAX, browseRecords, offsetForTime } from "./record-browser.ts";

type ValueFormat = "text" | "json" | "hex";

/** What the last config change did, shown above the configs (and the page's status). */
export interface ConfigNotice {
  readonly status: number;
  readonly text: string;
}

/** One topic: partitions as Metadata states them with this broker's replica, configs, records. */
export function topicPage(
  ctx: ConsoleContext,
  name: string,
  url: URL,
  notice?: ConfigNotice,
): Response {
  const topic = ctx.services.metadataCache.topic(name);
  const allowed = (operation: AclOperation) => ctx.allowed(operation, ResourceType.TOPIC, name);
  // As Kafka answers a client not allowed to describe it: as if the topic did not exist.
  if (topic === undefined || !allowed(AclOperation.DESCRIBE)) {
    return page(`Topic ${name}`, html`<p class="empty">no such topic</p>`, notice?.status ?? 200);
  }
  const local = localPartitions(ctx).get(name) ?? new Map<number, Partition>();
  const rows = topic.partitions.map((p) => {
    const replica = local.get(p.partition);
    const log = replica !== undefined && !replica.log.isClosed ? replica.log : null;
    return [
      p.partition,
      p.leaderId,
      p.replicas.join(","),
      p.isr.join(","),
      log === null ? "" : String(log.logStartOffset),
      log === null ? "" : String(log.highWatermark),
      log === null ? "" : String(log.logEndOffset),
      log === null ? "not here" : String(log.sizeBytes),
    ];
  });
  const headings = ["partition", "leader", "replicas", "ISR", "start", "high watermark", "end"];
  const body = html`<h2>Partitions</h2>
${table([...headings, "bytes here"], rows)}
${configsSection(ctx, name, topic.configs, url, notice)}
<h2>Records</h2>
${allowed(AclOperation.READ) ? recordBrowser(ctx, local, url) : NOT_AUTHORIZED}`;
  return page(`Topic ${name}`, body, notice?.status ?? 200);
}

/** The overrides, and the form to alter them for a user the ACLs allow it. */
function configsSection(
  ctx: ConsoleContext,
  name: string,
  configs: Readonly<Record<string, unknown>>,
  url: URL,
  notice: ConfigNotice | undefined,
): Html {
  const allowed = (operation: AclOperation) => ctx.allowed(operation, ResourceType.TOPIC, name);
  const alterable = allowed(AclOperation.ALTER_CONFIGS);
  const altered = url.searchParams.get("altered");
  const shown =
    notice ?? (altered === null ? undefined : { status: 200, text: `${altered} altered` });
  const overrides = Object.entries(configs).map(([k, v]) => [k, configText(v)]);
  const readOnly = alterable ? "" : "; read-only";
  const heading = `Configs (overrides; the rest are broker defaults${readOnly})`;
  const noticeHtml =
    shown === undefined
      ? ""
      : html`<p id="config-notice" class="${shown.status === 200 ? "ok" : "bad"}">
${shown.text}</p>`;
  return html`<h2>${heading}</h2>
${noticeHtml}
${allowed(AclOperation.DESCRIBE_CONFIGS) ? table(["key", "value"], overrides) : NOT_AUTHORIZED}
${alterable ? configAlterForm(ctx, name) : ""}`;
}

function recordBrowser(ctx: ConsoleContext, local: ReadonlyMap<number, Partition>, url: URL): Html {
  const q = url.searchParams;
  const partition = Number(q.get("partition") ?? "0");
  const format = (["text", "json", "hex"] as const).find((f) => f === q.get("format")) ?? "text";
  const count = Math.min(Number(q.get("count") ?? "20") || 20, BROWSE_RECORDS_MAX);
  const p = local.get(partition);
  const form = browseForm(partition, q.get("offset") ?? "", q.get("time") ?? "", format, count);
  if (p === undefined || p.log.isClosed) {
    return html`${form}<p class="empty">partition ${partition} has no replica on this broker
(broker ${ctx.services.brokerId}); open the console of a broker that hosts it.</p>`;
  }
  const start = startOffset(p, q.get("offset") ?? "", q.get("time") ?? "", count);
  const records = browseRecords(p, start, count);
  const rows = records.map((r) => [
    html`<span class="offset">${r.offset}</span>`,
    new Date(Number(r.timestampMs)).toISOString(),
    shown(r.key, format === "hex" ? "hex" : "text"),
    html`<pre class="value">${shown(r.value, format)}</pre>`,
    r.headers.map((h) => `${h.key}=${shown(h.value, "text")}`).join("\n"),
  ]);
  return html`${form}<p>From offset ${start} (partition ${partition}).</p>
${table(["offset", "timestamp", "key", "value", "headers"], rows)}`;
}

/** Where to start: a chosen offset, the first offset at a chosen time, or the latest records. */
function startOffset(p: Partition, offset: string, time: string, count: number): bigint {
  if (/^\d+$/.test(offset)) return BigInt(offset);
  if (time !== "") {
    const ms = /^\d+$/.test(time) ? Number(time) : Date.parse(time);
    if (Number.isFinite(ms)) return offsetForTime(p, BigInt(ms));
  }
  const latest = p.log.highWatermark - BigInt(count);
  return latest < p.log.logStartOffset ? p.log.logStartOffset : latest;
}

function browseForm(
  partition: number,
  offset: string,
  time: string,
  format: ValueFormat,
  count: number,
): Html {
  const option = (f: ValueFormat) =>
    html`<option value="${f}"${f === format ? html` selected` : ""}>${f}</option>`;
  return html`<form class="browse" method="get">
<label>partition <input name="partition" type="number" min="0" value="${partition}"></label>
<label>offset <input name="offset" value="${offset}" placeholder="latest"></label>
<label>or time <input name="time" value="${time}" placeholder="2026-01-01T00:00:00Z"></label>
<label>records
<input name="count" type="number" min="1" max="${BROWSE_RECORDS_MAX}" value="${count}"></label>
<label>values as
<select name="format">${option("text")}${option("json")}${option("hex")}</select></label>
<button type="submit">Show</button></form>`;
}

function shown(bytes: Uint8Array | null, format: ValueFormat): string {
  if (bytes === null) return "(null)";
  if (format === "hex")
    return Buffer.from(bytes)
      .toString("hex")
      .replace(/(.{2})/g, "$1 ")
      .trim();
  const text = new TextDecoder().decode(bytes);
  if (format === "text") return text;
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return `(not JSON) ${text}`;
  }
}
