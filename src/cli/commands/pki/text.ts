import type { IssuedCert } from "../../../../pki/registry";

/** "2027-11-30 04:50 UTC (in 364 days)", or "... (EXPIRED)". */
export function expiresIn(at: Date, now = new Date()): string {
  const when = utc(at);
  // Rounded, so a certificate issued a moment ago for 365 days reads "in 365 days".
  const days = Math.round((at.getTime() - now.getTime()) / 86_400_000);
  return at.getTime() < now.getTime() ? `${when} (EXPIRED)` : `${when} (in ${days} day${days === 1 ? "" : "s"})`;
}

/** "2027-11-30 04:50 UTC" */
export function utc(at: Date): string {
  return at.toISOString().slice(0, 16).replace("T", " ") + " UTC";
}

/** What an issue with --replace (or a revoke) took away, one line each. */
export function revokedLines(revoked: IssuedCert[]): string[] {
  return revoked.map((c) => `  revoked      serial ${c.serial} (${c.name}, was valid until ${utc(c.notAfter)})`);
}

/** valid, expired or revoked: what `pki list` says of a certificate the CA issued. */
export function statusOf(c: IssuedCert, now = new Date()): "valid" | "expired" | "revoked" {
  if (c.revokedAt) return "revoked";
  return c.notAfter.getTime() <= now.getTime() ? "expired" : "valid";
}
