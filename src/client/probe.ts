import { X509Certificate } from "node:crypto";
import { connect as tcpConnect } from "node:net";
import { connect as tlsConnect, type PeerCertificate } from "node:tls";
import { FleetMembership } from "../../pki/fleet-member";
import { keyPinOf } from "../../pki/key-pin";
import type { ClientTls } from "./mtls-fetch";
import { DEFAULT_PEER_TIMEOUTS, type PeerTimeouts } from "./deadlines";

/** The certificate a server presented, as a person compares it with `a2a-node pki show` on that machine. */
export interface ServerCertificate {
  /** The subject CN: the node name, for a fleet member. */
  name?: string;
  issuer?: string;
  fingerprint: string;
  /** The pin of its public key (spki:sha256:...), which its renewals keep; empty if the certificate did not parse. */
  keyPin: string;
  /** ISO-8601. */
  notAfter: string;
  /** The serial as the revocation list names it (upper-case hex, no leading zeros); absent if it did not parse. */
  serial?: string;
}

/**
 * What one connection attempt to a peer found, step by step: TCP, TLS, the server's certificate, and whether
 * the server then kept talking to us (a server that refuses our certificate hangs up after the handshake, or
 * sends an alert). Each kind is a different fix, so the CLI names them apart.
 */
export type Probe =
  | { kind: "no-listener" }
  | { kind: "unresolved" }
  | { kind: "no-route"; detail: string }
  /** No TCP connection within the connect timeout, or a connection and then no TLS handshake within its own. */
  | { kind: "timeout"; step: "connect" | "handshake"; seconds: number }
  | { kind: "not-tls"; plainHttp: boolean; banner?: string }
  | { kind: "foreign-certificate"; certificate: ServerCertificate; reason: string }
  | { kind: "refused-us"; certificate?: ServerCertificate; alert?: string }
  | { kind: "ok"; certificate: ServerCertificate };

/**
 * Connects to `url` with this node's identity and reports what happened. Nothing is sent but a GET /health
 * once the server's certificate has been judged a fleet member's, so probing a stranger gives it nothing.
 */
export async function probePeer(
  url: URL,
  tls: ClientTls,
  timeouts: PeerTimeouts = DEFAULT_PEER_TIMEOUTS,
): Promise<Probe> {
  const host = url.hostname.replace(/^\[|\]$/g, "");
  const port = Number(url.port || 443);
  const first = await tlsAttempt(host, port, tls, timeouts);
  if (first.kind !== "handshake-failed") return first;
  return { kind: "not-tls", ...(await sniffPlain(host, port, timeouts)) };
}

type Attempt = Probe | { kind: "handshake-failed" };

function tlsAttempt(host: string, port: number, tls: ClientTls, t: PeerTimeouts): Promise<Attempt> {
  const fleet = new FleetMembership(tls.ca);
  return new Promise((resolve) => {
    let connected = false;
    let secured = false;
    let gotData = false;
    let certificate: ServerCertificate | undefined;
    let done = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const finish = (p: Attempt) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      resolve(p);
    };
    // One bound per step: the connection, the handshake, the first byte of an answer.
    const step = (ms: number, outcome: () => Attempt) => {
      clearTimeout(timer);
      timer = setTimeout(() => finish(outcome()), ms);
    };
    step(t.connectMs, () => ({ kind: "timeout", step: "connect", seconds: t.connectMs / 1000 }));
    // Our own judgement follows (fleet membership, with a reason); the runtime's is read from `authorized`.
    const socket = tlsConnect({
      host,
      port,
      cert: tls.cert,
      key: tls.key,
      ca: tls.ca,
      rejectUnauthorized: false,
      servername: isIpLike(host) ? undefined : host,
    });
    socket.on("connect", () => {
      if (connected || secured) return;
      connected = true;
      step(t.handshakeMs, () => ({ kind: "timeout", step: "handshake", seconds: t.handshakeMs / 1000 }));
    });
    socket.on("secureConnect", () => {
      secured = true;
      step(t.answerMs, () => ({ kind: "refused-us", certificate, alert: "no answer after the handshake" }));
      const peer = socket.getPeerCertificate(true);
      certificate = describe(peer);
      if (!socket.authorized)
        return finish({ kind: "foreign-certificate", certificate, reason: why(String(socket.authorizationError)) });
      const verdict = fleet.check(peer);
      if ("refused" in verdict) return finish({ kind: "foreign-certificate", certificate, reason: verdict.refused });
      socket.write(`GET /health HTTP/1.1\r\nhost: ${host}\r\nconnection: close\r\n\r\n`);
    });
    socket.on("data", () => {
      gotData = true;
      if (certificate) finish({ kind: "ok", certificate });
    });
    socket.on("error", (err: NodeJS.ErrnoException) => {
      const code = err.code ?? "";
      if (code === "ECONNREFUSED") return finish({ kind: "no-listener" });
      if (code === "ENOTFOUND" || code === "EAI_AGAIN") return finish({ kind: "unresolved" });
      if (/ALERT/.test(code)) return finish({ kind: "refused-us", certificate, alert: alertName(code) });
      if (!secured && /^(ERR_SSL_|EPROTO)/.test(code)) return finish({ kind: "handshake-failed" });
      if (secured) return finish({ kind: "refused-us", certificate, alert: code });
      finish({ kind: "no-route", detail: `${code || "error"}: ${err.message}` });
    });
    socket.on("close", () => {
      if (gotData && certificate) finish({ kind: "ok", certificate });
      // Closed after a handshake we accepted, without a word: the server refused our certificate.
      else if (secured) finish({ kind: "refused-us", certificate });
      else finish({ kind: "handshake-failed" });
    });
  });
}

