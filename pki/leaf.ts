import { EC_ALGORITHM, x509 } from "./x509";
import { pkiErrors } from "./errors";
import { assertKeyMatchesCert, exportPrivateKeyPem, generateKeyPair, importPrivateKeyPem } from "./keys";
import { checkDays, normalizeNodeName, normalizeSans } from "./names";
import { checkValidity, describe, parseCert } from "./inspect";
import { type CertAndKey, daysUntil, randomSerial, validityWindow } from "./cert-params";

export interface LeafOptions {
  /** The fleet CA that signs: its certificate and private key (PEM). */
  ca: CertAndKey;
  /** The node name: the certificate's CN and first SAN. Lowercased. */
  name: string;
  /** Extra DNS names and IP literals the node answers on. */
  sans: string[];
  /** Validity in days (default 365); must end before the CA does. */
  days?: number;
  /** URI SANs, such as the node's SPIFFE ID (spiffe://TRUST-DOMAIN/NAME). */
  uris?: string[];
  /** For tests: the moment the certificate is made. */
  now?: Date;
}

/**
 * Issues a node certificate with a fresh key made here. Good for a node's own identity, and for the
 * bundle flow where the CA machine hands a key to a new machine.
 *
 * @example const alice = await issueLeaf({ ca, name: "alice", sans: ["alice.lan", "10.0.0.5"] });
 */
export async function issueLeaf(opts: LeafOptions): Promise<CertAndKey> {
  const keys = await generateKeyPair();
  const certPem = await signPublicKey({ ...opts, publicKey: keys.publicKey });
  return { certPem, keyPem: await exportPrivateKeyPem(keys.privateKey) };
}

/**
 * Issues a node certificate for a public key made elsewhere, so the private key never leaves its machine
 * (only the public key travels to the CA). `publicKey` is a CryptoKey or an SPKI PEM ("BEGIN PUBLIC KEY").
 * The certificate serves both sides of mutual TLS: serverAuth and clientAuth.
 */
export async function signPublicKey(opts: LeafOptions & { publicKey: CryptoKey | string }): Promise<string> {
  const name = normalizeNodeName(opts.name);
  // The node name is always a SAN: clients check SANs, not the CN, when they verify a server.
  const sans = normalizeSans([name, ...opts.sans]);
  const days = checkDays(opts.days ?? 365, "certificate");
  const now = opts.now ?? new Date();
  const publicKey = await loadPublicKey(opts.publicKey);
  const { cert: caCert, signingKey } = await loadCa(opts.ca, days, now);

  const caSki = caCert.getExtension(x509.SubjectKeyIdentifierExtension);
  const cert = await x509.X509CertificateGenerator.create({
    serialNumber: randomSerial(),
    subject: [{ CN: [name] }],
    // The CA's own encoded name, byte for byte, so chain building matches issuer to subject exactly.
    issuer: caCert.subjectName,
    ...validityWindow(days, now),
    publicKey,
    signingKey,
    signingAlgorithm: EC_ALGORITHM,
    extensions: [
      new x509.BasicConstraintsExtension(false, undefined, true),
      // keyAgreement as well as digitalSignature: ECDHE-ECDSA suites only need the latter, but some
      // stacks check for the former on EC keys.
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyAgreement, true),
      new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth, x509.ExtendedKeyUsage.clientAuth]),
      new x509.SubjectAlternativeNameExtension([
        ...sans,
        ...(opts.uris ?? []).map((value) => ({ type: "url" as const, value })),
      ]),
      await x509.SubjectKeyIdentifierExtension.create(publicKey),
      caSki
        ? new x509.AuthorityKeyIdentifierExtension(caSki.keyId)
        : await x509.AuthorityKeyIdentifierExtension.create(caCert.publicKey),
    ],
  });
  return cert.toString("pem") + "\n";
}

/** Checks the CA before it signs anything: a CA, its key, still valid, and outliving the new leaf. */
async function loadCa(
  ca: CertAndKey,
  days: number,
  now: Date,
): Promise<{ cert: x509.X509Certificate; signingKey: CryptoKey }> {
  const cert = parseCert(ca.certPem, "the fleet CA certificate");
  const info = describe(cert);
  if (!info.isCa) throw pkiErrors.notACa("the fleet CA certificate");
  checkValidity(cert, "the fleet CA certificate", now);
  const remaining = daysUntil(info.notAfter, now);
  if (days > remaining) throw pkiErrors.outlivesCa(days, info.notAfter, remaining);
  assertKeyMatchesCert(ca.keyPem, ca.certPem, "the fleet CA key", "the fleet CA certificate");
  return { cert, signingKey: await importPrivateKeyPem(ca.keyPem, "the fleet CA key") };
}

async function loadPublicKey(key: CryptoKey | string): Promise<CryptoKey> {
  if (typeof key !== "string") return key;
  try {
    const der = x509.PemConverter.decodeFirst(key);
    return await crypto.subtle.importKey("spki", der, EC_ALGORITHM, true, ["verify"]);
  } catch {
    throw pkiErrors.badKey("the public key", "an ECDSA P-256 public key (SPKI PEM)");
  }
}
