/**
 * Certificates our PKI refuses to issue (reserved or malformed names, intermediate CAs), made directly with
 * @peculiar/x509 and signed by a real CA key, as an attacker holding an old or a foreign-tool certificate
 * would present them.
 */
import { EC_ALGORITHM, x509 } from "../../pki/x509";
import { exportPrivateKeyPem, generateKeyPair, importPrivateKeyPem } from "../../pki/keys";
import { randomSerial, validityWindow } from "../../pki/cert-params";
import type { CertAndKey } from "../../pki";

export interface CraftOptions {
  /** The subject, e.g. [{ CN: ["local"] }], or [{ CN: ["a", "b"] }] for a multi-valued RDN. */
  subject: x509.JsonName;
  /** A CA certificate (keyCertSign) instead of a leaf; `pathLength` as given. */
  ca?: boolean;
  pathLength?: number;
  /** A CA whose key may also sign TLS handshakes (digitalSignature, serverAuth and clientAuth). */
  tlsUsable?: boolean;
  /** A leaf's extended key usages instead of serverAuth + clientAuth (an empty list: no EKU extension). */
  eku?: string[];
  /** Validity instead of the last 5 minutes to 30 days ahead: expired or not-yet-valid certificates. */
  notBefore?: Date;
  notAfter?: Date;
}

/** A certificate signed by `issuer`, with the extensions of our own leaves (or of a CA), and a fresh key. */
export async function craftCert(issuer: CertAndKey, opts: CraftOptions): Promise<CertAndKey> {
  const keys = await generateKeyPair();
  const issuerCert = new x509.X509Certificate(issuer.certPem);
  const issuerSki = issuerCert.getExtension(x509.SubjectKeyIdentifierExtension);
  const kind = opts.ca
    ? [
        new x509.BasicConstraintsExtension(true, opts.pathLength, true),
        new x509.KeyUsagesExtension(
          x509.KeyUsageFlags.keyCertSign |
            x509.KeyUsageFlags.cRLSign |
            (opts.tlsUsable ? x509.KeyUsageFlags.digitalSignature : 0),
          true,
        ),
        ...(opts.tlsUsable
          ? [new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth, x509.ExtendedKeyUsage.clientAuth])]
          : []),
      ]
    : [
        new x509.BasicConstraintsExtension(false, undefined, true),
        new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyAgreement, true),
        ...(opts.eku?.length === 0
          ? []
          : [
              new x509.ExtendedKeyUsageExtension(
                opts.eku ?? [x509.ExtendedKeyUsage.serverAuth, x509.ExtendedKeyUsage.clientAuth],
              ),
            ]),
        new x509.SubjectAlternativeNameExtension([
          { type: "dns", value: "localhost" },
          { type: "ip", value: "127.0.0.1" },
        ]),
      ];
  const cert = await x509.X509CertificateGenerator.create({
    serialNumber: randomSerial(),
    subject: opts.subject,
    issuer: issuerCert.subjectName,
    ...validityWindow(30, new Date()),
    ...(opts.notBefore ? { notBefore: opts.notBefore } : {}),
    ...(opts.notAfter ? { notAfter: opts.notAfter } : {}),
    publicKey: keys.publicKey,
    signingKey: await importPrivateKeyPem(issuer.keyPem, "issuer key"),
    signingAlgorithm: EC_ALGORITHM,
    extensions: [
      ...kind,
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
      new x509.AuthorityKeyIdentifierExtension(
        issuerSki ? issuerSki.keyId : (await x509.SubjectKeyIdentifierExtension.create(issuerCert.publicKey)).keyId,
      ),
    ],
  });
  return { certPem: cert.toString("pem") + "\n", keyPem: await exportPrivateKeyPem(keys.privateKey) };
}

/** An intermediate CA under `ca` and a leaf named `name` under it: `chain` is what the leaf presents. */
export async function craftIntermediateLeaf(
  ca: CertAndKey,
  name: string,
): Promise<{ intermediate: CertAndKey; leaf: CertAndKey; chain: string }> {
  const intermediate = await craftCert(ca, { subject: [{ CN: ["sub-CA"] }], ca: true });
  const leaf = await craftCert(intermediate, { subject: [{ CN: [name] }] });
  return { intermediate, leaf, chain: leaf.certPem + intermediate.certPem };
}
