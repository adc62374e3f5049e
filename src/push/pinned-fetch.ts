import { isIP } from "node:net";
import type { WebhookTarget } from "./ssrf-guard";

export type PushFetch = (url: string, init: RequestInit) => Promise<Response>;

/** Errors that mean no connection was made, so nothing was sent and the next address may be tried. */
const NOT_CONNECTED = new Set(["ECONNREFUSED", "EHOSTUNREACH", "ENETUNREACH", "EADDRNOTAVAIL", "ConnectionRefused"]);

/**
 * Sends `init` to `target.url` over a connection to one of `target.addresses`, the addresses the guard
 * checked, instead of letting fetch look the name up again (which a rebinding DNS server would answer with
 * 127.0.0.1). The request still names the host: the URL is rewritten to the address, the Host header carries
 * the original host, and for https the TLS server name (SNI) is the host name, against which Bun verifies the
 * certificate. Addresses are tried in order while connections are refused or unreachable, i.e. while nothing
 * has been sent; any other failure is final for this attempt.
 *
 * @example
 *   const target = await guard.resolve("https://hooks.example.com/a2a");
 *   const res = await fetchPinned(target, { method: "POST", body });
 */
export async function fetchPinned(
  target: WebhookTarget,
  init: RequestInit,
  fetchFn: PushFetch = (u, i) => fetch(u, i),
): Promise<Response> {
  const missed: string[] = [];
  for (const address of target.addresses) {
    const [url, pinned] = pinnedRequest(target.url, address, init);
    try {
      return await fetchFn(url, pinned);
    } catch (err) {
      const code = (err as { code?: string }).code;
      if (code && NOT_CONNECTED.has(code)) {
        missed.push(`${address} (${code})`);
        continue;
      }
      throw atAddress(err, address);
    }
  }
  const e = new Error(`could not connect to ${target.url.host} at ${missed.join(", ")}`);
  e.name = "ConnectError";
  throw e;
}

/** The URL and init that reach `address` while naming `url`'s host. Exported for tests. */
export function pinnedRequest(url: URL, address: string, init: RequestInit): [string, RequestInit] {
  const bare = url.hostname.startsWith("[") ? url.hostname.slice(1, -1) : url.hostname;
  // An IP-literal URL already names the address that was checked (a bare IP needs neither Host nor SNI).
  if (isIP(bare)) return [url.href, init];
  const to = new URL(url.href);
  const host = isIP(address) === 6 ? `[${address}]` : address;
  to.hostname = host;
  // The hostname setter ignores what it cannot parse (an IPv6 zone id, say) and would leave the name in place,
  // i.e. fetch would look it up again: refuse rather than send anywhere unchecked.
  if (!isIP(to.hostname.replace(/^\[|\]$/g, "")))
    throw new Error(`cannot connect to address '${address}' (not expressible in a URL)`);
  const headers = new Headers(init.headers);
  headers.set("Host", url.host);
  const pinned: RequestInit & { tls?: Record<string, unknown> } = { ...init, headers };
  if (url.protocol === "https:") pinned.tls = { ...(init as { tls?: Record<string, unknown> }).tls, serverName: bare };
  return [to.href, pinned];
}

function atAddress(err: unknown, address: string): Error {
  if (!(err instanceof Error)) return new Error(`${String(err)} (at ${address})`);
  const e = new Error(`${err.message} (at ${address})`);
  e.name = err.name;
  return e;
}
