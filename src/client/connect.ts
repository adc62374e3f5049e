import type { Peer, PeerRegistry } from "../peers/peer-registry";
import { isThisMachine } from "../local-addresses";
import { isOutsidePeer } from "../peers/peer-registry";
import { PeerIdentityError } from "./mtls-fetch";
import { PeerAuthRefused, PeerCaError, PeerCredentialsError } from "./outside-fetch";
import { ProtocolError, RemoteError } from "./peer-client";
import { normalizePeerUrl } from "./peer-url";
import type { Probe } from "./probe";
import { WrongPortError } from "./wrong-port";
import { PeerTimeoutError, timeoutHint } from "./deadlines";

/** Where a command is sending: a registered peer, or a URL given directly. */
export interface Target {
  label: string;
  baseUrl: string;
  rpcUrl: string;
  peer?: Peer;
}

/**
 * `--agent NAME|URL`: a URL (anything with "://") is checked as `peers add` checks one (https only, port 9443
 * when none is given); anything else must be a registered peer. Names are looked up as typed, then in lower
 * case (the form init-pki issues). A URL that is a registered peer's URL is that peer (its name and pin are
 * checked); any other URL accepts whichever fleet member answers, and says which. Throws PeerUrlError for a
 * bad URL; undefined for an unknown name.
 */
export function resolveTarget(agent: string, peers: Pick<PeerRegistry, "get" | "list">): Target | undefined {
  if (agent.includes("://")) {
    const url = normalizePeerUrl(agent).url;
    const known = peers.list().find((p) => p.url === url);
    if (known) return targetOf(known);
    const u = new URL(url);
    return { label: u.origin, baseUrl: u.origin, rpcUrl: new URL(u.pathname || "/", u).toString() };
  }
  const peer = peers.get(agent) ?? peers.get(agent.toLowerCase());
  return peer && targetOf(peer);
}

function targetOf(peer: Peer): Target {
  const u = new URL(peer.url);
  return { label: `peer '${peer.name}'`, baseUrl: u.origin, rpcUrl: new URL(u.pathname || "/", u).toString(), peer };
}

/** A failure to get a conversation going with a peer, told apart by what a probe found. */
export class ConnectionFailure extends Error {
  constructor(
    message: string,
    readonly kind: "unreachable" | "refused",
    readonly hint?: string,
  ) {
    super(message);
    this.name = "ConnectionFailure";
  }
}

/** This node's certificate, named in a refusal so the person can compare it with what the peer trusts. */
export interface OwnCertificate {
  path: string;
  name: string;
  fingerprint: string;
  notAfter: Date;
}

/**
 * Words for what a probe found after a call failed: what is wrong and the next step. `undefined` when the
 * probe got through (the failure was passing, or elsewhere): the original error is then reported as is.
 */
export function explainProbe(probe: Probe, target: Target, us: OwnCertificate): ConnectionFailure | undefined {
  const u = new URL(target.baseUrl);
  const where = whereOf(target);
  const hostPort = `${u.hostname}:${u.port || 443}`;
  const local = isThisMachine(u.hostname);
  switch (probe.kind) {
    case "no-listener":
      return new ConnectionFailure(
        `cannot reach ${where}: connection refused (nothing listens on ${hostPort})`,
        "unreachable",
        local
          ? "is the node on this machine running? check 'systemctl status a2a-node' (or start it: 'a2a-node serve'), and the port it logs as listen=…"
          : `is 'a2a-node serve' running there, on port ${u.port || 443}? (the node's default is 9443; its log says listen=…)`,
      );
    case "unresolved":
      return new ConnectionFailure(
        `cannot resolve the host name '${u.hostname}' of ${where}`,
        "unreachable",
        "use an IP address or a host name this machine can resolve",
      );
    case "no-route":
      return new ConnectionFailure(
        `cannot reach ${where}: ${probe.detail}`,
        "unreachable",
        "check the network path and firewall between the two machines",
      );
    case "timeout": {
      const t = new PeerTimeoutError(probe.step, u.origin, probe.seconds);
      return new ConnectionFailure(
        target.peer ? t.message.replace(u.origin, where) : t.message,
        "unreachable",
        timeoutHint(t),
      );
    }
    case "not-tls":
      return new ConnectionFailure(
        probe.plainHttp
          ? `${where} answers plain HTTP, not TLS: ${hostPort} is not an a2a-node mutual-TLS port`
          : `${where} does not speak TLS${probe.banner ? ` (it said '${probe.banner}')` : ""}: wrong port?`,
        "unreachable",
        probe.plainHttp
          ? "use the port 'a2a-node serve' logs as listen=https://… (9443 by default), not a --plain-http-port or another web server"
          : "use the port 'a2a-node serve' logs as listen=https://… (9443 by default)",
      );
    case "foreign-certificate": {
      const c = probe.certificate;
      return new ConnectionFailure(
        `${where} presented a certificate from outside our fleet: ${probe.reason} (CN ${c.name ?? "?"}, issuer ${c.issuer ?? "?"}, fingerprint ${c.fingerprint}, expires ${c.notAfter})`,
        "refused",
        /expired/.test(probe.reason)
          ? "that node needs a new certificate: on the CA machine 'a2a-node pki issue NAME --out NAME.bundle', then 'a2a-node init-pki --bundle' there"
          : "that machine belongs to another fleet, or its bundle came from another CA: compare the CA fingerprints of 'a2a-node pki show' on both machines",
      );
    }
    case "refused-us": {
      const expired = us.notAfter.getTime() < Date.now();
      return new ConnectionFailure(
        `${where} refused our certificate${probe.alert ? ` (${probe.alert})` : ""}: ${us.path}, CN ${us.name}, fingerprint ${us.fingerprint}, ${expired ? "EXPIRED on" : "expires"} ${us.notAfter.toISOString()}`,
        "refused",
        expired
          ? "our certificate has expired: get a new bundle from the CA machine ('a2a-node pki issue NAME') and install it with 'a2a-node init-pki --bundle'"
          : "the peer must trust the CA that issued ours: compare the CA fingerprint of 'a2a-node pki show' on both machines",
      );
    }
    case "ok":
      return undefined;
  }
}

