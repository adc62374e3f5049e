import type { CaPaths } from "../../pki/issuance";
import type { Logger } from "../log";
import type { HttpRequest, HttpResponse } from "../server/http1";
import { ENROLLMENT_ROLE, PORT_ROLE_HEADER } from "../client/wrong-port";

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
 * The enrollment port's only routes. GET /pki/ca gives the fleet CA certificate (public), which the joining
 * machine checks against the fingerprint it was given before it trusts this server; POST /pki/enroll
 * {token, csr} spends a one-time token from 'pki token' for a certificate (pki/tokens.ts). Anything else is 404:
 * A2A is on the mutual-TLS port only.
 */
export function enrollHandler(paths: CaPaths, caNode: () => { name: string; port: number }, log: Logger): (req: HttpRequest, remote: string | undefined) => Promise<HttpResponse> {
  return async (req, remote) => {
    const q = req.target.indexOf("?");
    const path = q === -1 ? req.target : req.target.slice(0, q);
    const { readPublic } = await import("../../pki/secure-file");
    if (path === CA_CERT_PATH) {
      if (req.method !== "GET") return json(405, { error: "use GET" });
      return { status: 200, headers: { "content-type": "application/x-pem-file", ...ROLE }, body: readPublic(paths.caCert) };
    }
    if (path !== ENROLL_PATH) {
      const a2aPort = caNode().port;
      return json(404, { error: `this port serves enrollment only (a2a-node join); A2A is on the mutual-TLS port, ${a2aPort}`, a2aPort });
    }
    if (req.method !== "POST") return json(405, { error: "use POST" });
    let body: { token?: unknown; csr?: unknown };
    try {
      body = JSON.parse(req.body.toString("utf8"));
    } catch {
      return json(400, { error: "the body is not JSON" });
    }
    if (typeof body?.token !== "string" || typeof body.csr !== "string") return json(400, { error: 'send {"token": "...", "csr": PEM}' });
    const { enrollWithToken, tokenName } = await import("../../pki/tokens");
    let claimed = "?";
    try {
      claimed = tokenName(body.token);
      const issued = await enrollWithToken(paths, { token: body.token, csrPem: body.csr });
      log.info("enrolled a new fleet member", { name: issued.record.name, serial: issued.record.serial, expires: issued.record.notAfter.toISOString(), remote });
      return json(200, { cert: issued.certPem, caCert: readPublic(paths.caCert), caNode: caNode() } satisfies EnrollAnswer);
    } catch (err) {
      const e = err as { name?: string; code?: string; message?: string };
      if (e.name !== "PkiError") throw err;
      // Never the token itself in the log: only the name it claims.
      log.warn("refused an enrollment", { name: claimed, reason: e.message, remote });
      return json(e.code === "BAD_TOKEN" ? 403 : e.code === "NAME_HAS_CERT" ? 409 : 400, { error: e.message, code: e.code });
    }
  };
}

function json(status: number, body: unknown): HttpResponse {
  return { status, headers: JSON_HEADERS, body: JSON.stringify(body) };
}
