import { existsSync } from "node:fs";
import { resolve } from "node:path";
import { recordCrlSource } from "./crl-source";
import { pkiErrors } from "./errors";
import { readRevocationList, type RevocationList } from "./crl-reader";
import { installedList, publishCrl } from "./crl-publish";
import { openCaRegistry, type CaPaths } from "./issuance";
import { normalizeNodeName } from "./names";
import type { CaRegistry, IssuedCert } from "./registry";
import { normalizeSerial } from "./registry";
import { PUBLIC_MODE, readPublic, writeFileAtomic } from "./secure-file";

export type RevocationPaths = CaPaths;

export interface RevokeResult {
  /** Certificates this call revoked. */
  revoked: IssuedCert[];
  /** Those that matched but were revoked before. */
  already: IssuedCert[];
  crl: RevocationList;
}

/**
 * On the CA machine: revokes a certificate by serial (and every certificate renewed from it, which its holder
 * got by presenting it), or every certificate of a name, records it, and signs a new revocation list into the
 * home (certs/crl.pem), which the CA node serves to the fleet. Revoking again is harmless: the first date
 * stays, and the list is signed anew.
 *
 * @example await revoke(homePaths(home), { target: "beta", reason: "laptop stolen" })
 */
export async function revoke(
  paths: RevocationPaths,
  opts: { target: string; reason?: string; now?: Date },
): Promise<RevokeResult> {
  const now = opts.now ?? new Date();
  const registry = openCaRegistry(paths);
  try {
    const matches = findTargets(registry, opts.target);
    if (matches.length === 0) throw pkiErrors.notIssued(`named "${opts.target}" or with serial ${opts.target}`);
    const revoked = registry.transaction(() =>
      registry.revoke(
        matches.filter((c) => !c.revokedAt).map((c) => c.serial),
        now,
        opts.reason,
      ),
    );
    const already = matches.filter((c) => c.revokedAt);
    return { revoked, already, crl: await publishCrl(paths, registry, now) };
  } finally {
    registry.close();
  }
}

/**
 * A serial the registry knows, with the certificates renewed from it (whoever held it could get them, and a
 * renewal keeps the key unless asked otherwise), else every certificate of that name.
 */
function findTargets(registry: CaRegistry, target: string): IssuedCert[] {
  if (/^[0-9A-Fa-f:]+$/.test(target)) {
    const bySerial = registry.bySerial(normalizeSerial(target));
    if (bySerial) return [bySerial, ...registry.renewedFrom(bySerial.serial)];
  }
  let name: string;
  try {
    name = normalizeNodeName(target);
  } catch {
    return [];
  }
  return registry.list().filter((c) => c.name === name);
}

/**
 * Writes the fleet's revocation list to `out`, for machines the CA node cannot reach. On the CA machine it is
 * signed anew from the registry (so it is current, and exists even before anything was revoked); elsewhere it
 * is the list installed in this home.
 */
export async function exportCrl(
  paths: RevocationPaths,
  opts: { out: string; overwrite?: boolean; now?: Date },
): Promise<RevocationList> {
  if (!opts.overwrite && existsSync(opts.out)) throw pkiErrors.fileExists(opts.out);
  let list: RevocationList | undefined;
  if (existsSync(paths.caKey)) {
    const registry = openCaRegistry(paths);
    try {
      list = await publishCrl(paths, registry, opts.now);
    } finally {
      registry.close();
    }
  } else {
    if (!existsSync(paths.caCert)) throw pkiErrors.noCa(paths.caCert);
    list = installedList(paths, readPublic(paths.caCert));
    if (!list) throw pkiErrors.noCrl(paths.crl);
  }
  writeFileAtomic(opts.out, list.pem, { mode: PUBLIC_MODE, overwrite: opts.overwrite });
  return list;
}

/**
 * Installs a revocation list brought from the CA machine, once checked: signed by this home's fleet CA, and
 * not older than the one installed (STALE_CRL), so an old copy can never bring a revoked certificate back.
 * Returns the list and whether it replaced anything (false when the same number was already installed).
 */
export function importCrl(
  paths: { caCert: string; crl: string },
  file: string,
): { list: RevocationList; changed: boolean } {
  if (!existsSync(paths.caCert)) throw pkiErrors.noCa(paths.caCert);
  const caPem = readPublic(paths.caCert);
  const list = readRevocationList(readPublic(file), caPem, file);
  const installed = installedList(paths, caPem);
  if (installed && installed.number > list.number) throw pkiErrors.staleCrl(file, list.number, installed.number);
  if (installed && installed.number === list.number) return { list: installed, changed: false };
  writeFileAtomic(paths.crl, list.pem, { mode: PUBLIC_MODE, overwrite: true });
  recordCrlSource(paths.crl, list.number, { kind: "imported", file: resolve(file), at: new Date().toISOString() });
  return { list, changed: true };
}
