import { createHash } from "node:crypto";
import { passwordMatches, SCRAM_MECHANISMS } from "../security/scram.ts";
import type { ScramCredentialStore } from "../security/scram-credential-store.ts";

/** Logins remembered after a successful check, so a scrape every second costs no PBKDF2. */
const REMEMBERED_MAX = 1_000;
/** How long a remembered login holds: a changed or deleted password stops working after it. */
const REMEMBER_MS = 60_000;
/** Password checks in flight: each is thousands of hash rounds on the thread pool. */
const CHECKS_IN_FLIGHT_MAX = 4;

/** The outcome of an admin request's credentials. */
export type AdminLogin =
  | { readonly ok: true; readonly principal: string }
  | { readonly ok: false; readonly status: 401 | 429 };

/**
 * HTTP basic authentication against the SCRAM users (`admin.authentication=scram`): the user
 * name and password a SASL/SCRAM client logs in with open the admin listener too. A password
 * is checked against every SCRAM mechanism the user has a credential for. Passwords are never
 * kept: a remembered login is the SHA-256 of user and password, for REMEMBER_MS.
 */
export class AdminAuthenticator {
  private readonly remembered = new Map<string, number>();
  private checksInFlight = 0;

  constructor(private readonly store: ScramCredentialStore) {}

  async login(request: Request): Promise<AdminLogin> {
    const credentials = basicCredentials(request.headers.get("authorization"));
    if (credentials === null) return { ok: false, status: 401 };
    const { user, password } = credentials;
    const principal = `User:${user}`;
    const key = createHash("sha256").update(`${user}\u0000${password}`).digest("base64");
    const until = this.remembered.get(key);
    if (until !== undefined && until > Date.now()) return { ok: true, principal };
    if (this.checksInFlight >= CHECKS_IN_FLIGHT_MAX) return { ok: false, status: 429 };
    this.checksInFlight++;
    try {
      if (!(await this.check(user, password))) return { ok: false, status: 401 };
    } finally {
      this.checksInFlight--;
    }
    this.remember(key);
    return { ok: true, principal };
  }

  private async check(user: string, password: string): Promise<boolean> {
    for (const mechanism of SCRAM_MECHANISMS) {
      const credential = await this.store.get(user, mechanism);
      if (credential !== undefined && (await passwordMatches(mechanism, password, credential))) {
        return true;
      }
    }
    return false;
  }

  private remember(key: string): void {
    const nowMs = Date.now();
    if (this.remembered.size >= REMEMBERED_MAX) {
      for (const [k, until] of this.remembered) if (until <= nowMs) this.remembered.delete(k);
      // Still full: forget the oldest, which a Map iterates first.
      if (this.remembered.size >= REMEMBERED_MAX) {
        this.remembered.delete(this.remembered.keys().next().value!);
      }
    }
    this.remembered.set(key, nowMs + REMEMBER_MS);
  }
}

/** User and password of an `Authorization: Basic …` header, or null when there is none. */
function basicCredentials(header: string | null): { user: string; password: string } | null {
  if (header === null || !/^basic /i.test(header)) return null;
  const decoded = Buffer.from(header.slice(6).trim(), "base64").toString("utf8");
  const colon = decoded.indexOf(":");
  if (colon <= 0) return null;
  return { user: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
}
