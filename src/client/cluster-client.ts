/**
 * A Kafka client's view of a cluster: a bootstrap connection, the API versions both sides speak
 * (negotiated once with ApiVersions, as Kafka's NetworkClient does), metadata, and one
 * connection per broker id. Requests are the generated codecs over `InterBrokerClient`, the same
 * framing the brokers use among themselves.
 */
import {
  type ClientTlsOptions,
  InterBrokerClient,
  InterBrokerError,
} from "../network/inter-broker-client.ts";
import { ErrorCode } from "../protocol/errors.ts";
import {
  API_SPECS,
  ApiKey,
  type ApiKeyNumber,
  type ApiMessages,
  type Init,
  type MetadataResponse,
} from "../protocol/generated/index.ts";
import { VERSION } from "../version.ts";
import { ClusterError, UnreachableError } from "./client-errors.ts";
import { authenticate, type SaslCredentials } from "./sasl-authenticator.ts";

export interface HostPort {
  readonly host: string;
  readonly port: number;
}

export interface ClientConfig {
  readonly bootstrap: readonly HostPort[];
  readonly clientId: string;
  readonly requestTimeoutMs: number;
  readonly connectTimeoutMs: number;
  /** security.protocol SSL or SASL_SSL. */
  readonly tls?: ClientTlsOptions;
  /** security.protocol SASL_PLAINTEXT or SASL_SSL. */
  readonly sasl?: SaslCredentials;
}

/**
 * Highest versions this client sends, where a later version changes fields it fills (topic ids
 * instead of names in Fetch v13+, grouped OffsetFetch v8+, batched FindCoordinator v4+).
 */
const VERSION_CAPS: Partial<Record<number, number>> = {
  [ApiKey.Produce]: 9,
  [ApiKey.Fetch]: 12,
  [ApiKey.ListOffsets]: 7,
  [ApiKey.Metadata]: 12,
  [ApiKey.OffsetCommit]: 8,
  [ApiKey.OffsetFetch]: 7,
  [ApiKey.FindCoordinator]: 3,
  [ApiKey.DeleteTopics]: 5,
  [ApiKey.CreateTopics]: 7,
};

/** Versions each API is spoken at, from the intersection of ours and the broker's ranges. */
export type ApiVersionTable = ReadonlyMap<number, number>;

/** Parses `host:port[,host:port…]`; a missing port is 9092. */
export function parseBrokerList(list: string): HostPort[] {
  const out: HostPort[] = [];
  for (const raw of list.split(",")) {
    const entry = raw.trim();
    if (entry === "") continue;
    const colon = entry.lastIndexOf(":");
    const host = colon < 0 ? entry : entry.slice(0, colon).replace(/^\[(.*)\]$/, "$1");
    const port = colon < 0 ? 9092 : Number(entry.slice(colon + 1));
    if (host === "" || !Number.isInteger(port) || port < 1 || port > 65535) {
      throw new RangeError(`"${entry}" is not host:port`);
    }
    out.push({ host, port });
  }
  if (out.length === 0) throw new RangeError(`no broker address in "${list}"`);
  return out;
}

export class ClusterClient {
  private readonly connections = new Map<number, Promise<InterBrokerClient>>();
  private brokers = new Map<number, HostPort>();

  private constructor(
    readonly config: ClientConfig,
    private readonly bootstrapConnection: InterBrokerClient,
    readonly versions: ApiVersionTable,
  ) {}

  /** Connects to the first bootstrap broker that answers ApiVersions. */
  static async connect(config: ClientConfig): Promise<ClusterClient> {
    const failures: string[] = [];
    for (const address of config.bootstrap) {
      try {
        const connection = await ClusterClient.open(config, address);
        try {
          // ApiVersions is the one request a SASL listener answers before authentication.
          const versions = await negotiateVersions(connection, config.requestTimeoutMs);
          await ClusterClient.authenticate(config, connection, versions);
          return new ClusterClient(config, connection, versions);
        } catch (error) {
          connection.close();
          throw error;
        }
      } catch (error) {
        if (!(error instanceof InterBrokerError)) throw error;
        failures.push(error.message);
      }
    }
    throw new UnreachableError(
      `no broker reachable (${failures.join("; ")})\n` +
        "  what to do: check -b/--brokers or QUILL_BROKERS and that the cluster is running",
    );
  }

  private static open(config: ClientConfig, address: HostPort): Promise<InterBrokerClient> {
    return InterBrokerClient.connect(address.host, address.port, {
      clientId: config.clientId,
      connectTimeoutMs: config.connectTimeoutMs,
      tls: config.tls,
    });
  }

  private static async authenticate(
    config: ClientConfig,
    connection: InterBrokerClient,
    versions: ApiVersionTable,
  ): Promise<void> {
    if (config.sasl === undefined) return;
    const version = versions.get(ApiKey.SaslAuthenticate);
    if (version === undefined) {
      throw new ClusterError(35, "for SaslAuthenticate", "the broker does not offer SASL");
    }
    const sasl = config.sasl;
    await connection.authenticate(
      (channel, timeoutMs) => authenticate(channel, sasl, version, timeoutMs),
      config.requestTimeoutMs,
    );
  }

