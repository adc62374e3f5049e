import { existsSync } from "node:fs";
import { makeCrl } from "./crl";
import { readRevocationList, type RevocationList } from "./crl-reader";
import type { CaRegistry } from "./registry";
import { PUBLIC_MODE, readPublic, writeFileAtomic } from "./secure-file";
import { readCaKey, type Unlock } from "./ca-key";
import { recordCrlSource } from "./crl-source";

/**
 * Signs the CA's current revocation list (every revoked certificate not yet expired, under a new CRL number)
 * and installs it as this home's certs/crl.pem, valid for `paths.crlValidForMs` (DEFAULT_CRL_VALID_FOR_MS). A
 * list with a higher number already there (another process signed one meanwhile) is kept.
 */
export async function publishCrl(
  paths: { caCert: string; caKey: string; crl: string; unlock?: Unlock; crlValidForMs?: number },
  registry: CaRegistry,
  now: Date = new Date(),
): Promise<RevocationList> {
  const caPem = readPublic(paths.caCert);
  const entries = registry.revokedUnexpired(now).map((c) => ({ serial: c.serial, revokedAt: c.revokedAt as Date }));
  const number = registry.transaction(() => registry.next("crl"));
  const pem = await makeCrl(
    { certPem: caPem, keyPem: await readCaKey(paths.caKey, paths.unlock) },
    entries,
    number,
    now,
    paths.crlValidForMs,
  );
  const list = readRevocationList(pem, caPem, "the new revocation list");
  const installed = installedList(paths, caPem);
  if (installed && installed.number > list.number) return installed;
  writeFileAtomic(paths.crl, list.pem, { mode: PUBLIC_MODE, overwrite: true });
  recordCrlSource(paths.crl, list.number, { kind: "local-ca", at: now.toISOString() });
  return list;
}

/** The list installed in this home, checked against its fleet CA; undefined when there is none. */
export function installedList(paths: { crl: string }, caPem: string): RevocationList | undefined {
  if (!existsSync(paths.crl)) return undefined;
  return readRevocationList(readPublic(paths.crl), caPem, paths.crl);
}
