import type { GroupView } from "../coordinator/group-coordinator.ts";
import { Reader } from "../protocol/reader.ts";
import {
  AclOperation,
  CLUSTER_RESOURCE_NAME,
  ResourceType,
} from "../security/authorized-operations.ts";
import {
  alterConfig,
  brokerConfigAlterForm,
  type ConfigTarget,
  dynamicBrokerKeys,
} from "./console-config-alter.ts";
import { type ConsoleContext, configText, localPartitions } from "./console-context.ts";
import type { Sample } from "./console-history.ts";
import {
  CONSOLE_CSS,
  CONSOLE_JS,
  formatBytes,
  formatNumber,
  type Html,
  html,
  lineChart,
  NOT_AUTHORIZED,
  page,
  type Series,
  table,
} from "./console-html.ts";
import { type ConfigNotice, topicPage } from "./console-topic-page.ts";
import { groupLags, type PartitionLag } from "./metrics-collector.ts";

const ASSET_HEADERS = { "cache-control": "max-age=300" };

/**
 * The web console: server-rendered pages with inline SVG charts, and two small assets, all
 * compiled into the binary; the one write is a topic config change posted from the topic page
 * (console-config-alter.ts). `context` is null until the broker serves.
 */
export async function consolePage(
  request: Request,
  url: URL,
  context: () => ConsoleContext | null,
): Promise<Response> {
  const path = url.pathname.replace(/\/+$/, "");
  const alter = /^\/console\/topics\/([^/]+)\/configs$/.exec(path);
  const target: ConfigTarget | null =
    alter !== null
      ? { kind: "topic", name: decodeURIComponent(alter[1]!) }
      : path === "/console/configs"
        ? { kind: "broker", name: "" }
        : null;
  if (target !== null && request.method === "POST") {
    const ctx = context();
    if (ctx === null) return new Response("starting\n", { status: 503 });
    return await configPosted(ctx, request, url, target);
  }
  if (request.method !== "GET" && request.method !== "HEAD") {
    const allow = target === null ? "GET, HEAD" : alter !== null ? "POST" : "GET, HEAD, POST";
    return new Response("method not allowed\n", { status: 405, headers: { allow } });
  }
  if (path === "") return Response.redirect(`${url.origin}/console`, 302);
  if (path === "/console/assets/console.css") {
    return new Response(CONSOLE_CSS, { headers: { "content-type": "text/css", ...ASSET_HEADERS } });
  }
  if (path === "/console/assets/console.js") {
    const headers = { "content-type": "text/javascript", ...ASSET_HEADERS };
    return new Response(CONSOLE_JS, { headers });
  }
  if (path !== "/console" && !path.startsWith("/console/")) return notFound();
  const ctx = context();
  if (ctx === null) return new Response("starting\n", { status: 503 });
  const [, , section, name] = path.split("/").map((p) => decodeURIComponent(p));
  switch (section) {
    case undefined:
      return clusterPage(ctx);
    case "topics":
      return name === undefined ? topicsPage(ctx) : topicPage(ctx, name, url);
    case "groups":
      return name === undefined ? groupsPage(ctx) : groupPage(ctx, name);
    case "configs":
      return configsPage(ctx, url);
    default:
      return notFound();
  }
}

/** Success redirects to the form's page (a reload does not post again); failure shows why. */
async function configPosted(
  ctx: ConsoleContext,
  request: Request,
  url: URL,
  target: ConfigTarget,
): Promise<Response> {
  const outcome = await alterConfig(ctx, request, url, target);
  const pagePath =
    target.kind === "topic"
      ? `/console/topics/${encodeURIComponent(target.name)}`
      : "/console/configs";
  if (outcome.ok) {
    const to = `${url.origin}${pagePath}?altered=${encodeURIComponent(outcome.key)}`;
    return Response.redirect(to, 303);
  }
  if (outcome.status === 403 || outcome.status === 413) {
    return new Response(`${outcome.message}\n`, { status: outcome.status });
  }
  const notice = { status: outcome.status, text: outcome.message };
  const pageUrl = new URL(pagePath, url.origin);
  return target.kind === "topic"
    ? topicPage(ctx, target.name, pageUrl, notice)
    : configsPage(ctx, pageUrl, notice);
}

function notFound(): Response {
  return new Response("not found\n", { status: 404 });
}