  /** A new connection to a broker, authenticated as the configuration says. */
  private async openAuthenticated(address: HostPort): Promise<InterBrokerClient> {
    const connection = await ClusterClient.open(this.config, address);
    try {
      await ClusterClient.authenticate(this.config, connection, this.versions);
    } catch (error) {
      connection.close();
      throw error;
    }
    return connection;
  }

  /** The version this client speaks for `apiKey`; throws when the cluster has none in common. */
  version(apiKey: ApiKeyNumber): number {
    const v = this.versions.get(apiKey);
    if (v === undefined) {
      const name = API_SPECS[apiKey]?.name ?? String(apiKey);
      throw new ClusterError(35, `for ${name}`, `the cluster does not offer ${name}`);
    }
    return v;
  }

  supports(apiKey: ApiKeyNumber): boolean {
    return this.versions.has(apiKey);
  }

  /** Sends to the bootstrap broker (or `nodeId`'s connection) and waits for the answer. */
  async request<K extends ApiKeyNumber>(
    apiKey: K,
    body: Init<ApiMessages[K]["request"]>,
    nodeId: number | null = null,
    timeoutMs = this.config.requestTimeoutMs,
  ): Promise<ApiMessages[K]["response"]> {
    const connection = nodeId === null ? this.bootstrapConnection : await this.broker(nodeId);
    try {
      return await connection.request(apiKey, this.version(apiKey), body, timeoutMs);
    } catch (error) {
      if (error instanceof InterBrokerError) throw new UnreachableError(error.message);
      throw error;
    }
  }

  /** Metadata for `topics` (null: all), remembering broker addresses for `broker()`. */
  async metadata(topics: readonly string[] | null): Promise<MetadataResponse> {
    const response = await this.request(ApiKey.Metadata, {
      topics: topics === null ? null : topics.map((name) => ({ name })),
      allowAutoTopicCreation: false,
    });
    this.brokers = new Map(response.brokers.map((b) => [b.nodeId, b]));
    return response;
  }

  /** The connection to broker `nodeId` (from the last metadata), opened on first use. */
  async broker(nodeId: number): Promise<InterBrokerClient> {
    const existing = this.connections.get(nodeId);
    if (existing !== undefined) {
      const connection = await existing;
      if (!connection.isClosed) return connection;
    }
    if (!this.brokers.has(nodeId)) await this.metadata([]);
    const address = this.brokers.get(nodeId);
    if (address === undefined) throw new UnreachableError(`broker ${nodeId} is not in metadata`);
    const opening = this.openAuthenticated(address).catch((error: unknown) => {
      this.connections.delete(nodeId);
      if (!(error instanceof InterBrokerError)) throw error;
      throw new UnreachableError(error.message);
    });
    this.connections.set(nodeId, opening);
    return opening;
  }

  /** Addresses of the brokers in the last metadata answer. */
  knownBrokers(): ReadonlyMap<number, HostPort> {
    return this.brokers;
  }

  close(): void {
    this.bootstrapConnection.close();
    for (const opening of this.connections.values()) {
      void opening.then(
        (c) => c.close(),
        () => {},
      );
    }
    this.connections.clear();
  }
}

/**
 * How the client names itself in ApiVersions v3+ (KIP-511), as the Java client sends
 * apache-kafka-java and its version: brokers keep the pair on the connection and name it in their
 * log lines. Characters outside the field's pattern (a semver build suffix) become '-'.
 */
export const CLIENT_SOFTWARE_NAME = "quill";
export const CLIENT_SOFTWARE_VERSION = VERSION.replace(/[^a-zA-Z0-9.-]/g, "-");

async function negotiateVersions(
  connection: InterBrokerClient,
  timeoutMs: number,
): Promise<ApiVersionTable> {
  const named = {
    clientSoftwareName: CLIENT_SOFTWARE_NAME,
    clientSoftwareVersion: CLIENT_SOFTWARE_VERSION,
  };
  let response = await connection.request(ApiKey.ApiVersions, 3, named, timeoutMs);
  // A broker without v3 (Kafka before 2.4) answers UNSUPPORTED_VERSION; every broker has v0.
  if (response.errorCode === ErrorCode.UNSUPPORTED_VERSION) {
    response = await connection.request(ApiKey.ApiVersions, 0, {}, timeoutMs);
  }
  if (response.errorCode !== 0) throw new ClusterError(response.errorCode, "in ApiVersions");
  const table = new Map<number, number>();
  for (const theirs of response.apiKeys) {
    const ours = API_SPECS[theirs.apiKey];
    if (ours === undefined) continue;
    const max = Math.min(theirs.maxVersion, ours.maxVersion, VERSION_CAPS[theirs.apiKey] ?? 99);
    if (max >= Math.max(theirs.minVersion, ours.minVersion)) table.set(theirs.apiKey, max);
  }
  return table;
}
