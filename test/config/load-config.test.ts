import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BROKER_CONFIG_KEYS, type BrokerConfigKey } from "../../src/config/broker-config.ts";
import { ConfigError } from "../../src/config/config-error.ts";
import { envName, type FlagSetting, loadConfig } from "../../src/config/load-config.ts";

const dir = mkdtempSync(join(tmpdir(), "quill-config-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

let fileCount = 0;
function propertiesFile(text: string): string {
  const path = join(dir, `server-${fileCount++}.properties`);
  writeFileSync(path, text);
  return path;
}

const set = (key: string, value: string): FlagSetting => ({ key, value, flag: "--set" });

function configError(run: () => unknown): string {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as Error).message;
  }
  throw new Error("expected a ConfigError");
}

describe("defaults", () => {
  test("Kafka's defaults where the concept is the same", () => {
    const { config, warning } = loadConfig({});
    expect(warning).toBeNull();
    expect(config["num.partitions"]).toBe(1);
    expect(config["message.max.bytes"]).toBe(1048588);
    expect(config["socket.request.max.bytes"]).toBe(104857600);
    expect(config["log.segment.bytes"]).toBe(1073741824);
    expect(config["log.retention.ms"]).toBe(168 * 3600_000);
    expect(config["log.roll.ms"]).toBe(168 * 3600_000);
    expect(config["log.retention.bytes"]).toBe(-1);
    expect(config["log.flush.interval.ms"]).toBeNull();
    expect(config["log.cleanup.policy"]).toEqual(["delete"]);
    expect(config["compression.type"]).toBe("producer");
    expect(config["auto.create.topics.enable"]).toBe(true);
    expect(config["group.initial.rebalance.delay.ms"]).toBe(3000);
    expect(config["zookeeper.connect"]).toBeNull();
    expect(config.listeners).toEqual([
      { listenerName: "PLAINTEXT", host: "127.0.0.1", port: 9092, securityProtocol: "PLAINTEXT" },
    ]);
    expect(config["advertised.listeners"]).toEqual([
      { listenerName: "PLAINTEXT", host: "127.0.0.1", port: 9092, securityProtocol: "PLAINTEXT" },
    ]);
    expect(config["inter.broker.listener.name"]).toBe("PLAINTEXT");
    expect(config["log.dirs"]).toEqual(["./data"]);
    expect(config.origins.size).toBe(0);
  });
});