/** Rates per second between consecutive samples. */
function rates(samples: readonly Sample[], pick: (s: Sample) => number): [number, number][] {
  const out: [number, number][] = [];
  for (let i = 1; i < samples.length; i++) {
    const a = samples[i - 1]!;
    const b = samples[i]!;
    const seconds = Math.max(0.001, (b.atMs - a.atMs) / 1000);
    out.push([b.atMs, Math.max(0, (pick(b) - pick(a)) / seconds)]);
  }
  return out;
}

function clusterPage(ctx: ConsoleContext): Response {
  const cache = ctx.services.metadataCache;
  const brokers = cache.brokers.map((b) => [
    b.nodeId,
    `${b.host}:${b.port}`,
    b.rack ?? "",
    b.nodeId === cache.controllerId ? "controller" : "",
  ]);
  let partitions = 0;
  let offline = 0;
  let underReplicated = 0;
  const live = new Set(cache.brokers.map((b) => b.nodeId));
  for (const t of cache.topics()) {
    for (const p of t.partitions) {
      partitions++;
      if (!live.has(p.leaderId)) offline++;
      else if (p.isr.length < p.replicas.length) underReplicated++;
    }
  }
  const samples = ctx.history.samples();
  const bytesIn = rates(samples, (s) => s.bytesIn);
  const bytesOut = rates(samples, (s) => s.bytesOut);
  const recordsIn = rates(samples, (s) => s.recordsIn);
  const now = (r: [number, number][]) => formatNumber(r.at(-1)?.[1] ?? 0);
  const health = (n: number) => html`<span class="${n === 0 ? "ok" : "bad"}">${n}</span>`;
  const body = html`<h2>Brokers</h2>
${table(["id", "address", "rack", "role"], brokers)}
<p>Controller: broker ${cache.controllerId}.
ZooKeeper: <span id="zookeeper-state">${ctx.zooKeeperState()}</span>.
Cluster id ${cache.clusterId}.</p>
<h2>Partition health</h2>
${table(
  ["partitions", "offline", "under-replicated"],
  [[partitions, health(offline), health(underReplicated)]],
)}
<h2>Throughput (this broker)</h2>
<p>Now: ${now(bytesIn)}B/s in, ${now(bytesOut)}B/s out, ${now(recordsIn)} records/s in.</p>
${lineChart("Bytes per second, last hour", "B/s", [
  { label: "in", points: bytesIn },
  { label: "out", points: bytesOut },
])}
${lineChart("Records in per second, last hour", "rec/s", [{ label: "in", points: recordsIn }])}`;
  return page("Cluster", body);
}

function topicsPage(ctx: ConsoleContext): Response {
  const local = localPartitions(ctx);
  const traffic = new Map(
    ctx.services.metrics.topicTraffic((t) => ctx.services.metadataCache.topic(t) !== undefined),
  );
  const topics = [...ctx.services.metadataCache.topics()]
    .filter((t) => ctx.allowed(AclOperation.DESCRIBE, ResourceType.TOPIC, t.name))
    .sort((a, b) => (a.name < b.name ? -1 : 1));
  const rows = topics.map((t) => {
    let size = 0;
    for (const p of local.get(t.name)?.values() ?? []) if (!p.log.isClosed) size += p.log.sizeBytes;
    const link = html`<a href="/console/topics/${encodeURIComponent(t.name)}">${t.name}</a>`;
    const tr = traffic.get(t.name);
    return [
      link,
      t.partitions.length,
      t.partitions[0]?.replicas.length ?? 0,
      formatBytes(size),
      formatNumber(tr?.recordsIn ?? 0),
      formatBytes(tr?.bytesIn ?? 0),
    ];
  });
  const headings = ["topic", "partitions", "replication", "size here", "records in", "bytes in"];
  return page(
    "Topics",
    html`${table(headings, rows)}
<p>Size, records and bytes in are this broker's: its replicas and what it accepted as leader.</p>`,
  );
}

function groupsPage(ctx: ConsoleContext): Response {
  const groups = ctx.services.groupCoordinator
    .groupViews()
    .filter((g) => ctx.allowed(AclOperation.DESCRIBE, ResourceType.GROUP, g.groupId));
  const lags = groupLags(ctx.services, groups, { count: 0 }, ctx.leaderHighWatermarks);
  const rows = groups
    .sort((a, b) => (a.groupId < b.groupId ? -1 : 1))
    .map((g) => [
      html`<a href="/console/groups/${encodeURIComponent(g.groupId)}">${g.groupId}</a>`,
      g.state,
      g.members.length,
      lags.filter((l) => l.labels.group === g.groupId).reduce((n, l) => n + l.lag, 0),
    ]);
  return page(
    "Consumer groups",
    html`${table(["group", "state", "members", "total lag"], rows)}
<p>Groups this broker coordinates and has loaded.</p>`,
  );
}

