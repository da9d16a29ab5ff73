// Altering a topic's configs from the web console, in a real browser (headless chromium over the
// DevTools protocol): a user the ACLs allow ALTER_CONFIGS gets a form that changes the config
// as kafkajs then reads it; a value IncrementalAlterConfigs refuses is refused with the same
// error; a user without the ACL gets no form and is refused when posting; posts without the
// page's token, with another user's token, or from another site's page are refused. The same
// for broker configs on the broker configs page: a dynamic key set and deleted for this broker
// and for every broker, a static key refused as IncrementalAlterConfigs refuses it.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { ConfigResourceTypes, Kafka, logLevel } from "kafkajs";
import { errorName } from "../../src/protocol/errors.ts";
import { ApiKey } from "../../src/protocol/generated/index.ts";
import {
  type AclBinding,
  OPERATION_ALL,
  PATTERN_LITERAL,
  PERMISSION_DENY,
} from "../../src/security/acl.ts";
import { AclOperation, ResourceType } from "../../src/security/authorized-operations.ts";
import { scramCredential } from "../../src/security/scram.ts";
import { LocalScramCredentialStore } from "../../src/security/scram-credential-store.ts";
import { allowAcl } from "../support/acl-bindings.ts";
import {
  type InProcessBroker,
  REPO_ROOT,
  startInProcessBroker,
  tempDir,
} from "../support/broker-harness.ts";
import { HeadlessChromium } from "../support/headless-chromium.ts";
import { KafkaClient } from "../support/kafka-client.ts";

const SCREENSHOTS = join(REPO_ROOT, ".ci", "artifacts", "console");
const TOPIC = "tuned";

let broker: InProcessBroker;
let browser: HeadlessChromium;
let admin: string;
let kafka: Kafka;

const basic = (user: string, password: string) =>
  `Basic ${Buffer.from(`${user}:${password}`).toString("base64")}`;

beforeAll(async () => {
  mkdirSync(SCREENSHOTS, { recursive: true });
  const dataDir = tempDir();
  const store = new LocalScramCredentialStore(dataDir);
  await store.set("alice", "SCRAM-SHA-256", scramCredential("SCRAM-SHA-256", "wonderland", 4096));
  await store.set("bob", "SCRAM-SHA-256", scramCredential("SCRAM-SHA-256", "builder", 4096));
  broker = await startInProcessBroker({
    dataDir,
    settings: {
      "admin.listeners": "127.0.0.1:0",
      "admin.authentication": "scram",
      "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
    },
  });
  admin = `http://127.0.0.1:${broker.broker.adminListeners[0]!.port}`;
  const { DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS } = AclOperation;
  // The test's Kafka clients are anonymous on PLAINTEXT; alice may alter, bob only look.
  await broker.broker.services.authorizer!.create([
    allowAcl("User:ANONYMOUS", ResourceType.CLUSTER, "kafka-cluster", OPERATION_ALL),
    allowAcl("User:ANONYMOUS", ResourceType.TOPIC, "*", OPERATION_ALL),
    ...[DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS].map((op) =>
      allowAcl("User:alice", ResourceType.TOPIC, TOPIC, op),
    ),
    ...[DESCRIBE, DESCRIBE_CONFIGS].map((op) =>
      allowAcl("User:bob", ResourceType.TOPIC, TOPIC, op),
    ),
    ...[DESCRIBE_CONFIGS, ALTER_CONFIGS].map((op) =>
      allowAcl("User:alice", ResourceType.CLUSTER, "kafka-cluster", op),
    ),
    allowAcl("User:bob", ResourceType.CLUSTER, "kafka-cluster", DESCRIBE_CONFIGS),
  ]);
  kafka = new Kafka({ brokers: [broker.bootstrap], logLevel: logLevel.NOTHING });
  const kafkaAdmin = kafka.admin();
  await kafkaAdmin.connect();
  await kafkaAdmin.createTopics({ topics: [{ topic: TOPIC, numPartitions: 1 }] });
  await kafkaAdmin.disconnect();
  browser = await HeadlessChromium.start();
  await browser.send("Network.enable");
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await broker.stop();
});

/** The browser logs in as `user` on every request it makes from now on. */
async function loginAs(user: string, password: string): Promise<void> {
  const headers = { authorization: basic(user, password) };
  await browser.send("Network.setExtraHTTPHeaders", { headers });
}

