import { createPrivateKey } from "node:crypto";
import { PkiError, pkiErrors } from "./errors";
import { readSecret, SECRET_MODE, writeFileAtomic } from "./secure-file";

/**
 * Where the fleet CA key's passphrase comes from, asked only when the key is encrypted: the environment
 * (A2A_NODE_CA_PASSPHRASE), a 0600 file (ca_passphrase_file), or a prompt. Never a command-line flag.
 */
export type Unlock = () => Promise<string | undefined>;

/** Shortest passphrase accepted for the CA key: it is all that stands between a copied file and the fleet. */
export const MIN_PASSPHRASE = 12;

const ENCRYPTED = "-----BEGIN ENCRYPTED PRIVATE KEY-----";

export function isEncryptedKey(pem: string): boolean {
  return pem.includes(ENCRYPTED);
}

/**
 * The fleet CA key as a plain PKCS#8 PEM, to sign with, in memory only. An encrypted key (PKCS#8 with PBES2,
 * as OpenSSL writes it) is decrypted with the passphrase `unlock` gives; CA_KEY_LOCKED when there is none or
 * it is wrong.
 */
export async function readCaKey(path: string, unlock?: Unlock): Promise<string> {
  const pem = readSecret(path);
  if (!isEncryptedKey(pem)) return pem;
  const passphrase = await unlock?.();
  if (!passphrase) throw pkiErrors.caKeyLocked(path, "it is encrypted and no passphrase was given");
  try {
    return createPrivateKey({ key: pem, format: "pem", passphrase })
      .export({ type: "pkcs8", format: "pem" })
      .toString();
  } catch {
    throw pkiErrors.caKeyLocked(path, "the passphrase does not open it");
  }
}

/** A PKCS#8 PEM encrypted with `passphrase` (AES-256-CBC under PBES2, readable by OpenSSL too). */
export function encryptKeyPem(plainPem: string, passphrase: string): string {
  if (passphrase.length < MIN_PASSPHRASE)
    throw new PkiError(
      "CA_KEY_LOCKED",
      `a CA key passphrase needs at least ${MIN_PASSPHRASE} characters`,
      "choose a longer one",
    );
  return createPrivateKey(plainPem)
    .export({ type: "pkcs8", format: "pem", cipher: "aes-256-cbc", passphrase })
    .toString();
}

/**
 * Encrypts the CA key in place (atomically; the file stays 0600). From then on every command that signs asks
 * for the passphrase, and a CA node's daemon needs it in its environment to renew, enroll and revoke.
 */
export function protectCaKey(path: string, passphrase: string): void {
  const pem = readSecret(path);
  if (isEncryptedKey(pem)) throw new PkiError("CA_KEY_LOCKED", `${path} is already encrypted`, "nothing to do");
  writeFileAtomic(path, encryptKeyPem(pem, passphrase), { mode: SECRET_MODE, overwrite: true });
}
