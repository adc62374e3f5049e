import { lookup as dnsLookup } from "node:dns/promises";
import { isIP } from "node:net";
import { A2AError } from "../protocol/errors";
import { blockedReason, stripZone } from "./special-addresses";

/** Resolves a host name to every address it has (node:dns/promises lookup with all: true). */
export type LookupAll = (host: string) => Promise<{ address: string; family: number }[]>;

/** Default time a DNS lookup gets before the webhook URL is refused. */
export const DEFAULT_LOOKUP_TIMEOUT_MS = 5000;

export interface WebhookGuardOptions {
  /**
   * Hosts a webhook may target even on a refused network: "host" (any port) or "host:port". IPv6 may be written
   * bare ("::1") or bracketed ("[::1]:8080"). Host names match literally, case-insensitively.
   */
  allowlist?: Iterable<string>;
  /** Hosts of the fleet's peers (same forms as the allowlist), asked on every check since peers come and go. */
  fleetHosts?: () => Set<string>;
  /** DNS resolution; injectable for tests. */
  lookup?: LookupAll;
  /** A lookup that has not answered after this long refuses the URL (default 5000 ms). */
  lookupTimeoutMs?: number;
}

/** A webhook URL that passed the guard, with the addresses its host resolved to when it did. */
export interface WebhookTarget {
  url: URL;
  /**
   * Every address of the host, in the resolver's order, each one checked (unless the host is allowed). The
   * request must go to one of these and never to a fresh lookup of the name: see fetchPinned.
   */
  addresses: string[];
}

/**
 * Refuses push-notification URLs that would make this node a proxy into its own network (SSRF): a caller that
 * registers http://169.254.169.254/ or http://localhost:9000/admin would otherwise have the node POST there
 * and, through retries and timing, learn what answers. Only http(s) is allowed, and every address the host
 * resolves to must be a public one (see special-addresses.ts), unless the host is explicitly allowed or is a
 * fleet peer (peers are often on a LAN, which is exactly the private range refused for everyone else).
 *
 * check() is for registration: it says yes or no. resolve() is for delivery: it resolves the name once,
 * checks every address, and returns them, so that the connection goes to an address that was checked. A name
 * that resolved to a public address a moment ago can answer 127.0.0.1 to the next lookup (DNS rebinding);
 * connecting to the checked address leaves no second lookup to rebind. The dispatcher also refuses redirects,
 * which would bypass the guard.
 */
export class WebhookGuard {
  private readonly allow: Set<string>;
  private readonly fleet: () => Set<string>;
  private readonly lookup: LookupAll;
  private readonly lookupTimeoutMs: number;

  constructor(options: WebhookGuardOptions = {}) {
    this.allow = new Set([...(options.allowlist ?? [])].map(normalizeHostEntry));
    this.fleet = options.fleetHosts ?? (() => new Set());
    this.lookup = options.lookup ?? ((host) => dnsLookup(host, { all: true, verbatim: true }));
    this.lookupTimeoutMs = options.lookupTimeoutMs ?? DEFAULT_LOOKUP_TIMEOUT_MS;
  }

  /**
   * Resolves if the node may POST to `url`; throws A2AError.invalidParams saying why not. An allowed host is not looked
   * up.
   */
  async check(url: string): Promise<void> {
    const u = parseWebhookUrl(url);
    if (this.isAllowed(u)) return;
    await this.addressesOf(u, true);
  }

  /** Like check(), and returns the checked addresses to connect to (an allowed host is looked up, unchecked). */
  async resolve(url: string): Promise<WebhookTarget> {
    const u = parseWebhookUrl(url);
    return { url: u, addresses: await this.addressesOf(u, !this.isAllowed(u)) };
  }

  private async addressesOf(u: URL, check: boolean): Promise<string[]> {
    // hostname keeps an IPv6 literal's brackets.
    const bare = u.hostname.startsWith("[") ? u.hostname.slice(1, -1) : u.hostname;
    const addresses = isIP(stripZone(bare)) ? [bare] : await this.lookupFast(bare);
    if (!check) return addresses;
    // Every address: the connection may go to any of them.
    for (const address of addresses) {
      const why = blockedReason(address);
      if (why) {
        const via = address === bare ? "" : ` resolves to ${address}, which`;
        throw refuse(`host '${bare}'${via} is ${why}; add it to the webhook allowlist to permit it`);
      }
    }
    return addresses;
  }

  /**
   * The system resolver can take tens of seconds to give up on a name whose DNS server does not answer; a
   * registration (often inside SendMessage) or a delivery slot must not wait that long.
   */
  private async lookupFast(host: string): Promise<string[]> {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(refuse(`host '${host}' did not resolve within ${this.lookupTimeoutMs} ms (DNS timeout)`)),
        this.lookupTimeoutMs,
      );
    });
    let found: { address: string }[];
    try {
      found = await Promise.race([this.lookup(host), timeout]);
    } catch (err) {
      if (err instanceof A2AError) throw err;
      throw refuse(`host '${host}' does not resolve (${(err as { code?: string }).code ?? String(err)})`);
    } finally {
      clearTimeout(timer);
    }
    if (found.length === 0) throw refuse(`host '${host}' does not resolve`);
    return found.map((a) => a.address);
  }

  private isAllowed(u: URL): boolean {
    // The WHATWG parser has already canonicalized odd IPv4 spellings (2130706433, 0x7f.1 → 127.0.0.1) and
    // bracketed IPv6, which is the form allow-list entries are normalized to.
    const hostname = u.hostname.toLowerCase();
    const withPort = `${hostname}:${u.port || (u.protocol === "https:" ? "443" : "80")}`;
    if (this.allow.has(hostname) || this.allow.has(withPort)) return true;
    const fleet = this.fleet();
    if (fleet.size === 0) return false;
    for (const entry of fleet) {
      const e = normalizeHostEntry(entry);
      if (e === hostname || e === withPort) return true;
    }
    return false;
  }
}

function parseWebhookUrl(url: string): URL {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw refuse(`'${url}' is not a valid URL`);
  }
  if (u.protocol !== "http:" && u.protocol !== "https:")
    throw refuse(`scheme '${u.protocol.slice(0, -1)}' is not allowed; use http or https`);
  if (u.username || u.password)
    throw refuse("credentials in the URL are not allowed; register them as authentication instead");
  return u;
}

function refuse(reason: string): A2AError {
  return A2AError.invalidParams(`push notification URL refused: ${reason}`);
}

/** "Example.COM", "::1", "[::1]:8080", "10.0.0.5:9000" → lower case, IPv6 bracketed, port kept if given. */
export function normalizeHostEntry(entry: string): string {
  const e = entry.trim().toLowerCase();
  if (!e.startsWith("[") && isIP(stripZone(e)) === 6) return `[${e}]`;
  return e;
}
