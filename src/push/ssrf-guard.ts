import { lookup as dnsLookup } from "node:dns/promises";
import { isIP } from "node:net";
import { A2AError } from "../protocol/errors";

/** Resolves a host name to every address it has (node:dns/promises lookup with all: true). */
export type LookupAll = (host: string) => Promise<{ address: string; family: number }[]>;

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
}

/**
 * Refuses push-notification URLs that would make this node a proxy into its own network (SSRF): a caller that
 * registers http://169.254.169.254/ or http://localhost:9000/admin would otherwise have the node POST there
 * and, through retries and timing, learn what answers. Only http(s) is allowed, and every address the host
 * resolves to must be a public one, unless the host is explicitly allowed or is a fleet peer (peers are often
 * on a LAN, which is exactly the private range refused for everyone else).
 *
 * Call check() when a config is created and again before each delivery: a name that resolved to a public
 * address at creation can be re-pointed at 127.0.0.1 later (DNS rebinding). This narrows but cannot close the
 * window between our lookup and fetch's own; the dispatcher also refuses redirects, which would bypass it.
 */
export class WebhookGuard {
  private readonly allow: Set<string>;
  private readonly fleet: () => Set<string>;
  private readonly lookup: LookupAll;

  constructor(options: WebhookGuardOptions = {}) {
    this.allow = new Set([...(options.allowlist ?? [])].map(normalizeHostEntry));
    this.fleet = options.fleetHosts ?? (() => new Set());
    this.lookup = options.lookup ?? ((host) => dnsLookup(host, { all: true, verbatim: true }));
  }

  /** Resolves if the node may POST to `url`; throws A2AError.invalidParams saying why not. */
  async check(url: string): Promise<void> {
    let u: URL;
    try {
      u = new URL(url);
    } catch {
      throw refuse(`'${url}' is not a valid URL`);
    }
    if (u.protocol !== "http:" && u.protocol !== "https:") throw refuse(`scheme '${u.protocol.slice(0, -1)}' is not allowed; use http or https`);
    if (u.username || u.password) throw refuse("credentials in the URL are not allowed; register them as authentication instead");
    // The WHATWG parser has already canonicalized odd IPv4 spellings (2130706433, 0x7f.1 → 127.0.0.1) and
    // bracketed IPv6; hostname keeps the brackets, which is the form allow-list entries are normalized to.
    const hostname = u.hostname.toLowerCase();
    const port = u.port || (u.protocol === "https:" ? "443" : "80");
    if (this.isAllowed(hostname, port)) return;

    const bare = hostname.startsWith("[") ? hostname.slice(1, -1) : hostname;
    let addresses: string[];
    if (isIP(stripZone(bare))) {
      addresses = [bare];
    } else {
      try {
        addresses = (await this.lookup(bare)).map((a) => a.address);
      } catch (err) {
        throw refuse(`host '${bare}' does not resolve (${(err as { code?: string }).code ?? String(err)})`);
      }
      if (addresses.length === 0) throw refuse(`host '${bare}' does not resolve`);
    }
    // Every address: fetch may connect to any of them.
    for (const address of addresses) {
      const why = blockedReason(address);
      if (why) {
        const via = address === bare ? "" : ` resolves to ${address}, which`;
        throw refuse(`host '${bare}'${via} is ${why}; add it to the webhook allowlist to permit it`);
      }
    }
  }