/** The topic's retention.ms override as kafkajs describes it; undefined when not overridden. */
async function retentionOverride(): Promise<string | undefined> {
  const kafkaAdmin = kafka.admin();
  await kafkaAdmin.connect();
  try {
    const described = await kafkaAdmin.describeConfigs({
      resources: [{ type: ConfigResourceTypes.TOPIC, name: TOPIC, configNames: ["retention.ms"] }],
      includeSynonyms: false,
    });
    const entry = described.resources[0]!.configEntries.find(
      (e) => e.configName === "retention.ms",
    );
    return entry?.isDefault === false ? entry.configValue : undefined;
  } finally {
    await kafkaAdmin.disconnect();
  }
}

/** Fills the topic page's form and submits it, as a user would; waits for the next page. */
async function submitForm(operation: string, key: string, value: string): Promise<void> {
  const fill = (name: string, v: string) =>
    `form.querySelector('[name=${name}]').value = ${JSON.stringify(v)};`;
  await browser.navigateBy(`(() => { const form = document.querySelector('form.alter-config');
    ${fill("operation", operation)} ${fill("key", key)} ${fill("value", value)}
    form.querySelector('button').click(); })()`);
}

const text = (selector: string) =>
  browser.evaluate<string | null>(`document.querySelector('${selector}')?.innerText ?? null`);

/** What IncrementalAlterConfigs answers for SET `key`=`value` on the topic (validate only). */
async function apiError(key: string, value: string): Promise<string> {
  const client = await KafkaClient.connect(broker.port);
  try {
    const res = await client.request(ApiKey.IncrementalAlterConfigs, 1, {
      resources: [
        {
          resourceType: 2,
          resourceName: TOPIC,
          configs: [{ name: key, configOperation: 0, value }],
        },
      ],
      validateOnly: true,
    });
    return errorName(res.responses[0]!.errorCode);
  } finally {
    client.close();
  }
}

test("a user allowed ALTER_CONFIGS alters a topic config from the console in chromium", async () => {
  await loginAs("alice", "wonderland");
  await browser.goto(`${admin}/console/topics/${TOPIC}`);
  expect(await text("form.alter-config")).not.toBeNull();
  await submitForm("SET", "retention.ms", "3600000");
  await browser.screenshot(join(SCREENSHOTS, "config-altered.png"));
  expect(await browser.evaluate<string>("location.search")).toBe("?altered=retention.ms");
  expect(await text("#config-notice")).toBe("retention.ms altered");
  expect(await retentionOverride()).toBe("3600000");
  expect(await text("main")).toContain("retention.ms\t3600000");

  // A value the Kafka API refuses is refused here with the same error, and changes nothing.
  const expected = await apiError("retention.ms", "soon");
  expect(expected).not.toBe("NONE");
  await submitForm("SET", "retention.ms", "soon");
  await browser.screenshot(join(SCREENSHOTS, "config-refused.png"));
  expect(await text("#config-notice")).toStartWith(`${expected}: `);
  const unknownKey = await apiError("no.such.key", "1");
  expect(unknownKey).not.toBe("NONE");
  await submitForm("SET", "no.such.key", "1");
  expect(await text("#config-notice")).toStartWith(`${unknownKey}: `);
  expect(await retentionOverride()).toBe("3600000");

  await submitForm("DELETE", "retention.ms", "");
  expect(await text("#config-notice")).toBe("retention.ms altered");
  expect(await retentionOverride()).toBeUndefined();
  // The two refusals are answered 400 (the browser logs them); nothing else went wrong.
  const refusals = browser.errors.filter((e) => e.includes("status of 400"));
  expect(refusals.length).toBe(2);
  expect(browser.errors.length).toBe(2);
}, 60_000);