function whereOf(target: Target): string {
  return target.peer ? `${target.label} at ${target.baseUrl}` : target.baseUrl;
}

/**
 * Why a call to a peer failed, in words a person can act on: a message and the next step. "local" is a
 * problem on this machine (an outside peer's token or CA file), not the peer's.
 */
export function explainFailure(
  err: unknown,
  target: Target,
): { message: string; hint?: string; kind: "unreachable" | "refused" | "remote" | "local" | "timeout" | "other" } {
  const e = err as { code?: string; message?: string; name?: string };
  const where = whereOf(target);
  if (err instanceof ConnectionFailure) return { kind: err.kind, message: err.message, hint: err.hint };
  if (err instanceof PeerTimeoutError) {
    const hint = timeoutHint(err).replace("--agent NAME", `--agent ${target.peer?.name ?? target.baseUrl}`);
    const message = target.peer ? err.message.replace(err.origin, where) : err.message;
    return { kind: err.step === "connect" || err.step === "handshake" ? "unreachable" : "timeout", message, hint };
  }
  const outside = explainOutside(err, target);
  if (outside) return outside;
  if (err instanceof WrongPortError)
    return { kind: "unreachable", message: err.message, hint: err.hint(target.peer?.name) };
  if (err instanceof PeerIdentityError)
    return {
      kind: "refused",
      message: `${where} is not who we expected: ${err.message}`,
      hint: identityHint(err, target),
    };
  if (err instanceof RemoteError)
    return { kind: "remote", message: `${target.label} answered error ${err.code}: ${err.message}` };
  if (err instanceof ProtocolError)
    return {
      kind: "other",
      message: `${where}: ${err.message}`,
      hint: "is that URL an a2a-node (or another A2A agent)?",
    };
  if (e.code === "ECONNREFUSED")
    return {
      kind: "unreachable",
      message: `cannot reach ${where}: connection refused`,
      hint: "is 'a2a-node serve' running there, on that port?",
    };
  if (e.name === "AbortError" || e.name === "TimeoutError")
    return { kind: "other", message: `gave up waiting for ${where}` };
  return { kind: "other", message: `request to ${where} failed: ${e.message ?? String(err)}` };
}

/** The next step for each part of the identity rule that failed (see README "Who a peer is"). */
function identityHint(err: PeerIdentityError, target: Target): string {
  const peer = target.peer;
  const repin = peer ? `'a2a-node peers add ${peer.name} ${peer.url} --pin --replace'` : "";
  switch (err.failed) {
    case "not-member":
      return "that server's certificate is not one our fleet CA issued to a node: compare the CA fingerprints of 'a2a-node pki show' on both machines";
    case "name":
      return peer
        ? `${peer.url} now reaches '${err.actualName ?? "?"}', not '${peer.name}': check where ${peer.name} listens, then 'a2a-node peers add ${peer.name} https://HOST:PORT --pin --replace' (see 'a2a-node peers list')`
        : "check the URL ('a2a-node peers list' shows where each peer listens)";
    case "pin":
      if (!peer) return "check the URL ('a2a-node peers list')";
      return err.certPin
        ? `${peer.name} was pinned by one certificate, which its renewal has replaced: compare the key pin with 'a2a-node pki show' on ${peer.name}, then pin its key (renewals keep it): ${repin}`
        : `${peer.name} now holds another key ('pki renew --rekey' there, or another machine holds a '${peer.name}' certificate): compare the key pin with 'a2a-node pki show' on ${peer.name}, then re-pin: ${repin}`;
  }
}