describe("precedence: flag > env > file > default", () => {
  const file = () =>
    propertiesFile(
      "num.partitions=3\nlog.segment.bytes=1000\nbroker.id=7\nmessage.max.bytes=500\n",
    );
  const env = { QUILL_NUM_PARTITIONS: "4", QUILL_LOG_SEGMENT_BYTES: "2000" };

  test("each source overrides the one below it, key by key", () => {
    const { config } = loadConfig({ configFile: file(), env, flags: [set("num.partitions", "5")] });
    expect(config["num.partitions"]).toBe(5); // flag over env and file
    expect(config["log.segment.bytes"]).toBe(2000); // env over file
    expect(config["broker.id"]).toBe(7); // file over default
    expect(config["socket.request.max.bytes"]).toBe(104857600); // default
    expect(config.origins.get("num.partitions")).toEqual({ kind: "flag", label: "--set" });
    expect(config.origins.get("log.segment.bytes")).toEqual({
      kind: "env",
      label: "QUILL_LOG_SEGMENT_BYTES",
    });
    expect(config.origins.get("broker.id")?.kind).toBe("file");
    expect(config.origins.has("socket.request.max.bytes")).toBe(false);
  });

  test("group.consumer.migration.policy takes Kafka's values in any case", () => {
    const { config } = loadConfig({ env: {}, flags: [] });
    expect(config["group.consumer.migration.policy"]).toBe("bidirectional");
    const flags = [set("group.consumer.migration.policy", "Downgrade")];
    expect(loadConfig({ env: {}, flags }).config["group.consumer.migration.policy"]).toBe(
      "downgrade",
    );
    const bad = [set("group.consumer.migration.policy", "sideways")];
    expect(configError(() => loadConfig({ env: {}, flags: bad }))).toContain("one of");
  });

  test("the later of two flags for one key wins, dedicated flags included", () => {
    const flags = [{ key: "broker.id", value: "1", flag: "--broker-id" }, set("broker.id", "2")];
    expect(loadConfig({ flags }).config["broker.id"]).toBe(2);
    expect(loadConfig({ flags: [...flags].reverse() }).config["broker.id"]).toBe(1);
  });

  test("the env name of a key is QUILL_ + upper case with dots as underscores", () => {
    expect(envName("log.retention.hours")).toBe("QUILL_LOG_RETENTION_HOURS");
    const { config } = loadConfig({
      env: { QUILL_AUTO_CREATE_TOPICS_ENABLE: "false", QUILL_LOG_DIRS: "/a, /b", PATH: "/bin" },
    });
    expect(config["auto.create.topics.enable"]).toBe(false);
    expect(config["log.dirs"]).toEqual(["/a", "/b"]);
  });

  test("log.dirs beats log.dir in any source; log.dir alone is used as the one directory", () => {
    expect(loadConfig({ configFile: propertiesFile("log.dir=/only") }).config["log.dirs"]).toEqual([
      "/only",
    ]);
    const both = loadConfig({
      configFile: propertiesFile("log.dirs=/many"),
      flags: [set("log.dir", "/one")],
    });
    expect(both.config["log.dirs"]).toEqual(["/many"]);
  });

  test("a stock Kafka server.properties loads, naming the keys Quill ignores", () => {
    const text = `# Licensed to the Apache Software Foundation
broker.id=0
num.network.threads=3
num.io.threads=8
socket.send.buffer.bytes=102400
socket.receive.buffer.bytes=102400
socket.request.max.bytes=104857600
log.dirs=/tmp/kafka-logs
num.partitions=1
num.recovery.threads.per.data.dir=1
offsets.topic.replication.factor=1
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
log.retention.hours=168
log.segment.bytes=1073741824
log.retention.check.interval.ms=300000
zookeeper.connect=localhost:2181
zookeeper.connection.timeout.ms=18000
group.initial.rebalance.delay.ms=0
`;
    const { config, warning } = loadConfig({ configFile: propertiesFile(text) });
    expect(config["zookeeper.connect"]).toBe("localhost:2181");
    expect(config["group.initial.rebalance.delay.ms"]).toBe(0);
    expect(config["log.dirs"]).toEqual(["/tmp/kafka-logs"]);
    expect(warning).toBe(
      "Kafka config keys Quill ignores: num.io.threads, num.network.threads, " +
        "num.recovery.threads.per.data.dir, socket.receive.buffer.bytes, socket.send.buffer.bytes",
    );
    // The coordinators read these now, so they are applied, not ignored.
    expect(config["offsets.topic.replication.factor"]).toBe(1);
    expect(config["transaction.state.log.replication.factor"]).toBe(1);
    expect(config["transaction.state.log.min.isr"]).toBe(1);
  });
});

describe("retention and roll: Kafka's ms > minutes > hours", () => {
  const retention = (...settings: FlagSetting[]) =>
    loadConfig({ flags: settings }).config["log.retention.ms"];

  test("hours alone, minutes over hours, ms over both", () => {
    expect(retention(set("log.retention.hours", "2"))).toBe(7_200_000);
    expect(retention(set("log.retention.hours", "2"), set("log.retention.minutes", "3"))).toBe(
      180_000,
    );
    expect(
      retention(
        set("log.retention.minutes", "3"),
        set("log.retention.ms", "1234"),
        set("log.retention.hours", "9"),
      ),
    ).toBe(1234);
  });

  test("the order of keys is applied after merging sources, as in Kafka", () => {
    const { config } = loadConfig({
      configFile: propertiesFile("log.retention.ms=5000"),
      flags: [set("log.retention.hours", "1")],
    });
    expect(config["log.retention.ms"]).toBe(5000);
  });

  test("any negative result means unlimited (-1); zero is rejected, naming the key that set it", () => {
    expect(retention(set("log.retention.hours", "-5"))).toBe(-1);
    expect(retention(set("log.retention.ms", "-1"))).toBe(-1);
    expect(configError(() => retention(set("log.retention.minutes", "0")))).toBe(
      'invalid config log.retention.minutes="0" (from --set): expected a retention of -1 (unlimited) or at least 1 ms',
    );
    expect(configError(() => loadConfig({ env: { QUILL_LOG_RETENTION_HOURS: "0" } }))).toContain(
      'log.retention.hours="0" (from QUILL_LOG_RETENTION_HOURS)',
    );
  });

  test("log.roll.ms overrides log.roll.hours", () => {
    expect(loadConfig({ flags: [set("log.roll.hours", "1")] }).config["log.roll.ms"]).toBe(
      3_600_000,
    );
    expect(
      loadConfig({ flags: [set("log.roll.hours", "1"), set("log.roll.ms", "10")] }).config[
        "log.roll.ms"
      ],
    ).toBe(10);
  });
});

