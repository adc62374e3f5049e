import { createHash } from "node:crypto";
import { x509 } from "./x509";
import { pkiErrors } from "./errors";

/** What a person or a peer check needs to know about a certificate. */
export interface CertInfo {
  subjectCn: string;
  issuerCn: string;
  /** DNS names and IP literals, in certificate order. */
  sans: string[];
  /** URI SANs (a SPIFFE ID), if any. */
  uris?: string[];
  /** SHA-256 of the DER, "AB:CD:...", exactly as node:tls getPeerCertificate().fingerprint256. */
  fingerprint256: string;
  /** Uppercase hex, as node:tls reports it. */
  serialNumber: string;
  notBefore: Date;
  notAfter: Date;
  isCa: boolean;
}

/** Parses exactly one PEM certificate; `what` names it in the BAD_PEM error. */
export function parseCert(pem: string, what = "certificate"): x509.X509Certificate {
  try {
    const blocks = x509.PemConverter.decodeWithHeaders(pem);
    if (blocks.length !== 1 || blocks[0].type !== "CERTIFICATE") throw new Error("not one certificate");
    return new x509.X509Certificate(blocks[0].rawData);
  } catch {
    throw pkiErrors.badPem(what);
  }
}

/** @example inspectCert(readFileSync(paths.nodeCert, "utf8")).fingerprint256 */
export function inspectCert(pem: string, what = "certificate"): CertInfo {
  return describe(parseCert(pem, what));
}

export function describe(cert: x509.X509Certificate): CertInfo {
  const san = cert.getExtension(x509.SubjectAlternativeNameExtension);
  const basic = cert.getExtension(x509.BasicConstraintsExtension);
  return {
    subjectCn: cert.subjectName.getField("CN")[0] ?? "",
    issuerCn: cert.issuerName.getField("CN")[0] ?? "",
    sans: san ? san.names.items.filter((n) => n.type === "dns" || n.type === "ip").map((n) => n.value) : [],
    uris: san ? san.names.items.filter((n) => n.type === "url").map((n) => n.value) : [],
    fingerprint256: fingerprint256(cert.rawData),
    serialNumber: cert.serialNumber.toUpperCase(),
    notBefore: cert.notBefore,
    notAfter: cert.notAfter,
    isCa: basic?.ca === true,
  };
}

export function fingerprint256(der: ArrayBuffer | Uint8Array): string {
  const hex = createHash("sha256").update(new Uint8Array(der)).digest("hex").toUpperCase();
  return hex.match(/../g)!.join(":");
}

export interface VerifyOptions {
  /** The moment to check validity at (default now). */
  now?: Date;
  /** Names the leaf in errors, e.g. "certs/node.crt". */
  what?: string;
  /** Check issuer and signature only, e.g. to describe an expired certificate. */
  ignoreValidity?: boolean;
}

/**
 * Checks that `leafPem` was signed by the CA in `caPem` and that both are valid now. Throws
 * NOT_A_CA, NOT_ISSUED_BY_CA, EXPIRED or NOT_YET_VALID; returns nothing when all is well.
 */
export async function verifyIssuedBy(leafPem: string, caPem: string, opts: VerifyOptions = {}): Promise<void> {
  const what = opts.what ?? "certificate";
  const now = opts.now ?? new Date();
  const leaf = parseCert(leafPem, what);
  const ca = parseCert(caPem, "CA certificate");
  if (!describe(ca).isCa) throw pkiErrors.notACa("CA certificate");
  if (!sameBytes(leaf.issuerName.toArrayBuffer(), ca.subjectName.toArrayBuffer()))
    throw pkiErrors.notIssuedByCa(what, `its issuer is "${leaf.issuer}", the CA is "${ca.subject}"`);
  const signed = await leaf.verify({ publicKey: ca.publicKey, signatureOnly: true }).catch(() => false);
  if (!signed) throw pkiErrors.notIssuedByCa(what, "its signature does not verify with the CA's key");
  if (opts.ignoreValidity) return;
  checkValidity(ca, "the fleet CA certificate", now);
  checkValidity(leaf, what, now);
}

export function checkValidity(cert: x509.X509Certificate, what: string, now: Date): void {
  if (now.getTime() > cert.notAfter.getTime()) throw pkiErrors.expired(what, cert.notAfter);
  if (now.getTime() < cert.notBefore.getTime()) throw pkiErrors.notYetValid(what, cert.notBefore);
}

function sameBytes(a: ArrayBuffer, b: ArrayBuffer): boolean {
  return Buffer.from(a).equals(Buffer.from(b));
}

/** What `pki inspect` shows beyond CertInfo: the full names and what the certificate may be used for. */
export interface CertDetails extends CertInfo {
  subject: string;
  issuer: string;
  /** "serverAuth", "clientAuth", or the OID of any other extended key usage. */
  extendedKeyUsages: string[];
}

const EKU_NAMES: Record<string, string> = {
  [x509.ExtendedKeyUsage.serverAuth]: "serverAuth",
  [x509.ExtendedKeyUsage.clientAuth]: "clientAuth",
  [x509.ExtendedKeyUsage.codeSigning]: "codeSigning",
  [x509.ExtendedKeyUsage.emailProtection]: "emailProtection",
};

export function certDetails(pem: string, what = "certificate"): CertDetails {
  const cert = parseCert(pem, what);
  const eku = cert.getExtension(x509.ExtendedKeyUsageExtension);
  return {
    ...describe(cert),
    subject: cert.subject,
    issuer: cert.issuer,
    extendedKeyUsages: (eku?.usages ?? []).map((u) => EKU_NAMES[String(u)] ?? String(u)),
  };
}
