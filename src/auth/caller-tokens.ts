import { createHash, randomBytes, timingSafeEqual } from "node:crypto";

/**
 * Bearer tokens for callers outside the fleet (the token listener, `a2a-node tokens`). Each token names its
 * caller; the node keeps only the token's SHA-256, so a copy of the database (or a backup) gives nobody a
 * working token. A token is 32 random bytes, so a fast hash is enough: there is nothing to guess.
 */
export interface CallerToken {
  /** The caller's name as given to `tokens add` (a node-name-like label). */
  name: string;
  createdAt: string;
}

export interface CallerTokenStore {
  /** Makes a new token for `name` and keeps its hash; the token is returned once and never again. */
  add(name: string): { token: string; created: CallerToken };
  list(): CallerToken[];
  /** Forgets `name`'s token; false if there was none. */
  revoke(name: string): boolean;
  /** The caller a presented token belongs to, compared in constant time; undefined for any other token. */
  verify(token: string): CallerToken | undefined;
}

/**
 * The prefix of a token caller's identity. Node names (certificate CNs) are letters, digits and dashes only,
 * so "token:beta" can never be a fleet member's name: a token caller never shares tasks with a certificate
 * holder, whatever name it was given.
 */
export const TOKEN_CALLER_PREFIX = "token:";

const TOKEN_PREFIX = "a2a_";

/** A fresh token: recognisable by its prefix (secret scanners, a person reading a config), 256 random bits. */
export function newCallerToken(): string {
  return TOKEN_PREFIX + randomBytes(32).toString("base64url");
}

/** The SHA-256 of a token, hex: what the store keeps. */
export function hashCallerToken(token: string): string {
  return createHash("sha256").update(token, "utf8").digest("hex");
}

/**
 * Which of `hashes` the token's hash is, comparing against every one of them in constant time (no early exit),
 * so the time taken says nothing about how close a guess came or which entry matched.
 */
export function matchTokenHash<T extends { tokenHash: string }>(token: string, entries: readonly T[]): T | undefined {
  const given = Buffer.from(hashCallerToken(token), "hex");
  let found: T | undefined;
  for (const e of entries) {
    const stored = Buffer.from(e.tokenHash, "hex");
    if (stored.length === given.length && timingSafeEqual(stored, given) && !found) found = e;
  }
  return found;
}