describe("bad values", () => {
  test("the message names key, value, source and what was expected", () => {
    expect(configError(() => loadConfig({ flags: [set("log.segment.bytes", "abc")] }))).toBe(
      'invalid config log.segment.bytes="abc" (from --set): expected an integer between 14 and 2147483647',
    );
    const file = propertiesFile("# first\n\nnum.partitions = 0\n");
    expect(configError(() => loadConfig({ configFile: file }))).toBe(
      `invalid config num.partitions="0" (from ${file.split("/").pop()}:3): expected an integer between 1 and 2147483647`,
    );
    expect(configError(() => loadConfig({ env: { QUILL_AUTO_CREATE_TOPICS_ENABLE: "yes" } }))).toBe(
      'invalid config auto.create.topics.enable="yes" (from QUILL_AUTO_CREATE_TOPICS_ENABLE): expected true or false',
    );
  });

  test("every key rejects a value of the wrong shape, and the message names it", () => {
    // Any non-empty text is a password (or PEM text, checked when a TLS listener starts).
    const keys = (Object.keys(BROKER_CONFIG_KEYS) as BrokerConfigKey[]).filter(
      (k) => BROKER_CONFIG_KEYS[k].valueType.type !== "PASSWORD",
    );
    for (const k of keys) {
      const bad =
        BROKER_CONFIG_KEYS[k].valueType.type === "STRING" &&
        // Blank means "none" for the authorizer keys, as in Kafka.
        !["listeners", "advertised.listeners", "authorizer.class.name", "super.users"].includes(
          k,
        ) &&
        !k.endsWith(".type") &&
        k !== "ssl.endpoint.identification.algorithm"
          ? "   "
          : "not a value,";
      const message = configError(() =>
        loadConfig({ flags: [{ key: k, value: bad, flag: "--set" }] }),
      );
      expect(message).toStartWith(
        `invalid config ${k}=${JSON.stringify(bad)} (from --set): expected `,
      );
    }
  });

  test("integers: no decimals, exponents or hex; 64-bit bounds are exact; blanks are trimmed", () => {
    for (const value of ["1.5", "1e3", "0x10", "", "9223372036854775808"]) {
      expect(
        configError(() => loadConfig({ flags: [set("log.retention.bytes", value)] })),
      ).toContain("log.retention.bytes");
    }
    expect(configError(() => loadConfig({ flags: [set("broker.id", "2147483648")] }))).toContain(
      "broker.id",
    );
    const ok = loadConfig({
      flags: [set("log.retention.bytes", " 9223372036854775807 "), set("broker.id", "+3")],
    });
    expect(ok.config["log.retention.bytes"]).toBe(2 ** 63);
    expect(ok.config["broker.id"]).toBe(3);
  });

  test("enumerations are case-sensitive like Kafka's; booleans are not", () => {
    expect(
      configError(() => loadConfig({ flags: [set("log.message.timestamp.type", "createtime")] })),
    ).toContain("expected one of CreateTime, LogAppendTime");
    expect(
      loadConfig({ flags: [set("delete.topic.enable", "FALSE")] }).config["delete.topic.enable"],
    ).toBe(false);
  });

  test("listeners: HOST:PORT (PLAINTEXT) or NAME://HOST:PORT, several, IPv6 in brackets", () => {
    const listen = (value: string, ...more: FlagSetting[]) =>
      loadConfig({ flags: [{ key: "listeners", value, flag: "--listen" }, ...more] }).config;
    const plain = (host: string, port: number) => ({
      listenerName: "PLAINTEXT",
      host,
      port,
      securityProtocol: "PLAINTEXT" as const,
    });
    expect(listen("PLAINTEXT://10.0.0.1:9093").listeners).toEqual([plain("10.0.0.1", 9093)]);
    expect(listen("[::1]:0").listeners).toEqual([plain("::1", 0)]);
    expect(listen("localhost:19092")["advertised.listeners"]).toEqual([plain("localhost", 19092)]);
    const two = listen(
      "plaintext://127.0.0.1:9092,INTERNAL://:9093",
      set("listener.security.protocol.map", "PLAINTEXT:PLAINTEXT,INTERNAL:PLAINTEXT"),
      set("advertised.listeners", "INTERNAL://broker1:9093"),
    );
    expect(two.listeners.map((l) => l.listenerName)).toEqual(["PLAINTEXT", "INTERNAL"]);
    expect(two["advertised.listeners"]).toEqual([
      plain("127.0.0.1", 9092),
      {
        listenerName: "INTERNAL",
        host: "broker1",
        port: 9093,
        securityProtocol: "PLAINTEXT" as const,
      },
    ]);
    for (const bad of ["9092", "h:1,h:1", "A://h:1,a://h:2", "h:65536", "h:-1"]) {
      expect(configError(() => listen(bad))).toContain(
        `listeners=${JSON.stringify(bad)} (from --listen)`,
      );
    }
    expect(configError(() => listen("OTHER://h:1"))).toContain(
      "expected listener names found in listener.security.protocol.map (OTHER is not)",
    );
    expect(configError(() => listen("h:1", set("advertised.listeners", "SSL://h:2")))).toContain(
      "expected listener names found in listeners (SSL is not)",
    );
  });

  test("listeners of every Kafka protocol load, each with its protocol", () => {
    const listeners = loadConfig({
      flags: [set("listeners", "PLAINTEXT://h:1,SSL://h:2,SASL_PLAINTEXT://h:3,SASL_SSL://h:4")],
    }).config.listeners;
    expect(listeners.map((l) => l.securityProtocol)).toEqual([
      "PLAINTEXT",
      "SSL",
      "SASL_PLAINTEXT",
      "SASL_SSL",
    ]);
  });

  test("inter-broker listener: one key of two; a cluster's must be the PLAINTEXT listener", () => {
    expect(
      configError(() =>
        loadConfig({
          flags: [
            set("inter.broker.listener.name", "INTERNAL"),
            set("security.inter.broker.protocol", "PLAINTEXT"),
          ],
        }),
      ),
    ).toContain("only one of");
    const zk = set("zookeeper.connect", "127.0.0.1:2181");
    expect(
      loadConfig({ flags: [zk, set("inter.broker.listener.name", "plaintext")] }).config[
        "inter.broker.listener.name"
      ],
    ).toBe("PLAINTEXT");
    expect(
      configError(() => loadConfig({ flags: [zk, set("inter.broker.listener.name", "X")] })),
    ).toContain("expected the name of one of the listeners (PLAINTEXT)");
    const internal = [
      zk,
      set("listeners", "INTERNAL://h:1"),
      set("inter.broker.listener.name", "INTERNAL"),
      set("listener.security.protocol.map", "INTERNAL:PLAINTEXT"),
    ];
    expect(loadConfig({ flags: internal }).config["inter.broker.listener.name"]).toBe("INTERNAL");
  });

  test("a wildcard listener advertises the host name; a wildcard advertised address is rejected", () => {
    const { config } = loadConfig({
      flags: [{ key: "listeners", value: "0.0.0.0:9092", flag: "--listen" }],
    });
    expect(config["advertised.listeners"][0]!.host).not.toBe("0.0.0.0");
    expect(config["advertised.listeners"][0]!.port).toBe(9092);
    expect(
      configError(() =>
        loadConfig({
          flags: [{ key: "advertised.listeners", value: "0.0.0.0:1", flag: "--advertise" }],
        }),
      ),
    ).toContain('advertised.listeners="PLAINTEXT://0.0.0.0:1" (from --advertise)');
  });

  test("an unreadable config file is one ConfigError naming it", () => {
    const missing = join(dir, "missing.properties");
    expect(configError(() => loadConfig({ configFile: missing }))).toBe(
      `cannot read config file ${missing} (from --config): ENOENT`,
    );
  });
});

