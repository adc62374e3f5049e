import { type FetchFn, type PeerBinding, type PeerClient, type PeerProtocol } from "./peer-client";
import { JsonRpcClient } from "./jsonrpc-client";
import { HttpJsonClient } from "./http-json-client";
import { GrpcPeerClient } from "./grpc-client";
import type { SessionOpener } from "./mtls-session";
import type { PeerTimeouts } from "./deadlines";
import { UNTRACED, type CallTracing } from "./call-tracing";

/** The interface of a peer's card this client speaks. */
export interface ChosenInterface {
  binding: PeerBinding;
  protocol: PeerProtocol;
  /** The card's URL for it; absent when the card names none this client speaks. */
  url?: string;
  tenant?: string;
}

/** What every session speaks; gRPC needs an HTTP/2 session of its own (GrpcTransport), which not every peer has. */
const OVER_FETCH: readonly PeerBinding[] = ["JSONRPC", "HTTP+JSON"];
export const ALL_BINDINGS: readonly PeerBinding[] = [...OVER_FETCH, "GRPC"];

/**
 * Spec §8.3.2: the first entry of `supportedInterfaces` (the peer's preference order) whose binding this
 * client speaks (`spoken`), at protocol 1.x. A v0.3 card (no supportedInterfaces) is JSON-RPC 0.3; a card
 * that names nothing usable, or no card, is JSON-RPC 1.0 at the peer's URL.
 */
export function chooseInterface(card: unknown, spoken: readonly PeerBinding[] = ALL_BINDINGS): ChosenInterface {
  const c = card as { supportedInterfaces?: unknown; protocolVersion?: unknown } | undefined;
  if (Array.isArray(c?.supportedInterfaces)) {
    for (const i of c.supportedInterfaces as {
      url?: unknown;
      protocolBinding?: unknown;
      protocolVersion?: unknown;
      tenant?: unknown;
    }[]) {
      if (typeof i?.protocolBinding !== "string" || !spoken.includes(i.protocolBinding as PeerBinding)) continue;
      if (typeof i.protocolVersion !== "string" || !i.protocolVersion.startsWith("1.")) continue;
      return {
        binding: i.protocolBinding as PeerBinding,
        protocol: "1.0",
        url: typeof i.url === "string" ? i.url : undefined,
        tenant: typeof i.tenant === "string" && i.tenant !== "" ? i.tenant : undefined,
      };
    }
    return { binding: "JSONRPC", protocol: "1.0" };
  }
  if (typeof c?.protocolVersion === "string" && c.protocolVersion.startsWith("0.3"))
    return { binding: "JSONRPC", protocol: "0.3" };
  return { binding: "JSONRPC", protocol: "1.0" };
}

/** How a session reaches a peer's gRPC interface: HTTP/2 sessions as this node, bounded by `timeouts`. */
export interface GrpcTransport {
  open: SessionOpener;
  timeouts: PeerTimeouts;
  /** A2A extensions to request on every call. */
  extensions?: string[];
}

/**
 * A client for the interface the peer's card prefers, of those this session speaks (gRPC only with `grpc`).
 * The host comes from where the peer was reached (the peer registry or --agent URL), as for JSON-RPC: a card
 * names the host the peer calls itself, which this machine may not resolve, and the certificate check already
 * ties the connection to the expected peer. Only the path of the card's URL is used, and for gRPC (whose URL
 * is `host:port`) its port, since a gRPC server may listen on a port of its own. `tracing`: each
 * call's span and trace headers (call-tracing.ts).
 */
export function clientForCard(
  card: unknown,
  target: { baseUrl: string; rpcUrl: string },
  fetchFn: FetchFn,
  grpc?: GrpcTransport,
  tracing: CallTracing = UNTRACED,
): PeerClient {
  const chosen = chooseInterface(card, grpc ? ALL_BINDINGS : OVER_FETCH);
  if (chosen.binding === "HTTP+JSON") {
    const path = chosen.url ? pathOf(chosen.url) : "";
    return new HttpJsonClient(new URL(path || "/", target.baseUrl).toString(), fetchFn, chosen.tenant, tracing);
  }
  if (chosen.binding === "GRPC" && grpc) {
    const origin = new URL(target.baseUrl);
    const port = chosen.url ? grpcPortOf(chosen.url) : undefined;
    if (port) origin.port = port;
    return new GrpcPeerClient(origin.origin, grpc.open, grpc.timeouts, chosen.tenant, grpc.extensions);
  }
  return new JsonRpcClient(target.rpcUrl, fetchFn, chosen.protocol, chosen.tenant, tracing);
}

function pathOf(url: string): string {
  try {
    return new URL(url).pathname;
  } catch {
    return "";
  }
}

/** The port of a card's gRPC URL: `host:port` (the spec's form), or a URL with a scheme; "" when it names none. */
export function grpcPortOf(url: string): string {
  try {
    return new URL(url.includes("://") ? url : `https://${url}`).port;
  } catch {
    return "";
  }
}
