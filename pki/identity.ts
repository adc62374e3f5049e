import { X509Certificate, createPrivateKey } from "node:crypto";
import { existsSync } from "node:fs";
import { pkiErrors } from "./errors";
import type { CertInfo } from "./inspect";
import { checkIssuedNodeName } from "./names";
import { readPublic, readSecret } from "./secure-file";
import { recoverInterruptedRenewal } from "./renewal-files";

/** The files of a home's identity (HomePaths fits). */
/** What to do about an expired node certificate in a home that holds the fleet CA. */
export const RENEW_ON_CA_HOME =
  "renew it here with this home's fleet CA, keeping its key (so pins of it hold): a2a-node pki renew";

export interface IdentityPaths {
  caCert: string;
  caKey: string;
  nodeCert: string;
  nodeKey: string;
}

export interface NodeIdentity {
  caPem: string;
  certPem: string;
  keyPem: string;
  /** The certificate's CN: this node's name in the fleet. */
  name: string;
  sans: string[];
  /** URI SANs (the SPIFFE ID, when the fleet has a trust domain). */
  uris: string[];
  fingerprint256: string;
  serialNumber: string;
  notBefore: Date;
  notAfter: Date;
  ca: CertInfo;
  /** True when this home holds secrets/ca.key and can issue certificates. */
  hasCaKey: boolean;
}

/**
 * Loads and checks this node's identity: the files exist, the key is private (0600) and belongs to the
 * certificate, and the certificate was issued by the fleet CA and is valid now (unless `allowExpired`,
 * for `pki show`, which must still describe an expired certificate).
 *
 * Built on node:crypto's native X509Certificate rather than @peculiar/x509: this runs at the start of every
 * `serve`, `send` and `status`, and must not pay for loading the certificate-issuing library.
 */
export async function loadNodeIdentity(
  paths: IdentityPaths,
  opts: { now?: Date; allowExpired?: boolean } = {},
): Promise<NodeIdentity> {
  // A renewal a crash cut short is finished (or undone) before the pair is read.
  recoverInterruptedRenewal(paths);
  if (!existsSync(paths.nodeCert))
    throw existsSync(paths.nodeKey)
      ? pkiErrors.noNodeCert(
          paths.nodeCert,
          "this home's key waits for its certificate: 'a2a-node pki import CERT --ca CA_CERT' after init-pki --csr, or 'a2a-node join' again with a new token",
        )
      : pkiErrors.noNodeCert(paths.nodeCert);
  if (!existsSync(paths.nodeKey)) throw pkiErrors.noNodeKey(paths.nodeKey);
  if (!existsSync(paths.caCert)) throw pkiErrors.noCa(paths.caCert);
  const certPem = readPublic(paths.nodeCert);
  const caPem = readPublic(paths.caCert);
  const keyPem = readSecret(paths.nodeKey);
  const cert = parse(certPem, paths.nodeCert);
  const ca = parse(caPem, paths.caCert);
  let key;
  try {
    key = createPrivateKey(keyPem);
  } catch {
    throw pkiErrors.badPem(paths.nodeKey);
  }
  if (!cert.checkPrivateKey(key)) throw pkiErrors.keyMismatch(paths.nodeKey, paths.nodeCert);
  if (!ca.ca) throw pkiErrors.notACa("CA certificate");
  if (!cert.checkIssued(ca))
    throw pkiErrors.notIssuedByCa(paths.nodeCert, `its issuer is "${cert.issuer}", the CA is "${ca.subject}"`);
  if (!cert.verify(ca.publicKey))
    throw pkiErrors.notIssuedByCa(paths.nodeCert, "its signature does not verify with the CA's key");
  if (!opts.allowExpired) {
    const now = (opts.now ?? new Date()).getTime();
    for (const [c, what] of [
      [ca, "the fleet CA certificate"],
      [cert, paths.nodeCert],
    ] as const) {
      // The CA's own home renews its node certificate itself, keeping the key: no new bundle, no broken pins.
      if (now > c.validToDate.getTime())
        throw c === cert && existsSync(paths.caKey)
          ? pkiErrors.expired(what, c.validToDate, RENEW_ON_CA_HOME)
          : pkiErrors.expired(what, c.validToDate);
      if (now < c.validFromDate.getTime()) throw pkiErrors.notYetValid(what, c.validFromDate);
    }
  }
  const info = describeNative(cert);
  // Every peer would refuse this certificate at the connection (a reserved name, or one an older issuer let
  // through); better said here, at start-up. `pki show` (allowExpired) still describes it.
  if (!opts.allowExpired) checkIssuedNodeName(info.subjectCn);
  return {
    caPem,
    certPem,
    keyPem,
    name: info.subjectCn,
    sans: info.sans,
    uris: info.uris ?? [],
    fingerprint256: info.fingerprint256,
    serialNumber: info.serialNumber,
    notBefore: info.notBefore,
    notAfter: info.notAfter,
    ca: describeNative(ca),
    hasCaKey: existsSync(paths.caKey),
  };
}

function parse(pem: string, what: string): X509Certificate {
  try {
    return new X509Certificate(pem);
  } catch {
    throw pkiErrors.badPem(what);
  }
}

/** "CN=alpha\nO=..." → "alpha" */
function cn(dn: string): string {
  for (const line of dn.split("\n")) if (line.startsWith("CN=")) return line.slice(3);
  return "";
}

function describeNative(c: X509Certificate): CertInfo {
  const entries = (c.subjectAltName ?? "").split(", ").filter(Boolean);
  const sans = entries
    .filter((s) => s.startsWith("DNS:") || s.startsWith("IP Address:"))
    .map((s) => s.replace(/^DNS:/, "").replace(/^IP Address:/, ""));
  const uris = entries.filter((s) => s.startsWith("URI:")).map((s) => s.slice(4));
  return {
    subjectCn: cn(c.subject),
    issuerCn: cn(c.issuer),
    sans,
    uris,
    fingerprint256: c.fingerprint256,
    serialNumber: c.serialNumber.toUpperCase(),
    notBefore: c.validFromDate,
    notAfter: c.validToDate,
    isCa: c.ca,
  };
}