describe("unknown and ignored keys", () => {
  test("one warning lists unknown keys with their source, then Kafka keys Quill ignores", () => {
    const { config, warning } = loadConfig({
      configFile: propertiesFile("num.io.threads=8\nbogus.key=1\n"),
      env: { QUILL_NOT_A_KEY: "x" },
      flags: [set("also.bogus", "2"), set("num.partitions", "2")],
    });
    expect(config["num.partitions"]).toBe(2);
    expect(warning).toMatch(
      /^unknown config keys, not used: bogus\.key \(server-\d+\.properties:2\), not\.a\.key \(QUILL_NOT_A_KEY\), also\.bogus \(--set\); Kafka config keys Quill ignores: num\.io\.threads$/,
    );
  });
});

describe("security settings this build cannot honour refuse the start (never open)", () => {
  const refused = (key: string, value: string) =>
    configError(() => loadConfig({ flags: [set(key, value)] }));

  test("TLS, SASL, ACL and per-listener keys each name the key, its value and source", () => {
    expect(refused("ssl.cipher.suites", "TLS_AES_128_GCM_SHA256")).toBe(
      "refusing to start: security config " +
        'ssl.cipher.suites="TLS_AES_128_GCM_SHA256" (from --set) ' +
        "asks for a TLS setting, which this build of Quill does not provide; remove it, or the " +
        "broker would run unprotected",
    );
    expect(refused("ssl.keystore.type", "JKS")).toContain("expected one of PEM");
    expect(refused("sasl.kerberos.service.name", "kafka")).toContain(
      'sasl.kerberos.service.name="kafka" (from --set) asks for a SASL setting',
    );
    expect(refused("sasl.enabled.mechanisms", "GSSAPI")).toContain("expected a comma-separated");
    // Kafka's AclAuthorizer is honoured; any other authorizer class refuses the start.
    expect(refused("authorizer.class.name", "com.example.OpenAuthorizer")).toContain(
      'authorizer.class.name="com.example.OpenAuthorizer" (from --set): expected ' +
        "kafka.security.authorizer.AclAuthorizer or blank",
    );
    expect(refused("super.users", "admin")).toContain("expected principals (User:<name>)");
    expect(refused("principal.builder.class", "com.example.P")).toContain(
      "a pluggable security class",
    );
    expect(refused("listener.name.internal.ssl.cipher.suites", "x")).toContain(
      "per-listener security settings",
    );
  });

  test("a malformed protocol map or an unknown protocol is an invalid value", () => {
    expect(refused("listener.security.protocol.map", "EXTERNAL:BOGUS")).toContain(
      "expected LISTENER_NAME:PROTOCOL pairs separated by commas",
    );
    expect(refused("listener.security.protocol.map", "EXTERNAL")).toContain(
      "expected LISTENER_NAME:PROTOCOL pairs",
    );
    expect(refused("security.inter.broker.protocol", "TLS")).toContain("expected one of PLAINTEXT");
  });

  test("from the file and the environment too; the first refused key is named", () => {
    const file = propertiesFile("broker.id=1\nssl.cipher.suites=X\n");
    expect(configError(() => loadConfig({ configFile: file }))).toMatch(
      /ssl\.cipher\.suites="X" \(from server-\d+\.properties:2\)/,
    );
    expect(
      configError(() => loadConfig({ env: { QUILL_SASL_KERBEROS_SERVICE_NAME: "kafka" } })),
    ).toContain("(from QUILL_SASL_KERBEROS_SERVICE_NAME)");
  });

  test("PLAINTEXT as written, blank values and a later blank override start quietly", () => {
    const { warning } = loadConfig({
      configFile: propertiesFile("ssl.cipher.suites=X\nauthorizer.class.name=\n"),
      flags: [
        set("listener.security.protocol.map", "PLAINTEXT:PLAINTEXT"),
        set("security.inter.broker.protocol", "PLAINTEXT"),
        set("ssl.cipher.suites", ""),
      ],
    });
    expect(warning).toBeNull();
  });
});
