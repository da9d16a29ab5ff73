import { X509Certificate } from "node:crypto";
import {
  PrincipalMappingError,
  rfc2253Subject,
  type SslPrincipalMapper,
} from "./ssl-principal-mapper.ts";

/** What a TLS client's certificate says about it, once the handshake is done. */
export type PeerCertificate =
  | { readonly kind: "absent" }
  | { readonly kind: "refused"; readonly reason: string }
  | { readonly kind: "principal"; readonly principal: string };

/**
 * The principal of a client certificate (`raw` DER, as `getPeerCertificate().raw`), as Kafka's
 * DefaultKafkaPrincipalBuilder names it: `User:` and the subject in RFC 2253 form through
 * ssl.principal.mapping.rules. `verifyError` is the handshake's verification error: a
 * certificate that did not verify, or whose subject no rule maps, is refused.
 */
export function peerCertificate(
  raw: Uint8Array | undefined,
  verifyError: Error | null | undefined,
  mapper: SslPrincipalMapper,
): PeerCertificate {
  if (raw === undefined || raw.length === 0) return { kind: "absent" };
  if (verifyError !== null && verifyError !== undefined) {
    return { kind: "refused", reason: `client certificate not trusted: ${verifyError.message}` };
  }
  const subject = rfc2253Subject(new X509Certificate(raw).subject);
  try {
    return { kind: "principal", principal: `User:${mapper.name(subject)}` };
  } catch (error) {
    if (!(error instanceof PrincipalMappingError)) throw error;
    return { kind: "refused", reason: `client certificate refused: ${error.message}` };
  }
}
