import { randomBytes } from "node:crypto";
import { EC_ALGORITHM, x509 } from "./x509";
import { exportPrivateKeyPem, generateKeyPair } from "./keys";
import { checkCaName, checkDays } from "./names";
import { type CertAndKey, randomSerial, validityWindow } from "./cert-params";

export interface CreateCaOptions {
  /** The CA certificate's CN, e.g. defaultCaName("alice"). */
  name: string;
  /** Validity in days; the fleet CA outlives its leaves, so the default is ten years. */
  days?: number;
  /** For tests: the moment the certificate is made. */
  now?: Date;
}

/**
 * Creates a self-signed fleet CA: a P-256 key and a certificate that may sign leaf certificates only
 * (pathLen 0, so a leaf can never mint further CAs).
 *
 * @example const ca = await createCa({ name: defaultCaName("alice") });
 */
export async function createCa(opts: CreateCaOptions): Promise<CertAndKey> {
  const name = checkCaName(opts.name);
  const days = checkDays(opts.days ?? 3650, "CA");
  const keys = await generateKeyPair();
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: randomSerial(),
    name: [{ CN: [name] }],
    ...validityWindow(days, opts.now ?? new Date()),
    keys,
    signingAlgorithm: EC_ALGORITHM,
    extensions: [
      new x509.BasicConstraintsExtension(true, 0, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    ],
  });
  return { certPem: cert.toString("pem") + "\n", keyPem: await exportPrivateKeyPem(keys.privateKey) };
}

/**
 * A CN for a new fleet CA. The random tag keeps two fleets' CAs from sharing a subject (TLS stacks look
 * issuers up by subject); the node name says where the CA was made, when it fits in the 64-char CN limit.
 */
export function defaultCaName(nodeName: string): string {
  const base = `a2a-node fleet CA ${randomBytes(4).toString("hex")}`;
  const withNode = `${base} (${nodeName})`;
  return withNode.length <= 64 ? withNode : base;
}
