import { createHash, X509Certificate } from "node:crypto";

/**
 * A pin of a node's public key rather than of one certificate: SHA-256 over the DER SubjectPublicKeyInfo,
 * written `spki:sha256:` + base64url (no padding). Renewal keeps the key (`pki renew`; `--rekey` makes a new
 * one), so this pin holds across renewals, as step-ca's `renew` and `rekey` split it; a certificate fingerprint
 * changes with every renewal. The same digest as HPKP's pin-sha256 and curl's --pinnedpubkey, in base64url.
 *
 * By hand: openssl x509 -in node.crt -pubkey -noout | openssl pkey -pubin -outform der |
 *          openssl dgst -sha256 -binary | basenc --base64url | tr -d '='
 */
export const KEY_PIN_PREFIX = "spki:sha256:";

const KEY_PIN = /^spki:sha256:[A-Za-z0-9_-]{43}$/;

/** The key pin of a certificate (PEM, DER or parsed). */
export function keyPinOf(cert: string | Uint8Array | X509Certificate): string {
  const parsed = cert instanceof X509Certificate ? cert : new X509Certificate(cert);
  const spki = parsed.publicKey.export({ type: "spki", format: "der" });
  return KEY_PIN_PREFIX + createHash("sha256").update(spki).digest("base64url");
}

/** Whether `text` is a key pin as keyPinOf writes it. */
export function isKeyPin(text: string): boolean {
  return KEY_PIN.test(text);
}