function groupPage(ctx: ConsoleContext, groupId: string): Response {
  const group = ctx.services.groupCoordinator.groupViews().find((g) => g.groupId === groupId);
  if (!ctx.allowed(AclOperation.DESCRIBE, ResourceType.GROUP, groupId)) {
    return page(`Group ${groupId}`, NOT_AUTHORIZED);
  }
  if (group === undefined) {
    return page(`Group ${groupId}`, html`<p class="empty">not coordinated here</p>`);
  }
  const lags = groupLags(ctx.services, [group], { count: 0 }, ctx.leaderHighWatermarks);
  const series: Series = {
    label: "total lag",
    points: ctx.history
      .samples()
      .filter((s) => s.groupLag.has(groupId))
      .map((s) => [s.atMs, s.groupLag.get(groupId)!]),
  };
  const body = html`<p>State <b>${group.state}</b>, ${group.members.length} members.</p>
<h2>Members</h2>
${membersTable(group)}
<h2>Lag per partition</h2>
${lagTable(lags)}
${lineChart("Total lag, last hour", "records", [series])}`;
  return page(`Group ${groupId}`, body);
}

function membersTable(group: GroupView): Html {
  const rows = group.members.map((m) => [
    m.memberId,
    m.clientId,
    m.clientHost,
    group.protocolType === "consumer" ? assignedPartitions(m.assignment) : "",
  ]);
  return table(["member", "client id", "host", "assignment"], rows);
}

function lagTable(lags: readonly PartitionLag[]): Html {
  const rows = lags.map((l) => [
    l.labels.topic,
    l.labels.partition,
    l.committed,
    l.highWatermark,
    html`<span class="lag" data-topic="${l.labels.topic}"
 data-partition="${l.labels.partition}">${l.lag}</span>`,
  ]);
  return table(["topic", "partition", "committed offset", "high watermark", "lag"], rows);
}

/** A consumer protocol assignment as `topic: 0,1; other: 2`; "" when it cannot be read. */
function assignedPartitions(bytes: Uint8Array): string {
  if (bytes.length === 0) return "";
  try {
    const r = new Reader(bytes);
    const version = r.int16();
    const topics = r.array(false, version, (reader) => ({
      topic: reader.string(),
      partitions: reader.array(false, version, (pr) => pr.int32()),
    }));
    return topics.map((t) => `${t.topic}: ${t.partitions.join(",")}`).join("; ");
  } catch {
    return "";
  }
}

/** Config names whose values are secrets: shown as [hidden]. */
const SECRET = /password|secret|jaas|sasl\.login|\.key$/i;

/**
 * The broker's configuration as it runs, and for a user allowed ALTER_CONFIGS on the cluster a
 * form for the dynamic keys (console-config-alter.ts), as `kafka-configs.sh --entity-type
 * brokers` alters them.
 */
function configsPage(ctx: ConsoleContext, url: URL, notice?: ConfigNotice): Response {
  const allowed = (op: AclOperation) =>
    ctx.allowed(op, ResourceType.CLUSTER, CLUSTER_RESOURCE_NAME);
  if (!allowed(AclOperation.DESCRIBE_CONFIGS)) {
    return page("Broker configs", NOT_AUTHORIZED, notice?.status ?? 200);
  }
  const config = ctx.services.config as unknown as Readonly<Record<string, unknown>>;
  const rows = Object.keys(config)
    .sort()
    .map((k) => [k, SECRET.test(k) ? "[hidden]" : configText(config[k])]);
  const alterable = allowed(AclOperation.ALTER_CONFIGS);
  const altered = url.searchParams.get("altered");
  const shown =
    notice ?? (altered === null ? undefined : { status: 200, text: `${altered} altered` });
  const noticeHtml =
    shown === undefined
      ? ""
      : html`<p id="config-notice" class="${shown.status === 200 ? "ok" : "bad"}">
${shown.text}</p>`;
  const form = alterable
    ? html`<h2>Alter a dynamic config</h2>${brokerConfigAlterForm(ctx)}
<p class="keys">Keys that change without a restart: ${dynamicBrokerKeys().join(", ")}.</p>`
    : "";
  const readOnly = alterable ? "" : " (read-only)";
  const body = html`${noticeHtml}
<p>Broker ${ctx.services.brokerId}'s configuration as it runs${readOnly}.</p>
${form}
${table(["key", "value"], rows)}`;
  return page("Broker configs", body, shown?.status ?? 200);
}
