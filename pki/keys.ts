import { X509Certificate as NodeX509, createPrivateKey } from "node:crypto";
import { EC_ALGORITHM, x509 } from "./x509";
import { pkiErrors } from "./errors";

const PRIVATE_KEY_TAG = "PRIVATE KEY";

/** A fresh ECDSA P-256 key pair. Extractable, because the private half has to be written to disk once. */
export async function generateKeyPair(): Promise<CryptoKeyPair> {
  return (await crypto.subtle.generateKey(EC_ALGORITHM, true, ["sign", "verify"])) as CryptoKeyPair;
}

/** PKCS#8 PEM ("BEGIN PRIVATE KEY"), the form OpenSSL, node:tls and Bun all load without options. */
export async function exportPrivateKeyPem(key: CryptoKey): Promise<string> {
  const der = await crypto.subtle.exportKey("pkcs8", key);
  return withNewline(x509.PemConverter.encode(der, PRIVATE_KEY_TAG));
}

/** SPKI PEM of a public key, for the "only the public key travels to the CA" flow. */
export async function exportPublicKeyPem(key: CryptoKey): Promise<string> {
  const der = await crypto.subtle.exportKey("spki", key);
  return withNewline(x509.PemConverter.encode(der, "PUBLIC KEY"));
}

/**
 * Loads a PKCS#8 PEM private key for signing. Imported non-extractable: once loaded, the key cannot be
 * exported again by anything in this process. `what` names the key in errors ("secrets/ca.key").
 */
export async function importPrivateKeyPem(pem: string, what = "private key"): Promise<CryptoKey> {
  try {
    const blocks = x509.PemConverter.decodeWithHeaders(pem);
    if (blocks.length !== 1 || blocks[0].type !== PRIVATE_KEY_TAG) throw new Error("not one PKCS#8 block");
    return await crypto.subtle.importKey("pkcs8", blocks[0].rawData, EC_ALGORITHM, false, ["sign"]);
  } catch {
    // The underlying error may quote the input; say only which key failed.
    throw pkiErrors.badKey(what);
  }
}

/** Throws KEY_MISMATCH unless `keyPem` is the private key for the public key in `certPem`. */
export function assertKeyMatchesCert(keyPem: string, certPem: string, keyWhat: string, certWhat: string): void {
  let matches: boolean;
  try {
    matches = new NodeX509(certPem).checkPrivateKey(createPrivateKey(keyPem));
  } catch {
    throw pkiErrors.badKey(keyWhat);
  }
  if (!matches) throw pkiErrors.keyMismatch(keyWhat, certWhat);
}

function withNewline(pem: string): string {
  return pem.endsWith("\n") ? pem : pem + "\n";
}
