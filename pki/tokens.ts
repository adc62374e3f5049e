import { createHash, randomBytes } from "node:crypto";
import { PkiError, pkiErrors } from "./errors";
import { readCsr } from "./csr";
import { issueRecorded, openCaRegistry, type CaPaths, type RecordedIssue } from "./issuance";
import { checkDays, normalizeNodeName, normalizeSans } from "./names";

/** Longest a join token may live: it is meant for the next few minutes, not for a rainy day. */
export const MAX_TOKEN_TTL_MS = 7 * 86_400_000;

export interface NewToken {
  /** NAME.SECRET: the name is not secret (the new machine needs it for its request), the 256-bit secret is. */
  token: string;
  name: string;
  expiresAt: Date;
}

/**
 * On the CA machine: a one-time join token for machine NAME, valid for `ttlMs`. Only the SHA-256 of the token is
 * stored, so the registry file does not hold a usable token. The SANs, validity and --replace are decided here,
 * by the CA's operator, not by whoever presents the token. Refused while NAME holds a valid certificate,
 * unless `replace`.
 */
export function createToken(
  paths: CaPaths,
  opts: { name: string; ttlMs: number; sans?: string[]; days?: number; replace?: boolean; now?: Date },
): NewToken {
  const name = normalizeNodeName(opts.name);
  const sans = normalizeSans(["localhost", "127.0.0.1", ...(opts.sans ?? [])]).map((s) => s.value);
  const days = checkDays(opts.days ?? 365, "certificate");
  if (!(opts.ttlMs >= 1000 && opts.ttlMs <= MAX_TOKEN_TTL_MS))
    throw new PkiError(
      "BAD_TOKEN",
      `a join token lives from 1 second to 7 days (got ${opts.ttlMs} ms)`,
      "pass --ttl such as 15m or 1h",
    );
  const now = opts.now ?? new Date();
  const token = `${name}.${randomBytes(32).toString("base64url")}`;
  const registry = openCaRegistry(paths);
  try {
    const held = registry.validFor(name, now);
    if (held.length > 0 && !opts.replace) throw pkiErrors.nameHasCert(name, held[held.length - 1]);
    const expiresAt = new Date(now.getTime() + opts.ttlMs);
    registry.transaction(() =>
      registry.addToken({
        hash: tokenHash(token),
        name,
        sans,
        days,
        replace: opts.replace === true,
        createdAt: now,
        expiresAt,
      }),
    );
    return { token, name, expiresAt };
  } finally {
    registry.close();
  }
}

export function tokenHash(token: string): string {
  return createHash("sha256").update(token).digest("hex");
}

/** The name a token was made for (the part before the dot); BAD_TOKEN if it is not shaped like one. */
export function tokenName(token: string): string {
  const m = /^([a-z0-9-]{1,63})\.([A-Za-z0-9_-]{43})$/.exec(token);
  if (!m) throw pkiErrors.badToken("it is not a token from 'a2a-node pki token' (NAME.SECRET)");
  return normalizeNodeName(m[1]);
}

/**
 * On the CA node: a certificate for the request a joining machine sent with its token. The token must be
 * known, unused and unexpired, and the request for the token's name; it is spent in the same transaction that
 * records the certificate, so two machines racing with one token cannot both join. SANs, validity and
 * --replace are the token's.
 */
export async function enrollWithToken(
  paths: CaPaths,
  opts: { token: string; csrPem: string; now?: Date },
): Promise<RecordedIssue> {
  const now = opts.now ?? new Date();
  const name = tokenName(opts.token);
  const hash = tokenHash(opts.token);
  const registry = openCaRegistry(paths);
  try {
    const stored = registry.token(hash);
    if (!stored) throw pkiErrors.badToken("this CA never made it (or it was mistyped)");
    if (stored.usedAt) throw pkiErrors.badToken(`it was already used, on ${stored.usedAt.toISOString()}`);
    if (stored.expiresAt.getTime() <= now.getTime())
      throw pkiErrors.badToken(`it expired on ${stored.expiresAt.toISOString()}`);
    if (stored.name !== name) throw pkiErrors.badToken("its name does not match the one it was made for");
    const csr = await readCsr(opts.csrPem, "the join request");
    if (csr.name !== stored.name)
      throw pkiErrors.badToken(`it is for "${stored.name}", but the request is for "${csr.name}"`);
    return await issueRecorded(paths, registry, {
      name: stored.name,
      sans: stored.sans,
      days: stored.days,
      how: "join",
      replace: stored.replace,
      publicKey: csr.publicKeyPem,
      now,
      deliver: () => {
        if (!registry.useToken(hash, now)) throw pkiErrors.badToken("it was used by another machine a moment ago");
      },
    });
  } finally {
    registry.close();
  }
}
