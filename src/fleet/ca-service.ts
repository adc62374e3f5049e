import { existsSync } from "node:fs";
import type { CaPaths } from "../../pki/issuance";
import type { Logger } from "../log";
import type { CallerIdentity } from "../rpc/caller";
import type { HttpRequest, HttpResponse } from "../server/http1";

export const RENEW_PATH = "/pki/renew";

export interface RenewBody {
  /** The holder's request for its new key. */
  csr: string;
  /** The certificate it presented on this connection. */
  cert: string;
}

export interface RenewAnswer {
  cert: string;
  caCert: string;
}

const JSON_HEADERS = { "content-type": "application/json" };

/**
 * The CA node's renewal endpoint: POST /pki/renew {csr, cert} on the mutual-TLS listener. Only the holder of a
 * valid, unrevoked certificate of the fleet reaches it (the connection proved that), and it renews only that
 * very certificate (pki/renewal.ts), superseding it. A holder the authorization policy refuses everything
 * ([[authorize]] names it in no table; `mayRenew` false) gets no new certificate either: 403. The
 * certificate-issuing library is loaded on the first renewal, not at start.
 */
export function renewHandler(
  paths: CaPaths,
  log: Logger,
  mayRenew: (caller: CallerIdentity) => boolean = () => true,
): (req: HttpRequest, caller: CallerIdentity) => Promise<HttpResponse> {
  return async (req, caller) => {
    if (req.method !== "POST") return json(405, { error: "use POST" }, { allow: "POST" });
    if (!existsSync(paths.caKey))
      return json(404, { error: "this node does not hold the fleet CA; renew from the node that does (ca_peer)" });
    if (!mayRenew(caller)) {
      log.warn("refused a renewal", { caller: caller.name, reason: "the authorization policy refuses it everything" });
      return json(403, {
        error: `renewal refused: this node's [[authorize]] policy lets peer '${caller.name}' call nothing, so it renews no certificate of it either; its operator can add '${caller.name}' to the peers of a rule`,
        code: "RENEW_REFUSED",
      });
    }
    let body: Partial<RenewBody>;
    try {
      body = JSON.parse(req.body.toString("utf8")) as Partial<RenewBody>;
    } catch {
      return json(400, { error: "the body is not JSON" });
    }
    if (typeof body?.csr !== "string" || typeof body.cert !== "string")
      return json(400, { error: 'send {"csr": PEM, "cert": PEM}' });
    const [{ renewRecorded }, { openCaRegistry }, { readPublic }] = await Promise.all([
      import("../../pki/renewal"),
      import("../../pki/issuance"),
      import("../../pki/secure-file"),
    ]);
    try {
      const registry = openCaRegistry(paths);
      try {
        const issued = await renewRecorded(paths, registry, {
          csrPem: body.csr,
          currentCertPem: body.cert,
          presented: { name: caller.name, fingerprint256: caller.fingerprint },
        });
        log.info("renewed a certificate", {
          name: issued.record.name,
          serial: issued.record.serial,
          expires: issued.record.notAfter.toISOString(),
        });
        return json(200, { cert: issued.certPem, caCert: readPublic(paths.caCert) } satisfies RenewAnswer);
      } finally {
        registry.close();
      }
    } catch (err) {
      const e = err as { name?: string; code?: string; message?: string };
      if (e.name !== "PkiError") throw err;
      log.warn("refused a renewal", { caller: caller.name, reason: e.message });
      return json(e.code === "RENEW_REFUSED" ? 403 : 400, { error: e.message, code: e.code });
    }
  };
}

function json(status: number, body: unknown, headers: Record<string, string> = {}): HttpResponse {
  return { status, headers: { ...JSON_HEADERS, ...headers }, body: JSON.stringify(body) };
}
