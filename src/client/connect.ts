import type { Peer, PeerRegistry } from "../peers/peer-registry";
import { PeerIdentityError } from "./mtls-fetch";
import { ProtocolError, RemoteError } from "./a2a-client";

/** Where a command is sending: a registered peer, or a URL given directly. */
export interface Target {
  label: string;
  baseUrl: string;
  rpcUrl: string;
  peer?: Peer;
}

/** `--agent NAME|URL`: a URL is used as is; anything else must be a registered peer. */
export function resolveTarget(agent: string, peers: PeerRegistry): Target | undefined {
  if (agent.includes("://")) {
    const u = new URL(agent);
    const rpcUrl = u.pathname === "/" || u.pathname === "" ? new URL("/", u).toString() : u.toString();
    return { label: agent, baseUrl: u.origin, rpcUrl };
  }
  const peer = peers.get(agent);
  if (!peer) return undefined;
  const u = new URL(peer.url);
  return { label: `peer '${peer.name}'`, baseUrl: u.origin, rpcUrl: new URL(u.pathname || "/", u).toString(), peer };
}

/** Why a call to a peer failed, in words a person can act on: a message and the next step. */
export function explainFailure(err: unknown, target: Target): { message: string; hint?: string; kind: "unreachable" | "refused" | "remote" | "other" } {
  const e = err as { code?: string; message?: string; name?: string };
  const where = target.peer ? `${target.label} at ${target.baseUrl}` : target.baseUrl;
  if (err instanceof PeerIdentityError)
    return {
      kind: "refused",
      message: `${where} is not who we expected: ${err.message}`,
      hint: target.peer ? `check the URL with 'a2a-node peers list', or re-add it with 'a2a-node peers add ${target.peer.name} URL --replace'` : undefined,
    };
  if (err instanceof RemoteError) return { kind: "remote", message: `${target.label} answered error ${err.code}: ${err.message}` };
  if (err instanceof ProtocolError) return { kind: "other", message: `${where}: ${err.message}`, hint: "is that URL an a2a-node (or another A2A agent)?" };
  switch (e.code) {
    case "ECONNREFUSED":
      return { kind: "unreachable", message: `cannot reach ${where}: connection refused`, hint: "is 'a2a-node serve' running there, on that port?" };
    case "ENOTFOUND":
    case "EAI_AGAIN":
      return { kind: "unreachable", message: `cannot resolve the host of ${where}`, hint: "use an IP address or a host name this machine can resolve" };
    case "ETIMEDOUT":
    case "ConnectionRefused":
      return { kind: "unreachable", message: `cannot reach ${where}: ${e.message}`, hint: "check the network path and firewall" };
    case "EPROTO":
    case "ECONNRESET":
    case "ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED":
    case "ERR_SSL_TLSV1_ALERT_UNKNOWN_CA":
      return {
        kind: "refused",
        message: `${target.label} refused our certificate (TLS handshake failed: ${e.code})`,
        hint: "was this node's certificate issued by the same fleet CA? compare 'a2a-node pki show' on both machines",
      };
    case "SELF_SIGNED_CERT_IN_CHAIN":
    case "DEPTH_ZERO_SELF_SIGNED_CERT":
    case "UNABLE_TO_VERIFY_LEAF_SIGNATURE":
    case "UNABLE_TO_GET_ISSUER_CERT_LOCALLY":
    case "CERT_SIGNATURE_FAILURE":
      return {
        kind: "refused",
        message: `${where} presented a certificate our fleet CA did not issue (${e.code})`,
        hint: "that machine belongs to another fleet, or its bundle came from another CA",
      };
    case "CERT_HAS_EXPIRED":
      return { kind: "refused", message: `${where} presented an expired certificate`, hint: "issue it a new bundle with 'a2a-node pki issue'" };
  }
  if (e.name === "AbortError" || e.name === "TimeoutError") return { kind: "other", message: `gave up waiting for ${where}` };
  return { kind: "other", message: `request to ${where} failed: ${e.message ?? String(err)}` };
}
