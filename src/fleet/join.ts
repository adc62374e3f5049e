import { X509Certificate, createPrivateKey } from "node:crypto";
import { existsSync, mkdirSync } from "node:fs";
import { dirname } from "node:path";
import type { PeerCertificate } from "node:tls";
import { pkiErrors } from "../../pki/errors";
import { FleetMembership } from "../../pki/fleet-member";
import { PUBLIC_MODE, SECRET_MODE, readPublic, readSecret, writeFileAtomic } from "../../pki/secure-file";
import type { HomePaths } from "../home";
import { CA_CERT_PATH, ENROLL_PATH, type EnrollAnswer } from "./enroll-service";
import {
  DEFAULT_PEER_TIMEOUTS,
  PeerTimeoutError,
  timeoutHint,
  withDeadlines,
  type PeerTimeouts,
} from "../client/deadlines";

/** A join that did not happen; nothing but (possibly) this machine's new key was written. */
export class JoinError extends Error {
  constructor(
    message: string,
    readonly kind: "refused" | "unreachable" | "mismatch",
    readonly hint?: string,
  ) {
    super(message);
    this.name = "JoinError";
  }
}

export interface JoinResult {
  name: string;
  sans: string[];
  fingerprint256: string;
  notAfter: Date;
  caFingerprint256: string;
  /** The CA node, to register as a peer: its name and a URL on the host joined through. */
  caNode: { name: string; url: string };
  keyCreated: boolean;
}

/** "sha256:ab12...", "AB:12:...", or plain hex, as "AB:12:..." (node's fingerprint256 form). */
export function normalizeFingerprint(input: string): string {
  const hex = input
    .replace(/^sha256:/i, "")
    .replace(/:/g, "")
    .toUpperCase();
  if (!/^[0-9A-F]{64}$/.test(hex))
    throw new JoinError(
      `--ca-fingerprint ${JSON.stringify(input)} is not a SHA-256 fingerprint`,
      "mismatch",
      "copy it from 'a2a-node pki token' (sha256:...) or 'a2a-node pki show' on the CA machine",
    );
  return hex.match(/../g)!.join(":");
}

/**
 * Joins the fleet with a one-time token: makes this machine's key here (0600; an earlier attempt's key is
 * reused), fetches the fleet CA certificate from the enrollment port and trusts it only if its SHA-256 is the
 * pinned one, then sends the token and a certificate request over TLS verified against that CA (the server
 * must be a fleet member). What comes back is checked (that CA, the token's name, this key, valid now) before
 * the CA certificate and this node's certificate are installed. No private key ever leaves the machine.
 */
export async function join(
  paths: HomePaths,
  opts: { url: string; token: string; caFingerprint: string; timeouts?: PeerTimeouts },
): Promise<JoinResult> {
  const timed = timedFetch(opts.timeouts ?? DEFAULT_PEER_TIMEOUTS);
  const pin = normalizeFingerprint(opts.caFingerprint);
  const { tokenName } = await import("../../pki/tokens");
  const name = tokenName(opts.token);
  const base = new URL(opts.url);
  if (base.protocol !== "https:")
    throw new JoinError(
      `${opts.url} is not an https:// URL`,
      "mismatch",
      "give the CA node's enrollment port: https://HOST:PORT",
    );
  if (existsSync(paths.nodeCert)) throw pkiErrors.certExists(paths.nodeCert);
  if (existsSync(paths.caCert) && new X509Certificate(readPublic(paths.caCert)).fingerprint256 !== pin)
    throw pkiErrors.caMismatch(paths.caCert, "the pinned --ca-fingerprint");

  const caPem = await fetchPinnedCa(timed, base, pin);
  const { createCsr } = await import("../../pki/csr");
  const existingKey = existsSync(paths.nodeKey) ? readSecret(paths.nodeKey) : undefined;
  const { csrPem, keyPem } = await createCsr({ name, sans: [], keyPem: existingKey });
  for (const dir of new Set([dirname(paths.nodeKey), dirname(paths.nodeCert)]))
    mkdirSync(dir, { recursive: true, mode: 0o700 });
  // The key is on disk before it is used: a certificate issued for a key that was then lost would be wasted.
  if (!existingKey) writeFileAtomic(paths.nodeKey, keyPem, { mode: SECRET_MODE, onExists: pkiErrors.keyExists });

  const answer = await enroll(timed, base, caPem, opts.token, csrPem);
  const cert = checkAnswer(answer, caPem, name, keyPem);
  if (!existsSync(paths.caCert))
    writeFileAtomic(paths.caCert, caPem, { mode: PUBLIC_MODE, onExists: pkiErrors.certExists });
  writeFileAtomic(paths.nodeCert, answer.cert, { mode: PUBLIC_MODE, onExists: pkiErrors.certExists });
  const host = base.hostname;
  return {
    name,
    sans: (cert.subjectAltName ?? "")
      .split(", ")
      .filter(Boolean)
      .map((s) => s.replace(/^(DNS|IP Address):/, "")),
    fingerprint256: cert.fingerprint256,
    notAfter: cert.validToDate,
    caFingerprint256: pin,
    caNode: { name: answer.caNode.name, url: `https://${host}:${answer.caNode.port}` },
    keyCreated: !existingKey,
  };
}

