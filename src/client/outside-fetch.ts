import { readFileSync, statSync } from "node:fs";
import { getCACertificates } from "node:tls";
import type { PeerAuth, PeerTrust } from "../peers/peer-registry";
import { ProtocolError, type FetchFn } from "./peer-client";
import { DEFAULT_PEER_TIMEOUTS, withDeadlines, type PeerTimeouts } from "./deadlines";

/** A peer's credentials file could not be used: missing, unreadable, empty, or not the form its kind needs. */
export class PeerCredentialsError extends Error {
  constructor(
    message: string,
    readonly file: string,
  ) {
    super(message);
    this.name = "PeerCredentialsError";
  }
}

/** The peer answered 401 or 403: it did not take our credentials (or wants some and got none). */
export class PeerAuthRefused extends Error {
  constructor(
    message: string,
    readonly status: number,
    readonly auth?: PeerAuth,
  ) {
    super(message);
    this.name = "PeerAuthRefused";
  }
}

/** The CA file given with --ca could not be read. */
export class PeerCaError extends Error {
  constructor(
    message: string,
    readonly file: string,
  ) {
    super(message);
    this.name = "PeerCaError";
  }
}

const HEADER_LINE = /^([!#$%&'*+.^_`|~0-9A-Za-z-]+):[ \t]*(.*?)[ \t]*$/;

/**
 * The header an outside peer's credentials make, read from its file now (so a rotated token is used at once).
 * Errors name the file, never its content.
 */
export function readCredentialHeader(auth: PeerAuth): { name: string; value: string } {
  let text: string;
  try {
    text = readFileSync(auth.file, "utf8");
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const why =
      code === "ENOENT"
        ? "it does not exist"
        : code === "EACCES"
          ? "permission denied"
          : code === "EISDIR"
            ? "it is a directory"
            : (code ?? "unreadable");
    throw new PeerCredentialsError(
      `cannot read the ${auth.kind === "bearer" ? "token" : "header"} file ${auth.file}: ${why}`,
      auth.file,
    );
  }
  const lines = text
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter((l) => l !== "");
  if (auth.kind === "bearer") {
    if (lines.length !== 1 || /\s/.test(lines[0]))
      throw new PeerCredentialsError(
        `the token file ${auth.file} must hold one token on one line, without spaces (it holds ${lines.length} non-empty lines)`,
        auth.file,
      );
    return { name: "Authorization", value: `Bearer ${lines[0]}` };
  }
  const m = lines.length === 1 ? HEADER_LINE.exec(lines[0]) : null;
  if (!m || m[2] === "")
    throw new PeerCredentialsError(`the header file ${auth.file} must hold one 'Name: value' line`, auth.file);
  return { name: m[1], value: m[2] };
}

/** Group or others may read the file: worth a warning when it is registered. */
export function readableByOthers(file: string): boolean {
  try {
    return (statSync(file).mode & 0o077) !== 0;
  } catch {
    return false;
  }
}

/**
 * The CA certificates an outside peer's server must chain to: the operating system's store (falling back to
 * the runtime's bundled Mozilla roots on a system that has none), or the PEM file given with --ca, read now.
 */
export function trustRoots(trust: Exclude<PeerTrust, { kind: "fleet" }>): string[] {
  if (trust.kind === "ca") {
    try {
      const pem = readFileSync(trust.caFile, "utf8");
      if (!pem.includes("-----BEGIN CERTIFICATE-----"))
        throw new PeerCaError(`${trust.caFile} holds no PEM certificate`, trust.caFile);
      return [pem];
    } catch (err) {
      if (err instanceof PeerCaError) throw err;
      throw new PeerCaError(
        `cannot read the CA file ${trust.caFile}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`,
        trust.caFile,
      );
    }
  }
  const system = getCACertificates("system");
  return system.length ? [...system] : [...getCACertificates("bundled")];
}

/**
 * A fetch for an agent outside the fleet: the server is verified by host name against `trust` (no client
 * certificate is presented: the agent knows nothing of our PKI), and every request carries the peer's
 * credentials, read from their file at each request. A 401 or 403 becomes PeerAuthRefused, so the person
 * learns which file to check; the secret itself is never put in an error.
 */
export function outsideFetch(
  peer: { trust: Exclude<PeerTrust, { kind: "fleet" }>; auth?: PeerAuth },
  timeouts: PeerTimeouts = DEFAULT_PEER_TIMEOUTS,
): FetchFn {
  let roots: string[] | undefined;
  // Bounded like a fleet peer's calls (deadlines.ts); no sign of the handshake here, so it is timed with the answer.
  return withDeadlines(
    async (url, init) => {
      const headers = new Headers(init.headers);
      if (peer.auth) {
        const h = readCredentialHeader(peer.auth);
        headers.set(h.name, h.value);
      }
      // A redirect is not followed: it would carry the credentials to a URL the person never registered.
      const request: RequestInit = { ...init, headers, redirect: "manual" };
      if (url.startsWith("https:")) {
        roots ??= trustRoots(peer.trust);
        (request as { tls?: unknown }).tls = { ca: roots };
      }
      const res = await fetch(url, request);
      if (res.status >= 300 && res.status < 400) {
        await res.arrayBuffer().catch(() => undefined);
        const to = res.headers.get("location");
        throw new ProtocolError(
          `answered HTTP ${res.status}, a redirect${to ? ` to ${to}` : ""}; redirects are not followed with credentials: re-add the peer with the URL it sends to, if you trust it`,
        );
      }
      if (res.status === 401 || res.status === 403) {
        await res.arrayBuffer().catch(() => undefined);
        const scheme = res.headers.get("www-authenticate")?.split(/[\s,]/)[0];
        throw new PeerAuthRefused(
          `answered HTTP ${res.status}${scheme ? ` (it asks for ${scheme})` : ""}`,
          res.status,
          peer.auth,
        );
      }
      return res;
    },
    timeouts,
    false,
  );
}

/** One of the failures only a session with an outside peer has. */
export function isOutsideFailure(err: unknown): boolean {
  return err instanceof PeerAuthRefused || err instanceof PeerCredentialsError || err instanceof PeerCaError;
}
