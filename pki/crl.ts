import { x509 } from "./x509";
import { importPrivateKeyPem } from "./keys";
import { parseCert } from "./inspect";
import type { CertAndKey } from "./cert-params";
import { DEFAULT_CRL_VALID_FOR_MS } from "./crl-validity";

export interface CrlEntry {
  serial: string;
  revokedAt: Date;
}

// id-ce-cRLNumber (RFC 5280 5.2.3); @peculiar/x509 has no class for it, so the DER is written here.
const CRL_NUMBER_OID = "2.5.29.20";

/**
 * Signs a revocation list (X.509 CRL v2) with the fleet CA key: every revoked serial with its date, and a CRL
 * number that only grows, so a node never trades a newer list for an older one. Its next update is `validForMs`
 * after now (never after the CA's own expiry): the CA node signs a new one on a schedule, and a list past its
 * next update is stale.
 */
export async function makeCrl(
  ca: CertAndKey,
  entries: CrlEntry[],
  number: number,
  now: Date = new Date(),
  validForMs = DEFAULT_CRL_VALID_FOR_MS,
): Promise<string> {
  const caCert = parseCert(ca.certPem, "the fleet CA certificate");
  const nextUpdate = new Date(Math.min(now.getTime() + validForMs, caCert.notAfter.getTime()));
  const ski = caCert.getExtension(x509.SubjectKeyIdentifierExtension);
  const crl = await x509.X509CrlGenerator.create({
    issuer: caCert.subjectName,
    thisUpdate: now,
    nextUpdate,
    signingAlgorithm: { name: "ECDSA", hash: "SHA-256" },
    signingKey: await importPrivateKeyPem(ca.keyPem, "the fleet CA key"),
    entries: entries.map((e) => ({ serialNumber: e.serial.toLowerCase(), revocationDate: e.revokedAt })),
    extensions: [
      new x509.Extension(CRL_NUMBER_OID, false, derInteger(number)),
      ...(ski ? [new x509.AuthorityKeyIdentifierExtension(ski.keyId)] : []),
    ],
  });
  // RFC 7468's label; the library would write "BEGIN CRL", which OpenSSL does not read.
  return x509.PemConverter.encode(crl.rawData, "X509 CRL") + "\n";
}

/** A non-negative integer as a DER INTEGER. */
function derInteger(n: number): Uint8Array {
  let hex = n.toString(16);
  if (hex.length % 2) hex = `0${hex}`;
  if (parseInt(hex.slice(0, 2), 16) & 0x80) hex = `00${hex}`;
  const body = Buffer.from(hex, "hex");
  return Uint8Array.from([0x02, body.length, ...body]);
}
