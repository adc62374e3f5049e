import { isIP } from "node:net";

/**
 * Which IP addresses a webhook must never target: everything the IANA special-purpose registries mark as not
 * globally reachable, plus the multicast and reserved space around them.
 *
 * Sources:
 * - IANA IPv4 Special-Purpose Address Registry, https://www.iana.org/assignments/iana-ipv4-special-registry
 * - IANA IPv6 Special-Purpose Address Registry, https://www.iana.org/assignments/iana-ipv6-special-registry
 * - IANA IPv4 / IPv6 Address Space registries (multicast 224.0.0.0/4 and ff00::/8, reserved 240.0.0.0/4, and
 *   the fact that only 2000::/3 is allocated as IPv6 global unicast).
 *
 * Deliberately refused although a registry row says "globally reachable": the anycast and identifier rows
 * inside 192.0.0.0/24 (PCP and TURN anycast 192.0.0.9-10) and inside 2001::/23 (PCP/TURN/DNS-SD anycast
 * 2001:1::1-3, AMT 2001:3::/32, AS112 2001:4:112::/48, ORCHIDv2 2001:20::/28, DETs 2001:30::/28): none of
 * them is a web server a caller could own, and refusing the whole parent block keeps the table simple.
 * Left open because they are ordinary public unicast: AS112 192.31.196.0/24 and 192.175.48.0/24, AMT
 * 192.52.193.0/24, AS112 2620:4f:8000::/48.
 *
 * An address the tables do not name is public. A new registry entry needs a new row here.
 */

interface Block {
  prefix: Uint8Array;
  bits: number;
  why: string;
}

// Most specific first where blocks nest, so the reason given is the narrowest one.
const IPV4: Block[] = [
  v4("255.255.255.255/32", "the limited broadcast address (255.255.255.255)"),
  v4("0.0.0.0/8", "an unspecified/'this network' address (0.0.0.0/8)"),
  v4("10.0.0.0/8", "a private address (10.0.0.0/8)"),
  v4("100.64.0.0/10", "a carrier-grade NAT address (100.64.0.0/10)"),
  v4("127.0.0.0/8", "a loopback address"),
  v4("169.254.0.0/16", "a link-local address (this includes cloud metadata services)"),
  v4("172.16.0.0/12", "a private address (172.16.0.0/12)"),
  // DS-Lite 192.0.0.0/29, the dummy 192.0.0.8, PCP/TURN anycast, NAT64 discovery 192.0.0.170-171.
  v4("192.0.0.0/24", "an IETF protocol assignment (192.0.0.0/24)"),
  v4("192.0.2.0/24", "a documentation address (TEST-NET-1, 192.0.2.0/24)"),
  v4("192.88.99.0/24", "a deprecated 6to4 relay anycast address (192.88.99.0/24)"),
  v4("192.168.0.0/16", "a private address (192.168.0.0/16)"),
  v4("198.18.0.0/15", "a benchmarking address (198.18.0.0/15)"),
  v4("198.51.100.0/24", "a documentation address (TEST-NET-2, 198.51.100.0/24)"),
  v4("203.0.113.0/24", "a documentation address (TEST-NET-3, 203.0.113.0/24)"),
  v4("224.0.0.0/4", "a multicast address"),
  v4("240.0.0.0/4", "a reserved address (240.0.0.0/4)"),
];

// Checked after the forms that embed an IPv4 address (see ipv6Reason).
const IPV6: Block[] = [
  v6("64:ff9b:1::/48", "a local-use IPv4/IPv6 translation address (64:ff9b:1::/48)"),
  v6("100::/64", "a discard-only address (100::/64)"),
  v6("100:0:0:1::/64", "a dummy address (100:0:0:1::/64)"),
  v6("2001:db8::/32", "a documentation address (2001:db8::/32)"),
  // Teredo 2001::/32, benchmarking 2001:2::/48, ORCHID, and the anycast rows named above.
  v6("2001::/23", "an IETF protocol assignment (2001::/23)"),
  v6("3fff::/20", "a documentation address (3fff::/20)"),
  v6("5f00::/16", "a segment-routing (SRv6) SID (5f00::/16)"),
  v6("fc00::/7", "a private (unique local, fc00::/7) address"),
  v6("fe80::/10", "a link-local address"),
  v6("fec0::/10", "a site-local address"),
  v6("ff00::/8", "a multicast address"),
];