/** What answers on a port that does not speak TLS: an HTTP server (a plain-HTTP port) or something else. */
function sniffPlain(host: string, port: number, t: PeerTimeouts): Promise<{ plainHttp: boolean; banner?: string }> {
  return new Promise((resolve) => {
    let seen = "";
    const socket = tcpConnect({ host, port });
    const finish = () => {
      clearTimeout(timer);
      socket.destroy();
      const printable = seen
        .replace(/[^\x20-\x7e]+/g, " ")
        .trim()
        .slice(0, 40);
      resolve({ plainHttp: /^HTTP\/\d/.test(seen), banner: printable || undefined });
    };
    const timer = setTimeout(finish, t.connectMs + t.answerMs);
    socket.on("connect", () => socket.write(`HEAD / HTTP/1.0\r\nhost: ${host}\r\n\r\n`));
    socket.on("data", (d) => {
      seen += d.toString("latin1");
      if (seen.length >= 16) finish();
    });
    socket.on("error", finish);
    socket.on("close", finish);
  });
}

function describe(cert: PeerCertificate): ServerCertificate {
  const one = (v: unknown) => (typeof v === "string" ? v : Array.isArray(v) ? v.join(",") : undefined);
  let notAfter = cert.valid_to ? new Date(cert.valid_to).toISOString() : "";
  let keyPin = "";
  let serial: string | undefined;
  try {
    if (cert.raw) {
      const parsed = new X509Certificate(cert.raw);
      notAfter = new Date(parsed.validTo).toISOString();
      keyPin = keyPinOf(parsed);
      serial = parsed.serialNumber.toUpperCase().replace(/^0+(?=.)/, "");
    }
  } catch {
    // the runtime's parse above stands
  }
  return {
    name: one(cert.subject?.CN),
    issuer: one(cert.issuer?.CN),
    fingerprint: cert.fingerprint256 ?? "",
    keyPin,
    notAfter,
    ...(serial ? { serial } : {}),
  };
}

/** The runtime's verification codes, in words. */
function why(code: string): string {
  switch (code) {
    case "SELF_SIGNED_CERT_IN_CHAIN":
    case "DEPTH_ZERO_SELF_SIGNED_CERT":
    case "UNABLE_TO_VERIFY_LEAF_SIGNATURE":
    case "UNABLE_TO_GET_ISSUER_CERT_LOCALLY":
    case "UNABLE_TO_GET_ISSUER_CERT":
    case "CERT_SIGNATURE_FAILURE":
      return `it was not issued by our fleet CA (${code})`;
    case "CERT_HAS_EXPIRED":
      return "it has expired";
    case "CERT_NOT_YET_VALID":
      return "it is not valid yet (check both machines' clocks)";
    default:
      return code;
  }
}

/** ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED → "certificate required" */
function alertName(code: string): string {
  return code
    .replace(/^.*ALERT_/, "")
    .toLowerCase()
    .replace(/_/g, " ");
}

function isIpLike(host: string): boolean {
  return /^[\d.]+$/.test(host) || host.includes(":");
}
