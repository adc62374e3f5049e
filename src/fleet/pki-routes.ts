import type { CallerIdentity } from "../rpc/caller";
import type { HttpRequest, HttpResponse } from "../server/http1";
import { PeerRateLimiter } from "../server/rate-limit";
import { CRL_PATH } from "./crl-sync";
import type { RevocationState } from "./revocation-state";
import { RENEW_PATH } from "./ca-service";

const JSON_HEADERS = { "content-type": "application/json" };

export type PkiRoutes = (req: HttpRequest, caller: CallerIdentity, path: string) => Promise<HttpResponse>;

/**
 * Requests one peer may make to the /pki/ routes: 30 at once, then one a second. A node fetches the revocation
 * list once per crl_refresh_seconds (300 by default) and renews a few times a year; this leaves room for
 * `pki show`, retries and short refresh periods, and keeps a member in a loop from having the list read from
 * disk and served thousands of times a second.
 */
export const PKI_RATE = { perSecond: 1, burst: 30 } as const;

/**
 * Renewals one peer may ask for: 5 at once, then 5 an hour (one every 12 minutes). A node renews at two thirds
 * of its certificate's lifetime and retries a failure hourly, so it needs one now and then; every renewal
 * signs a certificate (and may come with a fresh key), so a member gone bad must not mint them by the thousand.
 * Every POST counts, answered or refused, since each costs a signature check.
 */
export const RENEW_RATE = { perSecond: 5 / 3600, burst: 5 } as const;

/**
 * The fleet PKI's routes under /pki/, on the mutual-TLS listener only (every caller holds a fleet certificate
 * that is not revoked): GET /pki/crl gives the revocation list this node enforces, so the CA node serves the
 * one it signs and any node can pass its copy on; POST /pki/renew renews the caller's certificate, on the node
 * that holds the fleet CA (src/fleet/ca-service.ts). Both are rate-limited per peer (PKI_RATE, and RENEW_RATE
 * for renewals), apart from the A2A rate limit: 429 with Retry-After past it. On the CA node every caller here
 * shows which certificate it uses: `seen` supersedes the one a renewed certificate replaced (see
 * FleetPki.seenInUse).
 */
export function createPkiRoutes(options: {
  revocations: RevocationState;
  renew(req: HttpRequest, caller: CallerIdentity): Promise<HttpResponse>;
  seen?(caller: CallerIdentity): Promise<void>;
  log?: { warn(msg: string, fields?: Record<string, unknown>): void };
  limiter?: PeerRateLimiter;
  renewLimiter?: PeerRateLimiter;
}): PkiRoutes {
  const limiter = options.limiter ?? new PeerRateLimiter(PKI_RATE);
  const renewLimiter = options.renewLimiter ?? new PeerRateLimiter(RENEW_RATE);
  return async (req, caller, path) => {
    const wait = limiter.take(caller.name);
    if (wait > 0)
      return limited(
        wait,
        `this node answers ${PKI_RATE.perSecond} /pki/ request per second from one peer, ${PKI_RATE.burst} at once`,
      );
    // A failure here (an encrypted CA key without its passphrase) must not cost the caller its answer.
    await options.seen?.(caller).catch((err) =>
      options.log?.warn("could not revoke a certificate its holder renewed", {
        peer: caller.name,
        reason: (err as Error).message,
      }),
    );
    if (path === RENEW_PATH) {
      if (req.method === "POST") {
        const renewWait = renewLimiter.take(caller.name);
        if (renewWait > 0)
          return limited(renewWait, `this node renews at most ${RENEW_RATE.burst} certificates an hour for one peer`);
      }
      return options.renew(req, caller);
    }
    if (path === CRL_PATH) {
      if (req.method !== "GET") return json(405, "use GET", { allow: "GET" });
      options.revocations.loadFromDisk();
      const list = options.revocations.current();
      if (!list) return json(404, "this node holds no revocation list (nothing has been revoked)");
      return {
        status: 200,
        headers: { "content-type": "application/x-pem-file", "x-crl-number": String(list.number) },
        body: list.pem,
      };
    }
    return json(404, `no such PKI route: ${path}`);
  };
}

function limited(seconds: number, why: string): HttpResponse {
  return json(429, `rate limit: retry after ${seconds} s (${why})`, { "retry-after": String(seconds) });
}

function json(status: number, error: string, headers: Record<string, string> = {}): HttpResponse {
  return { status, headers: { ...JSON_HEADERS, ...headers }, body: JSON.stringify({ error }) };
}