  private isAllowed(hostname: string, port: string): boolean {
    const withPort = `${hostname}:${port}`;
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

function refuse(reason: string): A2AError {
  return A2AError.invalidParams(`push notification URL refused: ${reason}`);
}

/** "Example.COM", "::1", "[::1]:8080", "10.0.0.5:9000" → lower case, IPv6 bracketed, port kept if given. */
export function normalizeHostEntry(entry: string): string {
  const e = entry.trim().toLowerCase();
  if (!e.startsWith("[") && isIP(stripZone(e)) === 6) return `[${e}]`;
  return e;
}

function stripZone(ip: string): string {
  const i = ip.indexOf("%");
  return i === -1 ? ip : ip.slice(0, i);
}

/**
 * Why `ip` (an IPv4 or IPv6 literal) must not be a webhook target, or undefined when it is a public address.
 * IPv6 forms that embed an IPv4 address (mapped ::ffff:a.b.c.d, compatible ::a.b.c.d, NAT64 64:ff9b::/96,
 * 6to4 2002::/16) are judged by that address: ::ffff:127.0.0.1 reaches loopback on a dual-stack host.
 */
export function blockedReason(ip: string): string | undefined {
  const addr = stripZone(ip);
  const kind = isIP(addr);
  if (kind === 4) return ipv4Reason(addr.split(".").map(Number));
  if (kind === 6) return ipv6Reason(parseIPv6(addr));
  return "not an IP address";
}

function ipv4Reason(b: number[]): string | undefined {
  const [a, c] = [b[0]!, b[1]!];
  if (a === 0) return "an unspecified/'this network' address (0.0.0.0/8)";
  if (a === 127) return "a loopback address";
  if (a === 10 || (a === 172 && c >= 16 && c <= 31) || (a === 192 && c === 168)) return "a private address";
  if (a === 169 && c === 254) return "a link-local address (this includes cloud metadata services)";
  if (a === 100 && c >= 64 && c <= 127) return "a carrier-grade NAT address (100.64.0.0/10)";
  if (a >= 224 && a <= 239) return "a multicast address";
  if (a >= 240) return "a reserved or broadcast address";
  return undefined;
}

function ipv6Reason(b: Uint8Array): string | undefined {
  const zeros = (from: number, to: number) => b.subarray(from, to).every((x) => x === 0);
  const v4 = (at: number) => ipv4Reason([...b.subarray(at, at + 4)]);
  if (zeros(0, 16)) return "the unspecified address";
  if (zeros(0, 15) && b[15] === 1) return "a loopback address";
  if (zeros(0, 10) && b[10] === 0xff && b[11] === 0xff) return prefixed("an IPv4-mapped", v4(12));
  if (zeros(0, 12)) return prefixed("an IPv4-compatible", v4(12));
  if (b[0] === 0x00 && b[1] === 0x64 && b[2] === 0xff && b[3] === 0x9b && zeros(4, 12)) return prefixed("a NAT64", v4(12));
  if (b[0] === 0x20 && b[1] === 0x02) return prefixed("a 6to4", v4(2));
  if ((b[0]! & 0xfe) === 0xfc) return "a private (unique local, fc00::/7) address";
  if (b[0] === 0xfe && (b[1]! & 0xc0) === 0x80) return "a link-local address";
  if (b[0] === 0xfe && (b[1]! & 0xc0) === 0xc0) return "a site-local address";
  if (b[0] === 0xff) return "a multicast address";
  return undefined;
}

function prefixed(form: string, inner: string | undefined): string | undefined {
  return inner ? `${form} form of ${inner}` : undefined;
}

/** A valid IPv6 literal (isIP said so) to its 16 bytes; handles "::" and a dotted IPv4 tail. */
function parseIPv6(ip: string): Uint8Array {
  let text = ip;
  const tail: number[] = [];
  const dot = text.lastIndexOf(".");
  if (dot !== -1) {
    const colon = text.lastIndexOf(":");
    tail.push(...text.slice(colon + 1).split(".").map(Number));
    text = `${text.slice(0, colon + 1)}0:0`; // placeholder groups, overwritten below
  }
  const [head, rest] = text.includes("::") ? text.split("::") : [text, undefined];
  const left = head ? head.split(":") : [];
  const right = rest ? rest.split(":") : [];
  const groups = rest === undefined ? left : [...left, ...Array(8 - left.length - right.length).fill("0"), ...right];
  const out = new Uint8Array(16);
  groups.forEach((g, i) => {
    const v = parseInt(g, 16);
    out[i * 2] = v >> 8;
    out[i * 2 + 1] = v & 0xff;
  });
  if (tail.length === 4) out.set(tail, 12);
  return out;
}
