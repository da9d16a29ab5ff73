/**
 * Certificates for TLS tests, made with the openssl command line into a temp dir: a CA, a
 * server certificate for 127.0.0.1/localhost, client certificates signed by the CA, one signed
 * by another CA (untrusted) and one already expired.
 */
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export interface TestCertificates {
  readonly dir: string;
  readonly caPem: string;
  /** Key and chain in one PEM file, as ssl.keystore.location reads it. */
  readonly serverKeystore: string;
  readonly serverCert: string;
  readonly serverKey: string;
  /** Makes a client key and certificate for `subject` (e.g. "/CN=alice/O=Quill"). */
  client(
    name: string,
    subject: string,
    options?: { ca?: "trusted" | "other"; expired?: boolean },
  ): { cert: string; key: string };
  /** A new server certificate with another subject, written over the keystore (reload tests). */
  renewServer(commonName: string): void;
}

function openssl(args: string[], cwd: string): void {
  const run = Bun.spawnSync(["openssl", ...args], { cwd, stdout: "pipe", stderr: "pipe" });
  if (run.exitCode !== 0) throw new Error(`openssl ${args.join(" ")}: ${run.stderr.toString()}`);
}

/** Signs a new key's certificate for `subject` with CA `ca` (files `<name>.key`, `.pem`). */
function sign(dir: string, name: string, subject: string, ca: string, extra: string[]): void {
  const csr = ["req", "-newkey", "rsa:2048", "-nodes", "-keyout", `${name}.key`];
  openssl([...csr, "-out", `${name}.csr`, "-subj", subject], dir);
  const x509 = ["x509", "-req", "-in", `${name}.csr`, "-CA", `${ca}.pem`, "-CAkey", `${ca}.key`];
  openssl([...x509, "-CAcreateserial", "-out", `${name}.pem`, ...extra], dir);
}

function newCa(dir: string, name: string): void {
  const args = ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", `${name}.key`];
  openssl([...args, "-out", `${name}.pem`, "-days", "2", "-subj", `/CN=${name}`], dir);
}

/** The server's key and certificate for 127.0.0.1/localhost, in one keystore PEM file. */
function newServer(dir: string, commonName: string): void {
  sign(dir, "server", `/CN=${commonName}`, "ca", ["-days", "2", "-extfile", "server.ext"]);
  const key = readFileSync(join(dir, "server.key"), "utf8");
  const cert = readFileSync(join(dir, "server.pem"), "utf8");
  writeFileSync(join(dir, "server-keystore.pem"), `${key}\n${cert}`);
}

export function makeCertificates(): TestCertificates {
  const dir = mkdtempSync(join(tmpdir(), "quill-tls-"));
  const at = (f: string) => join(dir, f);
  newCa(dir, "ca");
  newCa(dir, "other-ca");
  writeFileSync(at("server.ext"), "subjectAltName=DNS:localhost,IP:127.0.0.1\n");
  newServer(dir, "localhost");
  return {
    dir,
    caPem: at("ca.pem"),
    serverKeystore: at("server-keystore.pem"),
    serverCert: at("server.pem"),
    serverKey: at("server.key"),
    client(name, subject, options = {}) {
      const ca = options.ca === "other" ? "other-ca" : "ca";
      // Valid for 0 days: expired a second after it is made.
      sign(dir, name, subject, ca, ["-days", options.expired === true ? "0" : "2"]);
      return { cert: at(`${name}.pem`), key: at(`${name}.key`) };
    },
    renewServer: (commonName) => newServer(dir, commonName),
  };
}
