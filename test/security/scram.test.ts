import { describe, expect, test } from "bun:test";
import { createHash, createHmac, pbkdf2Sync, randomBytes } from "node:crypto";
import {
  formatScramCredential,
  parseScramCredential,
  ScramError,
  ScramServer,
  scramCredential,
} from "../../src/security/scram.ts";

const enc = (s: string) => new TextEncoder().encode(s);
const dec = (b: Uint8Array) => new TextDecoder().decode(b);

/** A client side of SCRAM-SHA-512 written from RFC 5802, independent of the server code. */
function client(user: string, password: string) {
  const nonce = randomBytes(18).toString("base64");
  const first = `n=${user},r=${nonce}`;
  return {
    first: `n,,${first}`,
    final(serverFirst: string, gs2 = "n,,") {
      const attrs = new Map(serverFirst.split(",").map((p) => [p[0], p.slice(2)] as const));
      const salted = pbkdf2Sync(
        password,
        Buffer.from(attrs.get("s")!, "base64"),
        Number(attrs.get("i")),
        64,
        "sha512",
      );
      const clientKey = createHmac("sha512", salted).update("Client Key").digest();
      const storedKey = createHash("sha512").update(clientKey).digest();
      const withoutProof = `c=${Buffer.from(gs2).toString("base64")},r=${attrs.get("r")}`;
      const auth = `${first},${serverFirst},${withoutProof}`;
      const signature = createHmac("sha512", storedKey).update(auth).digest();
      const proof = clientKey.map((b, i) => b ^ signature[i]!);
      return `${withoutProof},p=${Buffer.from(proof).toString("base64")}`;
    },
  };
}

describe("SCRAM-SHA-512 server (RFC 5802)", () => {
  const credential = scramCredential("SCRAM-SHA-512", "alice-secret", 4096);
  const lookup = async (user: string) => (user === "alice" ? credential : undefined);

  test("Kafka's stored text form round-trips", () => {
    const text = formatScramCredential(credential);
    expect(text).toMatch(/^salt=[^,]+,stored_key=[^,]+,server_key=[^,]+,iterations=4096$/);
    expect(parseScramCredential(text)).toEqual(credential);
    expect(parseScramCredential("nonsense")).toBeNull();
  });

  test("the right password authenticates and the server signature is sent", async () => {
    const server = new ScramServer("SCRAM-SHA-512", lookup);
    const c = client("alice", "alice-secret");
    const serverFirst = dec(await server.evaluate(enc(c.first)));
    const serverFinal = dec(await server.evaluate(enc(c.final(serverFirst))));
    expect(serverFinal).toStartWith("v=");
    expect(server.complete).toBe(true);
    expect(server.authorizationId).toBe("alice");
  });

  test("wrong password, unknown user, replayed final message and garbage all fail", async () => {
    const wrong = new ScramServer("SCRAM-SHA-512", lookup);
    const c = client("alice", "not-it");
    const first = dec(await wrong.evaluate(enc(c.first)));
    await expect(wrong.evaluate(enc(c.final(first)))).rejects.toThrow(ScramError);

    const unknown = new ScramServer("SCRAM-SHA-512", lookup);
    const u = client("bob", "x");
    const uFirst = dec(await unknown.evaluate(enc(u.first)));
    expect(uFirst).toContain(",s=");
    await expect(unknown.evaluate(enc(u.final(uFirst)))).rejects.toThrow(ScramError);

    // A final message recorded from a successful exchange, replayed in a new one.
    const good = new ScramServer("SCRAM-SHA-512", lookup);
    const g = client("alice", "alice-secret");
    const recorded = g.final(dec(await good.evaluate(enc(g.first))));
    await good.evaluate(enc(recorded));
    const replay = new ScramServer("SCRAM-SHA-512", lookup);
    await replay.evaluate(enc(g.first));
    await expect(replay.evaluate(enc(recorded))).rejects.toThrow("Invalid nonce");

    for (const junk of [randomBytes(64), enc("n,,"), enc("x"), new Uint8Array(5000)]) {
      await expect(new ScramServer("SCRAM-SHA-512", lookup).evaluate(junk)).rejects.toThrow();
    }
  });
});
