import type { CaPaths } from "../../pki/issuance";
import type { Logger } from "../log";
import type { HttpRequest, HttpResponse } from "../server/http1";
import { ENROLLMENT_ROLE, PORT_ROLE_HEADER } from "../client/wrong-port";
import { PeerRateLimiter } from "../server/rate-limit";
import { sourceOf } from "../server/source-address";

export const CA_CERT_PATH = "/pki/ca";
export const ENROLL_PATH = "/pki/enroll";

/** What a joining machine gets back: its certificate, the fleet CA, and where the CA node serves A2A. */
export interface EnrollAnswer {
  cert: string;
  caCert: string;
  /** The CA node's name and its mutual-TLS port (the joining machine dials the host it joined through). */
  caNode: { name: string; port: number };
}

// Every answer says what this port is, so a client that dialled it for A2A can say so (client/wrong-port.ts).
const ROLE = { [PORT_ROLE_HEADER]: ENROLLMENT_ROLE };
const JSON_HEADERS = { "content-type": "application/json", ...ROLE };

/**
 * Failed enrollments one source (an IPv4 address, an IPv6 /64) may make: 10 at once, then one a minute. A
 * person mistyping a token gets several tries; a script guessing tokens gets one a minute, and every request
 * past that is answered 429 before anything is read or looked up.
 */
export const ENROLL_FAILURES = { burst: 10, perSecond: 1 / 60 } as const;

/** What the enrollment port tells the node (the audit log, the journal at a rate, the metrics). */
export interface EnrollEvents {
  /** A machine joined: its name, certificate serial and SHA-256 fingerprint. */
  enrolled(e: { name: string; serial: string; fingerprint: string; remote: string | undefined }): void;
  /** A failed or throttled attempt; `name` is what its token claimed, if it was a token at all. */
  refused(e: {
    kind: "enrollment_refused" | "enrollment_throttled";
    reason: string;
    remote: string | undefined;
    name?: string;
  }): void;
}

/**
 * The enrollment port's only routes. GET /pki/ca gives the fleet CA certificate (public), which the joining
 * machine checks against the fingerprint it was given before it trusts this server; POST /pki/enroll
 * {token, csr} spends a one-time token from 'pki token' for a certificate (pki/tokens.ts). Anything else is 404:
 * A2A is on the mutual-TLS port only.
 */
export function enrollHandler(
  paths: CaPaths,
  caNode: () => { name: string; port: number },
  log: Logger,
  events?: EnrollEvents,
  failures = new PeerRateLimiter({ perSecond: ENROLL_FAILURES.perSecond, burst: ENROLL_FAILURES.burst }),
): (req: HttpRequest, remote: string | undefined) => Promise<HttpResponse> {
  const refuse = (e: Parameters<EnrollEvents["refused"]>[0]) => {
    if (events) events.refused(e);
    else log.warn("refused an enrollment", { name: e.name, reason: e.reason, remote: e.remote });
  };
  return async (req, remote) => {
    const q = req.target.indexOf("?");
    const path = q === -1 ? req.target : req.target.slice(0, q);
    const { readPublic } = await import("../../pki/secure-file");
    if (path === CA_CERT_PATH) {
      if (req.method !== "GET") return json(405, { error: "use GET" });
      return {
        status: 200,
        headers: { "content-type": "application/x-pem-file", ...ROLE },
        body: readPublic(paths.caCert),
      };
    }
    if (path !== ENROLL_PATH) {
      const a2aPort = caNode().port;
      return json(404, {
        error: `this port serves enrollment only (a2a-node join); A2A is on the mutual-TLS port, ${a2aPort}`,
        a2aPort,
      });
    }
    if (req.method !== "POST") return json(405, { error: "use POST" });
    // A source that has failed too often is answered before its request is read: no parsing, no registry.
    const source = sourceOf(remote);
    const wait = failures.available(source);
    if (wait > 0) {
      refuse({
        kind: "enrollment_throttled",
        reason: `too many failed enrollments from this source: retry after ${wait} s`,
        remote,
      });
      return json(
        429,
        {
          error: `too many failed enrollments from this address: retry after ${wait} s (${ENROLL_FAILURES.burst} at once, then one a minute)`,
          code: "THROTTLED",
        },
        { "retry-after": String(wait) },
      );
    }
    const failed = (status: number, body: { error: string; code?: string }, name?: string) => {
      failures.take(source);
      refuse({ kind: "enrollment_refused", reason: body.error, remote, name });
      return json(status, body);
    };
    let body: { token?: unknown; csr?: unknown };
    try {
      body = JSON.parse(req.body.toString("utf8"));
    } catch {
      return failed(400, { error: "the body is not JSON" });
    }
    if (typeof body?.token !== "string" || typeof body.csr !== "string")
      return failed(400, { error: 'send {"token": "...", "csr": PEM}' });
    const { enrollWithToken, tokenName } = await import("../../pki/tokens");
    let claimed = "?";
    try {
      claimed = tokenName(body.token);
      const issued = await enrollWithToken(paths, { token: body.token, csrPem: body.csr });
      log.info("enrolled a new fleet member", {
        name: issued.record.name,
        serial: issued.record.serial,
        expires: issued.record.notAfter.toISOString(),
        remote,
      });
      events?.enrolled({
        name: issued.record.name,
        serial: issued.record.serial,
        fingerprint: issued.record.fingerprint256,
        remote,
      });
      return json(200, {
        cert: issued.certPem,
        caCert: readPublic(paths.caCert),
        caNode: caNode(),
      } satisfies EnrollAnswer);
    } catch (err) {
      const e = err as { name?: string; code?: string; message?: string };
      if (e.name !== "PkiError") throw err;
      // Never the token itself in the log: only the name it claims.
      return failed(
        e.code === "BAD_TOKEN" ? 403 : e.code === "NAME_HAS_CERT" ? 409 : 400,
        { error: e.message ?? "refused", code: e.code },
        claimed,
      );
    }
  };
}

function json(status: number, body: unknown, headers: Record<string, string> = {}): HttpResponse {
  return { status, headers: { ...JSON_HEADERS, ...headers }, body: JSON.stringify(body) };
}