test("without ALTER_CONFIGS there is no form, and a post is refused by the ACLs", async () => {
  await loginAs("bob", "builder");
  await browser.goto(`${admin}/console/topics/${TOPIC}`);
  expect(await text("main")).toContain("read-only");
  expect(await text("form.alter-config")).toBeNull();
  // alice loads the form, then an ACL denies her ALTER_CONFIGS before she submits it.
  await loginAs("alice", "wonderland");
  await browser.goto(`${admin}/console/topics/${TOPIC}`);
  const denial: AclBinding = {
    pattern: { resourceType: ResourceType.TOPIC, name: TOPIC, patternType: PATTERN_LITERAL },
    entry: {
      principal: "User:alice",
      host: "*",
      operation: AclOperation.ALTER_CONFIGS,
      permissionType: PERMISSION_DENY,
    },
  };
  await broker.broker.services.authorizer!.create([denial]);
  try {
    await submitForm("SET", "retention.ms", "7200000");
    expect(await text("body")).toContain("TOPIC_AUTHORIZATION_FAILED");
    expect(await retentionOverride()).toBeUndefined();
  } finally {
    await broker.broker.services.authorizer!.delete([{ ...denial.pattern, ...denial.entry }]);
  }
}, 60_000);

test("posts without the page's token, with another user's, or from another site are refused", async () => {
  const page = await fetch(`${admin}/console/topics/${TOPIC}`, {
    headers: { authorization: basic("alice", "wonderland") },
  });
  const token = /name="csrf" value="([^"]+)"/.exec(await page.text())![1]!;
  const post = (user: string, password: string, fields: Record<string, string>, origin?: string) =>
    fetch(`${admin}/console/topics/${TOPIC}/configs`, {
      method: "POST",
      redirect: "manual",
      headers: {
        authorization: basic(user, password),
        "content-type": "application/x-www-form-urlencoded",
        ...(origin === undefined ? {} : { origin }),
      },
      body: new URLSearchParams(fields).toString(),
    });
  const change = { operation: "SET", key: "retention.ms", value: "60000" };
  expect((await post("alice", "wonderland", change)).status).toBe(403);
  expect((await post("bob", "builder", { ...change, csrf: token })).status).toBe(403);
  const foreign = await post("alice", "wonderland", { ...change, csrf: token }, "http://evil.test");
  expect(foreign.status).toBe(403);
  expect(await retentionOverride()).toBeUndefined();
  // The same token from the right origin works: the refusals above were the checks.
  const accepted = await post("alice", "wonderland", { ...change, csrf: token }, admin);
  expect(accepted.status).toBe(303);
  expect(await retentionOverride()).toBe("60000");

  // A page of another site that posts a form here from the logged-in browser.
  const evil = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch: () =>
      new Response(
        `<form method="post" action="${admin}/console/topics/${TOPIC}/configs">
<input name="csrf" value="${token}"><input name="operation" value="SET">
<input name="key" value="retention.ms"><input name="value" value="1"></form>`,
        { headers: { "content-type": "text/html" } },
      ),
  });
  try {
    await loginAs("alice", "wonderland");
    await browser.goto(`http://127.0.0.1:${evil.port}/`);
    await browser.navigateBy("document.querySelector('form').submit()");
    expect(await text("body")).toContain("another site");
    expect(await retentionOverride()).toBe("60000");
  } finally {
    await evil.stop(true);
  }
}, 60_000);

/** `key` of broker resource `name` as kafkajs describes it. */
async function brokerConfig(name: string, key: string) {
  const kafkaAdmin = kafka.admin();
  await kafkaAdmin.connect();
  try {
    const described = await kafkaAdmin.describeConfigs({
      resources: [{ type: ConfigResourceTypes.BROKER, name, configNames: [key] }],
      includeSynonyms: false,
    });
    const entry = described.resources[0]!.configEntries.find((e) => e.configName === key);
    return entry === undefined
      ? undefined
      : { value: entry.configValue, source: entry.configSource };
  } finally {
    await kafkaAdmin.disconnect();
  }
}

/** What IncrementalAlterConfigs answers for SET `key`=`value` on this broker (validate only). */
async function brokerApiError(key: string, value: string): Promise<string> {
  const client = await KafkaClient.connect(broker.port);
  try {
    const res = await client.request(ApiKey.IncrementalAlterConfigs, 1, {
      resources: [
        {
          resourceType: 4,
          resourceName: String(broker.broker.services.brokerId),
          configs: [{ name: key, configOperation: 0, value }],
        },
      ],
      validateOnly: true,
    });
    return errorName(res.responses[0]!.errorCode);
  } finally {
    client.close();
  }
}

