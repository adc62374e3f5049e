import { randomBytes } from "node:crypto";

/** A certificate and its private key, both PEM. */
export interface CertAndKey {
  certPem: string;
  keyPem: string;
}

const DAY_MS = 24 * 60 * 60 * 1000;
// Peers' clocks drift; a certificate made a moment ago must not be "not yet valid" on a machine a few
// minutes behind.
const BACKDATE_MS = 5 * 60 * 1000;

export function validityWindow(days: number, now: Date): { notBefore: Date; notAfter: Date } {
  return { notBefore: new Date(now.getTime() - BACKDATE_MS), notAfter: new Date(now.getTime() + days * DAY_MS) };
}

/** Whole days from `now` until `until`, rounded down (negative once passed). */
export function daysUntil(until: Date, now: Date): number {
  return Math.floor((until.getTime() - now.getTime()) / DAY_MS);
}

/**
 * A random 16-byte serial (RFC 5280 allows up to 20). The top bits are fixed to 01 so the number is
 * positive and has no leading zero byte: a DER INTEGER must be minimal, and strict parsers (Go's)
 * reject a padded one.
 */
export function randomSerial(): string {
  const bytes = randomBytes(16);
  bytes[0] = (bytes[0] & 0x3f) | 0x40;
  return bytes.toString("hex");
}
