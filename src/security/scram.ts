/**
 * SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677) as Kafka's ScramSaslServer: credentials
 * are kept salted and hashed (salt, StoredKey, ServerKey, iterations), never as passwords, in
 * Kafka's text form `salt=…,stored_key=…,server_key=…,iterations=…`.
 */
import {
  createHash,
  createHmac,
  pbkdf2,
  pbkdf2Sync,
  randomBytes,
  timingSafeEqual,
} from "node:crypto";

export const SCRAM_MECHANISMS = ["SCRAM-SHA-256", "SCRAM-SHA-512"] as const;
export type ScramMechanism = (typeof SCRAM_MECHANISMS)[number];

/** Kafka's ScramMechanism type ids (DescribeUserScramCredentials, AlterUserScramCredentials). */
export const SCRAM_MECHANISM_IDS: Readonly<Record<ScramMechanism, number>> = {
  "SCRAM-SHA-256": 1,
  "SCRAM-SHA-512": 2,
};

/** Kafka's bounds on iterations (ScramMechanism.minIterations, and its 16384 maximum). */
export const SCRAM_MIN_ITERATIONS = 4096;
export const SCRAM_MAX_ITERATIONS = 16384;

const HASH: Readonly<Record<ScramMechanism, { name: string; bytes: number }>> = {
  "SCRAM-SHA-256": { name: "sha256", bytes: 32 },
  "SCRAM-SHA-512": { name: "sha512", bytes: 64 },
};

export interface ScramCredential {
  readonly salt: Uint8Array;
  readonly storedKey: Uint8Array;
  readonly serverKey: Uint8Array;
  readonly iterations: number;
}

const hmac = (m: ScramMechanism, key: Uint8Array, text: string | Uint8Array) =>
  new Uint8Array(createHmac(HASH[m].name, key).update(text).digest());
const hash = (m: ScramMechanism, data: Uint8Array) =>
  new Uint8Array(createHash(HASH[m].name).update(data).digest());

/** The stored form of a password: what Kafka's kafka-configs.sh writes for a user. */
export function scramCredential(
  m: ScramMechanism,
  password: string,
  iterations: number,
  salt: Uint8Array = randomBytes(32),
): ScramCredential {
  const salted = saltedPassword(m, password, salt, iterations);
  return credentialFromSalted(m, salted, salt, iterations);
}

/** AlterUserScramCredentials sends the salted password, not the password. */
export function credentialFromSalted(
  m: ScramMechanism,
  salted: Uint8Array,
  salt: Uint8Array,
  iterations: number,
): ScramCredential {
  const clientKey = hmac(m, salted, "Client Key");
  return {
    salt,
    storedKey: hash(m, clientKey),
    serverKey: hmac(m, salted, "Server Key"),
    iterations,
  };
}

/**
 * Whether `password` is the one `credential` was made from (its StoredKey matches), for logins
 * that carry a password rather than a SCRAM exchange (the admin listener's HTTP basic). The
 * PBKDF2 runs on the thread pool: thousands of iterations would stall the event loop.
 */
export async function passwordMatches(
  m: ScramMechanism,
  password: string,
  credential: ScramCredential,
): Promise<boolean> {
  const { salt, iterations, storedKey } = credential;
  const salted = await new Promise<Uint8Array>((resolve, reject) =>
    pbkdf2(password.normalize("NFKC"), salt, iterations, HASH[m].bytes, HASH[m].name, (e, key) =>
      e ? reject(e) : resolve(new Uint8Array(key)),
    ),
  );
  const candidate = credentialFromSalted(m, salted, salt, iterations).storedKey;
  return candidate.length === storedKey.length && timingSafeEqual(candidate, storedKey);
}

function saltedPassword(m: ScramMechanism, password: string, salt: Uint8Array, i: number) {
  return new Uint8Array(
    pbkdf2Sync(password.normalize("NFKC"), salt, i, HASH[m].bytes, HASH[m].name),
  );
}

const b64 = (bytes: Uint8Array) => Buffer.from(bytes).toString("base64");
const unb64 = (text: string) => new Uint8Array(Buffer.from(text, "base64"));

export function formatScramCredential(c: ScramCredential): string {
  return (
    `salt=${b64(c.salt)},stored_key=${b64(c.storedKey)},server_key=${b64(c.serverKey)},` +
    `iterations=${c.iterations}`
  );
}

/** Reads Kafka's text form; null when it is not one. */
export function parseScramCredential(text: string): ScramCredential | null {
  const fields = new Map(
    text.split(",").map((kv) => {
      const eq = kv.indexOf("=");
      return [kv.slice(0, eq), kv.slice(eq + 1)] as const;
    }),
  );
  const [salt, storedKey, serverKey] = ["salt", "stored_key", "server_key"].map((k) =>
    fields.get(k),
  );
  const iterations = Number(fields.get("iterations"));
  if (salt === undefined || storedKey === undefined || serverKey === undefined) return null;
  if (!Number.isInteger(iterations) || iterations < 1) return null;
  return {
    salt: unb64(salt),
    storedKey: unb64(storedKey),
    serverKey: unb64(serverKey),
    iterations,
  };
}

