import { isIPv4, isIPv6 } from "node:net";

/**
 * The source a connection is counted against, for every per-source limit (connections, handshakes, refusals,
 * failed enrollments): an IPv4 address as it is, an IPv6 address by its /64. One IPv6 host is routinely given a
 * whole /64 (SLAAC, privacy addresses) and can pick any of its 2^64 addresses for each connection, so counting
 * exact IPv6 addresses would limit nobody. An IPv4-mapped IPv6 address ("::ffff:10.0.0.7", what a dual-stack
 * listener reports for an IPv4 client) is its IPv4 address.
 *
 * @example
 *   sourceOf("10.0.0.7")                 // "10.0.0.7"
 *   sourceOf("::ffff:10.0.0.7")          // "10.0.0.7"
 *   sourceOf("2001:db8:1:2:aaaa::1")     // "2001:db8:1:2::/64"
 */
export function sourceOf(remote: string | undefined): string {
  if (remote === undefined || remote === "") return "unknown";
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(remote);
  if (mapped) return mapped[1];
  if (isIPv4(remote)) return remote;
  // A zone (fe80::1%eth0) names the interface, not the host: a link-local /64 is per interface anyway.
  const bare = remote.split("%")[0];
  if (!isIPv6(bare)) return remote;
  const groups = expandIPv6(bare);
  return `${groups
    .slice(0, 4)
    .map((g) => g.toString(16))
    .join(":")}::/64`;
}

/** The eight 16-bit groups of an IPv6 address ("::" filled in, a dotted IPv4 tail turned into two groups). */
function expandIPv6(address: string): number[] {
  let text = address;
  const v4 = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (v4) {
    const [a, b, c, d] = v4.slice(1).map(Number);
    text = `${text.slice(0, v4.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head, tail] = text.includes("::") ? text.split("::") : [text, undefined];
  const left = head ? head.split(":") : [];
  const right = tail === undefined ? [] : tail ? tail.split(":") : [];
  const missing = 8 - left.length - right.length;
  return [...left, ...Array<string>(tail === undefined ? 0 : missing).fill("0"), ...right].map((g) =>
    Number.parseInt(g, 16),
  );
}
