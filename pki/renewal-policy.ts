/**
 * When a certificate is due for renewal, in one place for `pki needs-renewal`, the daemon's expiry warnings
 * and its own renewal. Plain date arithmetic (no certificate library), so the daemon can use it at start.
 */

const DAY_MS = 86_400_000;

/** Renewal is due once this much of a certificate's lifetime has passed (step-ca's default as well). */
export const RENEW_AT = 2 / 3;

export interface Validity {
  notBefore: Date;
  notAfter: Date;
}

/** The moment two thirds of the lifetime have passed. */
export function renewalDue(cert: Validity): Date {
  const life = cert.notAfter.getTime() - cert.notBefore.getTime();
  return new Date(cert.notBefore.getTime() + Math.floor(life * RENEW_AT));
}

/**
 * Whether `cert` should be renewed at `now`: with `withinDays`, when it expires within that many days;
 * otherwise once two thirds of its lifetime have passed. An expired certificate always needs renewal.
 */
export function needsRenewal(cert: Validity, now: Date, withinDays?: number): boolean {
  if (now.getTime() >= cert.notAfter.getTime()) return true;
  if (withinDays !== undefined) return cert.notAfter.getTime() - now.getTime() <= withinDays * DAY_MS;
  return now.getTime() >= renewalDue(cert).getTime();
}

/**
 * When the daemon renews: at two thirds of the lifetime, moved earlier by a random part of up to a twentieth
 * of it, so a fleet whose certificates were issued together does not ask the CA all at once.
 */
export function renewalTime(cert: Validity, random: number = Math.random()): Date {
  const life = cert.notAfter.getTime() - cert.notBefore.getTime();
  return new Date(renewalDue(cert).getTime() - Math.floor(life * 0.05 * random));
}

export type ExpiryLevel = "ok" | "renew" | "urgent" | "expired";

/**
 * How close to expiry `cert` is: "renew" past two thirds of its lifetime, "urgent" within 7 days (or the last
 * tenth of a short lifetime), "expired" once past. The daemon warns at "renew" and logs an error after that.
 */
export function expiryLevel(cert: Validity, now: Date): ExpiryLevel {
  const left = cert.notAfter.getTime() - now.getTime();
  if (left <= 0) return "expired";
  const life = cert.notAfter.getTime() - cert.notBefore.getTime();
  if (left <= Math.min(7 * DAY_MS, life / 10)) return "urgent";
  if (now.getTime() >= renewalDue(cert).getTime()) return "renew";
  return "ok";
}

/** Whole days until `at`, rounded (a certificate issued a moment ago for 30 days reads 30). */
export function daysLeft(at: Date, now: Date): number {
  return Math.round((at.getTime() - now.getTime()) / DAY_MS);
}
