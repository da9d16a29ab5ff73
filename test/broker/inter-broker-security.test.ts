/**
 * The inter-broker listener's protocol decides how this broker connects to the others; a SASL
 * one without the mechanism or the broker's own credentials stops the start with the key named.
 * (test/broker/inter-broker-sasl-ssl.test.ts runs a SASL_SSL cluster.)
 */
import { expect, test } from "bun:test";
import { interBrokerSecurity } from "../../src/broker/inter-broker-security.ts";
import { ConfigError } from "../../src/config/config-error.ts";
import { type FlagSetting, loadConfig } from "../../src/config/load-config.ts";

const set = (key: string, value: string): FlagSetting => ({ key, value, flag: "--set" });

const JAAS = "listener.name.internal.plain.sasl.jaas.config";

function configFor(extra: Readonly<Record<string, string>>) {
  const settings: Record<string, string> = {
    "zookeeper.connect": "127.0.0.1:2181",
    listeners: "PLAINTEXT://127.0.0.1:9092,INTERNAL://127.0.0.1:9093",
    "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,INTERNAL:SASL_PLAINTEXT",
    "inter.broker.listener.name": "INTERNAL",
    "sasl.enabled.mechanisms": "PLAIN",
    ...extra,
  };
  const flags = Object.entries(settings).map(([k, v]) => set(k, v));
  return loadConfig({ flags }).config;
}

function refusal(extra: Readonly<Record<string, string>>): string {
  try {
    interBrokerSecurity(configFor(extra));
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    return (error as Error).message;
  }
  throw new Error("expected a ConfigError");
}

test("a PLAINTEXT inter-broker listener neither encrypts nor authenticates", () => {
  const security = interBrokerSecurity(configFor({ "inter.broker.listener.name": "PLAINTEXT" }));
  expect(security).toEqual({});
});

test("a SASL inter-broker listener needs sasl.mechanism.inter.broker.protocol", () => {
  expect(refusal({ [JAAS]: 'PlainLoginModule required username="b" password="p";' })).toContain(
    "sasl.mechanism.inter.broker.protocol is not set",
  );
});

test("the broker's username and password come from the listener's JAAS config for the mechanism", () => {
  const mechanism = { "sasl.mechanism.inter.broker.protocol": "PLAIN" };
  expect(refusal({ ...mechanism, [JAAS]: 'PlainLoginModule required user_b="p";' })).toContain(
    `${JAAS} must hold the broker's own username`,
  );
  expect(refusal(mechanism)).toContain(JAAS);
  const security = interBrokerSecurity(
    configFor({ ...mechanism, [JAAS]: 'PlainLoginModule required username="b" password="p";' }),
  );
  expect(security.tls).toBeUndefined();
  expect(typeof security.authenticate).toBe("function");
});