/** A client message that is not SCRAM, or credentials that do not match. */
export class ScramError extends Error {
  override readonly name = "ScramError";
}

/** Most bytes of one SCRAM message: a nonce, a user name and a proof fit in far fewer. */
const MESSAGE_MAX_BYTES = 4096;
const ATTRIBUTE = /^([a-zA-Z])=(.*)$/s;

function attributes(message: string): Map<string, string> {
  const result = new Map<string, string>();
  for (const part of message.split(",")) {
    const match = ATTRIBUTE.exec(part);
    if (match === null) throw new ScramError("Invalid SCRAM message");
    result.set(match[1]!, match[2]!);
  }
  return result;
}

const decodeName = (name: string) => name.replaceAll("=2C", ",").replaceAll("=3D", "=");

type Lookup = (user: string) => Promise<ScramCredential | undefined>;

/**
 * One connection's server side of a SCRAM exchange: client-first, then client-final. The
 * server nonce is fresh per exchange, so a client-final recorded from another exchange (a
 * nonce replay) fails the nonce check.
 */
export class ScramServer {
  private state: "first" | "final" | "done" = "first";
  private user = "";
  private credential: ScramCredential | undefined;
  private clientFirstBare = "";
  private serverFirst = "";
  private nonce = "";
  private gs2Header = "";

  constructor(
    readonly mechanism: ScramMechanism,
    private readonly lookup: Lookup,
  ) {}

  /** The authenticated user name once the exchange succeeded. */
  get authorizationId(): string {
    return this.user;
  }

  get complete(): boolean {
    return this.state === "done";
  }

  /** Answers one client message; throws ScramError when authentication must fail. */
  async evaluate(token: Uint8Array): Promise<Uint8Array> {
    if (token.length > MESSAGE_MAX_BYTES) throw new ScramError("SCRAM message too long");
    const message = new TextDecoder("utf-8", { fatal: true }).decode(token);
    if (this.state === "first") return new TextEncoder().encode(await this.clientFirst(message));
    if (this.state === "final") return new TextEncoder().encode(this.clientFinal(message));
    throw new ScramError("SCRAM exchange already complete");
  }

  private async clientFirst(message: string): Promise<string> {
    const match = /^([ny]|p=[^,]*),(a=[^,]*)?,(.*)$/s.exec(message);
    if (match === null) throw new ScramError("Invalid SCRAM client first message");
    if (match[1]!.startsWith("p=")) throw new ScramError("Channel binding is not supported");
    this.gs2Header = `${match[1]},${match[2] ?? ""},`;
    this.clientFirstBare = match[3]!;
    const attrs = attributes(this.clientFirstBare);
    const name = attrs.get("n");
    const clientNonce = attrs.get("r");
    if (name === undefined || clientNonce === undefined || clientNonce === "") {
      throw new ScramError("Invalid SCRAM client first message");
    }
    this.user = decodeName(name);
    this.credential = await this.lookup(this.user);
    // An unknown user goes through the exchange with a made-up salt, failing at the proof, so
    // a client cannot tell unknown users from wrong passwords.
    const c =
      this.credential ??
      scramCredential(this.mechanism, randomBytes(16).toString("hex"), SCRAM_MIN_ITERATIONS);
    this.nonce = clientNonce + randomBytes(24).toString("base64url");
    this.serverFirst = `r=${this.nonce},s=${b64(c.salt)},i=${c.iterations}`;
    this.state = "final";
    return this.serverFirst;
  }

  private clientFinal(message: string): string {
    const proofAt = message.lastIndexOf(",p=");
    if (proofAt < 0) throw new ScramError("Invalid SCRAM client final message");
    const withoutProof = message.slice(0, proofAt);
    const attrs = attributes(withoutProof);
    const proof = unb64(message.slice(proofAt + 3));
    if (attrs.get("c") !== Buffer.from(this.gs2Header).toString("base64")) {
      throw new ScramError("Invalid channel binding");
    }
    // Kafka checks endsWith, not equality: librdkafka before 2.1 sends the client nonce again
    // in front of the server's combined nonce, and Kafka accepts it.
    if (!(attrs.get("r") ?? "").endsWith(this.nonce)) throw new ScramError("Invalid nonce");
    const c = this.credential;
    const authMessage = `${this.clientFirstBare},${this.serverFirst},${withoutProof}`;
    if (c === undefined || proof.length !== c.storedKey.length) {
      throw new ScramError("Invalid user credentials");
    }
    const signature = hmac(this.mechanism, c.storedKey, authMessage);
    const clientKey = proof.map((b, i) => b ^ signature[i]!);
    if (!timingSafeEqual(hash(this.mechanism, clientKey), c.storedKey)) {
      throw new ScramError("Invalid user credentials");
    }
    this.state = "done";
    return `v=${b64(hmac(this.mechanism, c.serverKey, authMessage))}`;
  }
}
