/**
 * How long a revocation list the fleet CA signs is valid: CRL_VALID_REFRESHES refresh periods
 * (crl_refresh_seconds), and the CA node signs a new one once the one in force is a period old (see
 * src/fleet/fleet-pki.ts). A list past its next update therefore means nothing came from the CA for at least
 * three periods: revocations made since are not known to the node holding it.
 */
export const CRL_VALID_REFRESHES = 4;

/** crl_refresh_seconds when nothing sets it. */
export const DEFAULT_CRL_REFRESH_MS = 300_000;

/** A list's validity when nothing says otherwise: four of the default refresh periods, 20 minutes. */
export const DEFAULT_CRL_VALID_FOR_MS = CRL_VALID_REFRESHES * DEFAULT_CRL_REFRESH_MS;

/** The validity of a list signed by a CA node whose crl_refresh_seconds is `refreshMs`. */
export function crlValidForMs(refreshMs: number): number {
  return CRL_VALID_REFRESHES * refreshMs;
}