const GLOBAL_UNICAST = v6("2000::/3", "");

/**
 * Why `ip` (an IPv4 or IPv6 literal, zone allowed) must not be a webhook target, or undefined when it is a
 * public address. IPv6 forms that embed an IPv4 address (mapped ::ffff:a.b.c.d, compatible ::a.b.c.d, NAT64
 * 64:ff9b::/96, 6to4 2002::/16) are judged by that address: ::ffff:127.0.0.1 reaches loopback on a dual-stack
 * host.
 */
export function blockedReason(ip: string): string | undefined {
  const addr = stripZone(ip);
  const kind = isIP(addr);
  if (kind === 4) return ipv4Reason(parseIPv4(addr));
  if (kind === 6) return ipv6Reason(parseIPv6(addr));
  return "not an IP address";
}

export function stripZone(ip: string): string {
  const i = ip.indexOf("%");
  return i === -1 ? ip : ip.slice(0, i);
}

function ipv4Reason(b: Uint8Array): string | undefined {
  return IPV4.find((block) => matches(b, block))?.why;
}

function ipv6Reason(b: Uint8Array): string | undefined {
  const zeros = (from: number, to: number) => b.subarray(from, to).every((x) => x === 0);
  const v4 = (at: number) => ipv4Reason(b.subarray(at, at + 4));
  if (zeros(0, 16)) return "the unspecified address";
  if (zeros(0, 15) && b[15] === 1) return "a loopback address";
  if (zeros(0, 10) && b[10] === 0xff && b[11] === 0xff) return prefixed("an IPv4-mapped", v4(12));
  // Deprecated since RFC 4291 and inside the IETF-reserved ::/8: refused even around a public IPv4 address.
  if (zeros(0, 12)) return prefixed("an IPv4-compatible", v4(12)) ?? "a deprecated IPv4-compatible address (::/96)";
  if (b[0] === 0x00 && b[1] === 0x64 && b[2] === 0xff && b[3] === 0x9b && zeros(4, 12))
    return prefixed("a NAT64", v4(12));
  if (b[0] === 0x20 && b[1] === 0x02) return prefixed("a 6to4", v4(2));
  const why = IPV6.find((block) => matches(b, block))?.why;
  if (why) return why;
  if (!matches(b, GLOBAL_UNICAST)) return "outside the IPv6 global unicast space (2000::/3), reserved by the IETF";
  return undefined;
}

function prefixed(form: string, inner: string | undefined): string | undefined {
  return inner ? `${form} form of ${inner}` : undefined;
}

function matches(addr: Uint8Array, block: Block): boolean {
  if (addr.length !== block.prefix.length) return false;
  const whole = block.bits >> 3;
  for (let i = 0; i < whole; i++) if (addr[i] !== block.prefix[i]) return false;
  const rest = block.bits & 7;
  if (rest === 0) return true;
  const mask = (0xff << (8 - rest)) & 0xff;
  return (addr[whole]! & mask) === (block.prefix[whole]! & mask);
}

function v4(cidr: string, why: string): Block {
  const [ip, bits] = cidr.split("/");
  return { prefix: parseIPv4(ip!), bits: Number(bits), why };
}

function v6(cidr: string, why: string): Block {
  const [ip, bits] = cidr.split("/");
  return { prefix: parseIPv6(ip!), bits: Number(bits), why };
}

function parseIPv4(ip: string): Uint8Array {
  return Uint8Array.from(ip.split(".").map(Number));
}

/** A valid IPv6 literal (isIP said so) to its 16 bytes; handles "::" and a dotted IPv4 tail. */
function parseIPv6(ip: string): Uint8Array {
  let text = ip;
  const tail: number[] = [];
  const dot = text.lastIndexOf(".");
  if (dot !== -1) {
    const colon = text.lastIndexOf(":");
    tail.push(
      ...text
        .slice(colon + 1)
        .split(".")
        .map(Number),
    );
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