/** Fills the broker configs page's form for `entity` ("" every broker) and submits it. */
async function submitBrokerForm(entity: string, operation: string, key: string, value: string) {
  await browser.evaluate(
    `document.querySelector('form.alter-config [name=entity]').value = ${JSON.stringify(entity)}`,
  );
  await submitForm(operation, key, value);
}

test("broker configs: a dynamic key set and deleted from the console, a static one refused", async () => {
  const id = String(broker.broker.services.brokerId);
  const KEY = "log.retention.ms";
  const errorsBefore = browser.errors.length;
  await loginAs("bob", "builder");
  await browser.goto(`${admin}/console/configs`);
  expect(await text("main")).toContain("(read-only)");
  expect(await text("form.alter-config")).toBeNull();

  await loginAs("alice", "wonderland");
  await browser.goto(`${admin}/console/configs`);
  expect(await text("p.keys")).toContain(KEY);
  await submitBrokerForm(id, "SET", KEY, "7200000");
  await browser.screenshot(join(SCREENSHOTS, "broker-config-altered.png"));
  expect(await browser.evaluate<string>("location.search")).toBe(`?altered=${KEY}`);
  expect(await text("#config-notice")).toBe(`${KEY} altered`);
  // DescribeConfigs' source: 2 DYNAMIC_BROKER_CONFIG, 3 DYNAMIC_DEFAULT_BROKER_CONFIG.
  expect(await brokerConfig(id, KEY)).toEqual({ value: "7200000", source: 2 });
  await submitBrokerForm("", "SET", "log.cleaner.backoff.ms", "20000");
  // kafkajs cannot name the default resource (""): this broker shows it as the source.
  expect(await brokerConfig(id, "log.cleaner.backoff.ms")).toEqual({ value: "20000", source: 3 });

  const expected = await brokerApiError("log.dirs", "/elsewhere");
  expect(expected).not.toBe("NONE");
  await submitBrokerForm(id, "SET", "log.dirs", "/elsewhere");
  expect(await text("#config-notice")).toStartWith(`${expected}: `);
  expect((await brokerConfig(id, "log.dirs"))?.value).not.toBe("/elsewhere");

  await submitBrokerForm(id, "DELETE", KEY, "");
  await submitBrokerForm("", "DELETE", "log.cleaner.backoff.ms", "");
  expect((await brokerConfig(id, KEY))?.source).not.toBe(2);
  expect((await brokerConfig(id, "log.cleaner.backoff.ms"))?.source).not.toBe(3);
  // The one refusal is answered 400 (the browser logs it); nothing else went wrong.
  const added = browser.errors.slice(errorsBefore);
  expect(added).toHaveLength(1);
  expect(added[0]).toContain("status of 400");
}, 60_000);

test("broker config posts are refused without ALTER_CONFIGS on the cluster or the page's token", async () => {
  const pageText = await (
    await fetch(`${admin}/console/configs`, {
      headers: { authorization: basic("alice", "wonderland") },
    })
  ).text();
  const token = /name="csrf" value="([^"]+)"/.exec(pageText)![1]!;
  const post = (user: string, password: string, fields: Record<string, string>) =>
    fetch(`${admin}/console/configs`, {
      method: "POST",
      redirect: "manual",
      headers: {
        authorization: basic(user, password),
        "content-type": "application/x-www-form-urlencoded",
        origin: admin,
      },
      body: new URLSearchParams(fields).toString(),
    });
  const id = String(broker.broker.services.brokerId);
  const change = { entity: id, operation: "SET", key: "log.retention.ms", value: "60000" };
  expect((await post("alice", "wonderland", change)).status).toBe(403);
  const bobs = await fetch(`${admin}/console/configs`, {
    headers: { authorization: basic("bob", "builder") },
  });
  expect(await bobs.text()).not.toContain('name="csrf"');
  const asBob = await post("bob", "builder", { ...change, csrf: token });
  expect(asBob.status).toBe(403);
  expect((await brokerConfig(id, "log.retention.ms"))?.source).not.toBe(2);
  const accepted = await post("alice", "wonderland", { ...change, csrf: token });
  expect(accepted.status).toBe(303);
  expect(await brokerConfig(id, "log.retention.ms")).toEqual({ value: "60000", source: 2 });
}, 60_000);