/** The enrollment port's CA certificate, trusted only because its SHA-256 is the pinned one. */
async function fetchPinnedCa(timed: TimedFetch, base: URL, pin: string): Promise<string> {
  let res: Response;
  try {
    // Not verified on purpose: what this fetches is checked against the pin below, and nothing is sent.
    res = await timed(new URL(CA_CERT_PATH, base).toString(), { rejectUnauthorized: false });
  } catch (err) {
    if (err instanceof PeerTimeoutError)
      throw new JoinError(
        err.message,
        "unreachable",
        `${timeoutHint(err)}; is that the CA node's enrollment port ('pki token' prints its URL)?`,
      );
    const code = (err as { code?: string }).code ?? "";
    if (/^(EPROTO|ECONNRESET|ERR_SSL_)/.test(code))
      throw new JoinError(
        `the TLS handshake with ${base.origin} failed (${code}): a port that wants a client certificate, such as the A2A port, refuses a machine that has none yet`,
        "mismatch",
        "use the CA node's enrollment port (its enroll_port setting; 'pki token' prints the URL)",
      );
    throw new JoinError(
      `cannot reach ${base.origin}: ${(err as Error).message}`,
      "unreachable",
      "is 'a2a-node serve --enroll-port PORT' running on the CA machine, and that port open?",
    );
  }
  const text = await res.text();
  if (!res.ok)
    throw new JoinError(
      `${base.origin} is not an enrollment port (GET ${CA_CERT_PATH}: HTTP ${res.status})`,
      "refused",
      "use the CA node's enroll_port, not its A2A port",
    );
  let ca: X509Certificate;
  try {
    ca = new X509Certificate(text);
  } catch {
    throw new JoinError(`${base.origin} answered ${CA_CERT_PATH} with something that is not a certificate`, "refused");
  }
  if (ca.fingerprint256 !== pin)
    throw new JoinError(
      `the CA at ${base.origin} has fingerprint ${ca.fingerprint256}, not the pinned ${pin}`,
      "mismatch",
      "check --ca-fingerprint and the URL: this is not the fleet you were given a token for",
    );
  if (!ca.ca) throw new JoinError(`the certificate at ${base.origin}${CA_CERT_PATH} is not a CA`, "refused");
  return text;
}

/** POST the token and request over TLS verified against the pinned CA, to a server that is a fleet member. */
async function enroll(
  timed: TimedFetch,
  base: URL,
  caPem: string,
  token: string,
  csrPem: string,
): Promise<EnrollAnswer> {
  const fleet = new FleetMembership(caPem);
  let notMember: string | undefined;
  // The server is judged by the fleet CA, not by host name: a machine often joins through an IP address.
  const checkServerIdentity = (_host: string, cert: PeerCertificate): Error | undefined => {
    const verdict = fleet.check(cert);
    if ("refused" in verdict)
      return new Error((notMember = `the enrollment server's certificate is not a fleet member's: ${verdict.refused}`));
    return undefined;
  };
  let res: Response;
  try {
    res = await timed(
      new URL(ENROLL_PATH, base).toString(),
      { ca: caPem, checkServerIdentity },
      {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ token, csr: csrPem }),
      },
    );
  } catch (err) {
    if (notMember) throw new JoinError(notMember, "mismatch");
    if (err instanceof PeerTimeoutError) throw new JoinError(err.message, "unreachable", timeoutHint(err));
    throw new JoinError(`cannot enroll at ${base.origin}: ${(err as Error).message}`, "unreachable");
  }
  const text = await res.text();
  let body: Partial<EnrollAnswer> & { error?: string } = {};
  try {
    body = JSON.parse(text);
  } catch {
    // Reported below with the status.
  }
  if (!res.ok)
    throw new JoinError(
      body.error ?? `the CA node answered HTTP ${res.status}`,
      "refused",
      res.status === 403 ? "ask the CA machine for a new token: a2a-node pki token --name NAME" : undefined,
    );
  if (
    typeof body.cert !== "string" ||
    typeof body.caCert !== "string" ||
    typeof body.caNode?.name !== "string" ||
    typeof body.caNode.port !== "number"
  )
    throw new JoinError("the CA node's answer is missing the certificate or its own name and port", "refused");
  return body as EnrollAnswer;
}

/**
 * A fetch to the enrollment port with these TLS options, bounded step by step (its identity check marks the handshake).
 */
type TimedFetch = (
  url: string,
  tls: {
    rejectUnauthorized?: boolean;
    ca?: string;
    checkServerIdentity?: (host: string, cert: PeerCertificate) => Error | undefined;
  },
  init?: RequestInit,
) => Promise<Response>;

function timedFetch(timeouts: PeerTimeouts): TimedFetch {
  return (url, tls, init = {}) =>
    withDeadlines(
      (u, i, secured) =>
        fetch(u, {
          ...i,
          tls: {
            ...tls,
            checkServerIdentity: (host: string, cert: PeerCertificate) => {
              secured();
              return tls.checkServerIdentity?.(host, cert);
            },
          },
        } as RequestInit),
      timeouts,
      true,
    )(url, init);
}

function checkAnswer(answer: EnrollAnswer, caPem: string, name: string, keyPem: string): X509Certificate {
  const ca = new X509Certificate(caPem);
  if (new X509Certificate(answer.caCert).fingerprint256 !== ca.fingerprint256)
    throw new JoinError("the CA node answered with another CA certificate than the pinned one", "mismatch");
  const cert = new X509Certificate(answer.cert);
  if (!cert.checkIssued(ca) || !cert.verify(ca.publicKey))
    throw new JoinError("the certificate received was not issued by the pinned CA", "mismatch");
  if (cert.subject !== `CN=${name}`)
    throw new JoinError(`the certificate received is for ${JSON.stringify(cert.subject)}, not CN=${name}`, "mismatch");
  if (!cert.checkPrivateKey(createPrivateKey(keyPem)))
    throw new JoinError("the certificate received is not for this machine's key", "mismatch");
  const now = Date.now();
  if (now < cert.validFromDate.getTime() || now > cert.validToDate.getTime())
    throw new JoinError("the certificate received is not valid now (check the clocks)", "mismatch");
  return cert;
}
