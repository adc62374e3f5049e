import { existsSync } from "node:fs";
import type { CaPaths } from "./issuance";
import { CaRegistry, type IssuedCert } from "./registry";

/**
 * A renewed certificate is in use (its holder presented it to the CA node, or the CA node serves it itself):
 * the certificate it was renewed from is revoked now, superseded, and a new revocation list signed into the
 * home. Until then its holder could still need it (a renewal whose answer was lost, a node that has not
 * switched yet), so a renewal alone revokes only the renewals never put to use (see issueRecorded). Returns
 * what it revoked: nothing for a certificate that is no renewal, or whose predecessor is revoked or expired.
 *
 * Light on purpose: the CA node asks this for every certificate it sees on its /pki/ routes (once each), and
 * the certificate-issuing library is loaded only when there is a list to sign.
 */
export async function supersedeInUse(
  paths: CaPaths,
  fingerprint256: string,
  now: Date = new Date(),
): Promise<IssuedCert[]> {
  if (!existsSync(paths.caRegistry)) return [];
  const registry = CaRegistry.open(paths.caRegistry);
  try {
    const inUse = registry.byFingerprint(fingerprint256);
    if (!inUse?.renewedFrom || inUse.revokedAt) return [];
    const from = inUse.renewedFrom;
    const revoked = registry.transaction(() => {
      const previous = registry.bySerial(from);
      if (!previous || previous.revokedAt || previous.notAfter <= now) return [];
      return registry.revoke(
        [previous.serial],
        now,
        `superseded: ${inUse.name} renewed serial ${previous.serial} as ${inUse.serial}, now in use`,
      );
    });
    if (revoked.length > 0) {
      const { publishCrl } = await import("./crl-publish");
      await publishCrl(paths, registry, now);
    }
    return revoked;
  } finally {
    registry.close();
  }
}
