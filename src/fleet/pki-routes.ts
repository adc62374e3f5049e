import type { CallerIdentity } from "../protocol/caller";
import type { HttpRequest, HttpResponse } from "../server/http1";
import { CRL_PATH } from "./crl-sync";
import type { RevocationState } from "./revocation-state";
import { RENEW_PATH } from "./ca-service";

const JSON_HEADERS = { "content-type": "application/json" };

export type PkiRoutes = (req: HttpRequest, caller: CallerIdentity, path: string) => Promise<HttpResponse>;

/**
 * The fleet PKI's routes under /pki/, on the mutual-TLS listener only (every caller holds a fleet certificate
 * that is not revoked): GET /pki/crl gives the revocation list this node enforces, so the CA node serves the
 * one it signs and any node can pass its copy on; POST /pki/renew renews the caller's certificate, on the node
 * that holds the fleet CA (src/fleet/ca-service.ts). On the CA node every caller here shows which certificate
 * it uses: `seen` supersedes the one a renewed certificate replaced (see FleetPki.seenInUse).
 */
export function createPkiRoutes(options: {
  revocations: RevocationState;
  renew(req: HttpRequest, caller: CallerIdentity): Promise<HttpResponse>;
  seen?(caller: CallerIdentity): Promise<void>;
  log?: { warn(msg: string, fields?: Record<string, unknown>): void };
}): PkiRoutes {
  return async (req, caller, path) => {
    // A failure here (an encrypted CA key without its passphrase) must not cost the caller its answer.
    await options.seen?.(caller).catch((err) => options.log?.warn("could not revoke a certificate its holder renewed", { peer: caller.name, reason: (err as Error).message }));
    if (path === RENEW_PATH) return options.renew(req, caller);
    if (path === CRL_PATH) {
      if (req.method !== "GET") return json(405, "use GET", { allow: "GET" });
      options.revocations.loadFromDisk();
      const list = options.revocations.current();
      if (!list) return json(404, "this node holds no revocation list (nothing has been revoked)");
      return { status: 200, headers: { "content-type": "application/x-pem-file", "x-crl-number": String(list.number) }, body: list.pem };
    }
    return json(404, `no such PKI route: ${path}`);
  };
}

function json(status: number, error: string, headers: Record<string, string> = {}): HttpResponse {
  return { status, headers: { ...JSON_HEADERS, ...headers }, body: JSON.stringify({ error }) };
}
