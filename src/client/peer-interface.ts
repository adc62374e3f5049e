import { type FetchFn, type PeerClient, type PeerProtocol } from "./peer-client";
import { JsonRpcClient } from "./jsonrpc-client";
import { HttpJsonClient } from "./http-json-client";
import { UNTRACED, type CallTracing } from "./call-tracing";

/** The interface of a peer's card this client speaks. */
export interface ChosenInterface {
  binding: "JSONRPC" | "HTTP+JSON";
  protocol: PeerProtocol;
  /** The card's URL for it; absent when the card names none this client speaks. */
  url?: string;
  tenant?: string;
}

const SPOKEN = new Set(["JSONRPC", "HTTP+JSON"]);

/**
 * Spec §8.3.2: the first entry of `supportedInterfaces` (the peer's preference order) whose binding this
 * client speaks, at protocol 1.x. A v0.3 card (no supportedInterfaces) is JSON-RPC 0.3; a card that names
 * nothing usable, or no card, is JSON-RPC 1.0 at the peer's URL.
 */
export function chooseInterface(card: unknown): ChosenInterface {
  const c = card as { supportedInterfaces?: unknown; protocolVersion?: unknown } | undefined;
  if (Array.isArray(c?.supportedInterfaces)) {
    for (const i of c.supportedInterfaces as {
      url?: unknown;
      protocolBinding?: unknown;
      protocolVersion?: unknown;
      tenant?: unknown;
    }[]) {
      if (typeof i?.protocolBinding !== "string" || !SPOKEN.has(i.protocolBinding)) continue;
      if (typeof i.protocolVersion !== "string" || !i.protocolVersion.startsWith("1.")) continue;
      return {
        binding: i.protocolBinding as ChosenInterface["binding"],
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

/**
 * A client for the interface the peer's card prefers. The host comes from where the peer was reached (the
 * peer registry or --agent URL), as for JSON-RPC: a card names the host the peer calls itself, which this
 * machine may not resolve, and the certificate check already ties the connection to the expected peer.
 * Only the path of the card's URL is used. `tracing`: each call's span and trace headers (call-tracing.ts).
 */
export function clientForCard(
  card: unknown,
  target: { baseUrl: string; rpcUrl: string },
  fetchFn: FetchFn,
  tracing: CallTracing = UNTRACED,
): PeerClient {
  const chosen = chooseInterface(card);
  if (chosen.binding === "HTTP+JSON") {
    const path = chosen.url ? pathOf(chosen.url) : "";
    return new HttpJsonClient(new URL(path || "/", target.baseUrl).toString(), fetchFn, chosen.tenant, tracing);
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
