import { z } from "zod";
import { type ValueType, valueType } from "./config-key.ts";

/**
 * Kafka's named listeners: `listeners=PLAINTEXT://:9092,SSL://0.0.0.0:9093`, each name mapped to
 * a security protocol by `listener.security.protocol.map`. Names are upper-cased, as Kafka's
 * ListenerName.normalised does, so `ssl://h:1` and `SSL://h:1` are the same listener.
 */

export const SECURITY_PROTOCOLS = ["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"] as const;
export type SecurityProtocol = (typeof SECURITY_PROTOCOLS)[number];

/** Kafka's SecurityProtocol ids, as UpdateMetadata carries them. */
export const SECURITY_PROTOCOL_IDS: Readonly<Record<SecurityProtocol, number>> = {
  PLAINTEXT: 0,
  SSL: 1,
  SASL_PLAINTEXT: 2,
  SASL_SSL: 3,
};

export const isSecurityProtocol = (text: string): text is SecurityProtocol =>
  (SECURITY_PROTOCOLS as readonly string[]).includes(text);

/** One listener as written: its name and where it binds (or what it advertises). */
export interface ListenerAddress {
  readonly listenerName: string;
  /** An empty host binds every interface, as in Kafka. */
  readonly host: string;
  readonly port: number;
}

/** A listener with the protocol its name maps to. */
export interface Listener extends ListenerAddress {
  readonly securityProtocol: SecurityProtocol;
}

/** At most this many listeners; Kafka has no limit, but each one is a bound port. */
export const LISTENERS_MAX = 16;

const LISTENER_TEXT = /^(?:([A-Za-z0-9_]+):\/\/)?(\[[0-9a-fA-F:.]*\]|[^:[\]/,\s]*):(\d{1,5})$/;

function parseListener(text: string): ListenerAddress | null {
  const match = LISTENER_TEXT.exec(text.trim());
  if (match === null) return null;
  const [, name = "PLAINTEXT", host = "", port = ""] = match;
  const portNumber = Number(port);
  if (portNumber > 65535) return null;
  return {
    listenerName: name.toUpperCase(),
    host: host.replace(/^\[(.*)\]$/, "$1"),
    port: portNumber,
  };
}

/** Names and non-zero ports must be unique: two listeners cannot share either. */
function distinct(listeners: readonly ListenerAddress[]): boolean {
  const names = new Set(listeners.map((l) => l.listenerName));
  const ports = listeners.filter((l) => l.port !== 0).map((l) => l.port);
  return names.size === listeners.length && new Set(ports).size === ports.length;
}

export const formatListener = ({ listenerName, host, port }: ListenerAddress): string =>
  `${listenerName}://${host.includes(":") ? `[${host}]` : host}:${port}`;

/**
 * `NAME://HOST:PORT[,NAME://HOST:PORT...]`; a bare `HOST:PORT` (the `--listen` flag) is the
 * PLAINTEXT listener. IPv6 hosts go in brackets.
 */
export const listenerList = (): ValueType<ListenerAddress[]> =>
  valueType({
    type: "STRING",
    expected:
      "NAME://HOST:PORT listeners separated by commas (HOST:PORT alone is PLAINTEXT), " +
      `distinct names and ports between 0 and 65535, at most ${LISTENERS_MAX}`,
    schema: () =>
      z.string().transform((text, ctx) => {
        const parsed = text.split(",").map(parseListener);
        const ok = parsed.every((l) => l !== null);
        if (!ok || parsed.length > LISTENERS_MAX || !distinct(parsed)) {
          ctx.addIssue({ code: "custom", message: "bad listeners" });
          return z.NEVER;
        }
        return parsed;
      }),
    format: (listeners) => listeners.map(formatListener).join(","),
    refusal: (text) => ({ value: text, reason: "Not a list of listeners NAME://HOST:PORT" }),
  });

export type SecurityProtocolMap = Readonly<Record<string, SecurityProtocol>>;

/** Kafka's default: each protocol's name is a listener name of that protocol. */
export const DEFAULT_SECURITY_PROTOCOL_MAP: SecurityProtocolMap = Object.fromEntries(
  SECURITY_PROTOCOLS.map((p) => [p, p]),
);

/** `listener.security.protocol.map`: `NAME:PROTOCOL` pairs separated by commas. */
export const securityProtocolMap = (): ValueType<SecurityProtocolMap> =>
  valueType({
    type: "STRING",
    expected:
      `LISTENER_NAME:PROTOCOL pairs separated by commas, each protocol one of ` +
      SECURITY_PROTOCOLS.join(", "),
    schema: () => z.string().transform(parseSecurityProtocolMap),
    format: (map) =>
      Object.entries(map)
        .map(([name, p]) => `${name}:${p}`)
        .join(","),
    refusal: (text) => ({ value: text, reason: "Not a map of LISTENER_NAME:PROTOCOL pairs" }),
  });

function parseSecurityProtocolMap(text: string, ctx: z.RefinementCtx<string>): SecurityProtocolMap {
  const map: Record<string, SecurityProtocol> = {};
  for (const entry of text.split(",")) {
    const parts = entry.trim().split(":");
    const [name = "", protocol = ""] = parts.map((p) => p.trim());
    if (parts.length !== 2 || !/^[A-Za-z0-9_]+$/.test(name) || !isSecurityProtocol(protocol)) {
      ctx.addIssue({ code: "custom", message: "bad map" });
      return z.NEVER;
    }
    map[name.toUpperCase()] = protocol;
  }
  return map;
}
