/**
 * The client side of SCRAM-SHA-256/512 (RFC 5802, RFC 7677), as Kafka's ScramSaslClient: a
 * client-first message with a fresh nonce, the proof from the server's salt and iteration count,
 * and a check of the server's signature, so a server that does not know the password is caught.
 */
import { createHash, createHmac, pbkdf2, randomBytes, timingSafeEqual } from "node:crypto";
import { SCRAM_MAX_ITERATIONS, SCRAM_MIN_ITERATIONS, type ScramMechanism } from "./scram.ts";

const HASH: Readonly<Record<ScramMechanism, { name: string; bytes: number }>> = {
  "SCRAM-SHA-256": { name: "sha256", bytes: 32 },
  "SCRAM-SHA-512": { name: "sha512", bytes: 64 },
};

/** The server's answers break the exchange, or its signature is wrong. */
export class ScramClientError extends Error {
  override readonly name = "ScramClientError";
}

const encodeName = (name: string) => name.replaceAll("=", "=3D").replaceAll(",", "=2C");
const b64 = (bytes: Uint8Array) => Buffer.from(bytes).toString("base64");

export class ScramClient {
  private readonly clientNonce = randomBytes(24).toString("base64url");
  private readonly clientFirstBare: string;
  private expectedServerSignature: Uint8Array | null = null;

  constructor(
    readonly mechanism: ScramMechanism,
    username: string,
    private readonly password: string,
  ) {
    this.clientFirstBare = `n=${encodeName(username)},r=${this.clientNonce}`;
  }

  clientFirst(): Uint8Array {
    return new TextEncoder().encode(`n,,${this.clientFirstBare}`);
  }

  /** The client-final message answering the server-first one. */
  async clientFinal(serverFirstBytes: Uint8Array): Promise<Uint8Array> {
    const serverFirst = new TextDecoder().decode(serverFirstBytes);
    const fields = new Map(serverFirst.split(",").map((kv) => [kv.slice(0, 1), kv.slice(2)]));
    const nonce = fields.get("r") ?? "";
    const salt = Buffer.from(fields.get("s") ?? "", "base64");
    const iterations = Number(fields.get("i"));
    if (!nonce.startsWith(this.clientNonce) || nonce === this.clientNonce || salt.length === 0) {
      throw new ScramClientError(`invalid SCRAM server first message "${serverFirst}"`);
    }
    if (
      !Number.isInteger(iterations) ||
      iterations < SCRAM_MIN_ITERATIONS ||
      iterations > SCRAM_MAX_ITERATIONS
    ) {
      throw new ScramClientError(`SCRAM iteration count ${fields.get("i")} out of range`);
    }
    const { name, bytes } = HASH[this.mechanism];
    // PBKDF2 of thousands of iterations runs on the thread pool, off the event loop.
    const salted = await new Promise<Buffer>((resolve, reject) =>
      pbkdf2(this.password.normalize("NFKC"), salt, iterations, bytes, name, (e, key) =>
        e ? reject(e) : resolve(key),
      ),
    );
    const hmac = (key: Uint8Array, text: string) => createHmac(name, key).update(text).digest();
    const clientKey = hmac(salted, "Client Key");
    const storedKey = createHash(name).update(clientKey).digest();
    const withoutProof = `c=${b64(new TextEncoder().encode("n,,"))},r=${nonce}`;
    const authMessage = `${this.clientFirstBare},${serverFirst},${withoutProof}`;
    const signature = hmac(storedKey, authMessage);
    const proof = clientKey.map((b, i) => b ^ signature[i]!);
    this.expectedServerSignature = new Uint8Array(hmac(hmac(salted, "Server Key"), authMessage));
    return new TextEncoder().encode(`${withoutProof},p=${b64(proof)}`);
  }

  /** Checks the server-final message; throws unless it proves the server knows the key. */
  verifyServerFinal(serverFinalBytes: Uint8Array): void {
    const serverFinal = new TextDecoder().decode(serverFinalBytes);
    const expected = this.expectedServerSignature;
    if (expected === null) throw new ScramClientError("SCRAM server final before client final");
    if (serverFinal.startsWith("e=")) {
      throw new ScramClientError(`SCRAM server error ${serverFinal.slice(2)}`);
    }
    const signature = serverFinal.startsWith("v=")
      ? new Uint8Array(Buffer.from(serverFinal.slice(2), "base64"))
      : new Uint8Array();
    if (signature.length !== expected.length || !timingSafeEqual(signature, expected)) {
      throw new ScramClientError("the server's SCRAM signature is wrong");
    }
  }
}