/** The failures of a session with a peer outside the fleet: its credentials, its CA file, its certificate. */
function explainOutside(
  err: unknown,
  target: Target,
): { message: string; hint?: string; kind: "refused" | "local" | "unreachable" } | undefined {
  const where = whereOf(target);
  const peer = target.peer;
  const readd = (flags: string) =>
    peer
      ? `'a2a-node peers add ${peer.name} ${peer.url} ${flags} --replace'`
      : `'a2a-node peers add NAME URL ${flags}'`;
  if (err instanceof PeerCredentialsError)
    return {
      kind: "local",
      message: `${where}: ${err.message}`,
      hint: `write the ${peer?.auth?.kind === "header" ? "'Name: value' line" : "token"} to ${err.file} (mode 0600), or point the peer at another file with ${readd(peer?.auth?.kind === "header" ? "--header-file FILE" : "--auth bearer --token-file FILE")}`,
    };
  if (err instanceof PeerCaError)
    return {
      kind: "local",
      message: `${where}: ${err.message}`,
      hint: `put the agent's CA certificate (PEM) there, or re-add the peer with ${readd("--ca FILE")}`,
    };
  if (err instanceof PeerAuthRefused) {
    const auth = err.auth;
    const what = auth ? `the ${auth.kind === "bearer" ? "token" : "header"} in ${auth.file}` : undefined;
    if (!what)
      return {
        kind: "refused",
        message: `${where} ${err.message}: it wants credentials, and this peer has none`,
        hint: `add them with ${readd("--auth bearer --token-file FILE")}`,
      };
    return {
      kind: "refused",
      message: `${where} refused ${what} (${err.message})`,
      hint:
        err.status === 403
          ? `the agent knows the credentials but does not allow this call: check the rights its owner gave them`
          : `check that ${auth!.file} holds what the agent expects (it is read at every call: fix the file and try again), or point the peer at another file with ${readd(auth!.kind === "bearer" ? "--auth bearer --token-file FILE" : "--header-file FILE")}`,
    };
  }
  if (peer && isOutsidePeer(peer)) {
    const code = (err as { code?: unknown })?.code;
    if (code === "ECONNREFUSED")
      return {
        kind: "unreachable",
        message: `cannot reach ${where}: connection refused`,
        hint: `is the agent running, and is ${peer.url} its URL? (check it with 'a2a-node peers show ${peer.name}')`,
      };
    if (code === "ENOTFOUND" || code === "EAI_AGAIN")
      return {
        kind: "unreachable",
        message: `cannot resolve the host name '${new URL(peer.url).hostname}' of ${where}`,
        hint: "check the URL, or this machine's DNS",
      };
    if (typeof code === "string" && /CERT|SELF_SIGNED|UNABLE_TO_|ALTNAME|ERR_TLS|ISSUER/.test(code)) {
      const against = peer.trust?.kind === "ca" ? `the CA in ${peer.trust.caFile}` : "this system's CA store";
      return {
        kind: "refused",
        message: `${where} presented a certificate that ${against} does not vouch for (${code})`,
        hint:
          peer.trust?.kind === "ca"
            ? `check that ${peer.trust.caFile} is the CA that issued the agent's certificate, and that the certificate covers ${new URL(peer.url).hostname}`
            : `if the agent uses a private CA, give its certificate: ${readd("--ca FILE")}`,
      };
    }
  }
  return undefined;
}

/** Errors of fetch itself (no HTTP answer) worth a probe: everything but our own refusal and an abort. */
export function isConnectionError(err: unknown): boolean {
  if (
    err instanceof PeerIdentityError ||
    err instanceof RemoteError ||
    err instanceof ProtocolError ||
    err instanceof WrongPortError ||
    err instanceof PeerTimeoutError
  )
    return false;
  if (err instanceof PeerAuthRefused || err instanceof PeerCredentialsError || err instanceof PeerCaError) return false;
  const e = err as { code?: unknown; name?: string };
  if (e?.name === "AbortError" || e?.name === "TimeoutError") return false;
  return typeof e?.code === "string";
}
