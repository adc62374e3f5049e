import { isIP } from "node:net";
import { pkiErrors } from "./errors";

// A node name doubles as a DNS label (it is the first SAN of the node's certificate and peers may dial
// it), so it follows the DNS label rule: 1-63 letters, digits and inner dashes.
const LABEL = /^[a-z0-9]([a-z0-9-]*[a-z0-9])?$/;
const MAX_LABEL = 63;
const MAX_DNS_NAME = 253;

/**
 * Names no node may take, because the node gives them a meaning of its own, each with the reason a refusal
 * gives. A certificate bearing one would borrow that meaning: a node named "local" used to share tasks, both
 * ways, with every process on the machine that used the plain-HTTP port. (A Map, so that "constructor" and
 * the other names an object inherits are not taken for reserved ones.)
 */
export const RESERVED_NODE_NAMES: ReadonlyMap<string, string> = new Map([
  ["local", "it stands for the callers of a node's plain-HTTP loopback listener (any process on that machine)"],
  ["localhost", "a node name is also a host name peers dial, and localhost always means the dialling machine itself"],
]);

/**
 * Checks a node name and returns its canonical (lowercase) form. Names compare case-insensitively in DNS,
 * so storing one spelling keeps "Alice" and "alice" from becoming two identities.
 */
export function normalizeNodeName(name: string): string {
  if (name.length < 1 || name.length > MAX_LABEL) throw pkiErrors.badName(name, `must be 1 to ${MAX_LABEL} characters`);
  const lower = name.toLowerCase();
  if (!LABEL.test(lower))
    throw pkiErrors.badName(name, "only letters, digits and dashes, not starting or ending with a dash");
  const reserved = RESERVED_NODE_NAMES.get(lower);
  if (reserved) throw pkiErrors.reservedName(lower, reserved);
  return lower;
}

/**
 * Why `name`, read from a peer's certificate, is not a node name exactly as this PKI issues one; undefined
 * when it is. Nothing is folded or trimmed: "Alpha", "alpha\0", or "\u212Ailo" (a Kelvin sign, which
 * lowercases to "k") is another certificate's name, never a spelling of "alpha" or "kilo".
 */
export function nodeNameProblem(name: string): string | undefined {
  try {
    checkIssuedNodeName(name);
    return undefined;
  } catch (err) {
    return (err as Error).message;
  }
}

/** Throws BAD_NAME or RESERVED_NAME unless `name` is, unchanged, a node name this PKI would issue. */
export function checkIssuedNodeName(name: string): string {
  if (normalizeNodeName(name) !== name) throw pkiErrors.badName(name, "a node name is issued in lower case");
  return name;
}

/** A subject alternative name: a DNS name or an IP literal, in canonical form. */
export interface San {
  type: "dns" | "ip";
  value: string;
}

/**
 * Parses one SAN. IPs are recognised first (IPv6 is canonicalised, so "::0001" and "::1" are the same
 * entry); anything else must be a DNS name, optionally with a leading "*." wildcard label.
 */
export function parseSan(input: string): San {
  // A zone ("fe80::1%eth0") names a local interface; it cannot go in a certificate. Some runtimes'
  // isIP() accept it, so refuse it first.
  if (input.includes("%")) throw pkiErrors.badSan(input, "an IPv6 zone (%...) cannot go in a certificate");
  const ipVersion = isIP(input);
  if (ipVersion === 4) return { type: "ip", value: input };
  if (ipVersion === 6) return { type: "ip", value: canonicalIpv6(input) };
  if (input.startsWith("[") && input.endsWith("]"))
    throw pkiErrors.badSan(input, "write an IPv6 address without brackets");
  const name = input.toLowerCase();
  if (name.length < 1 || name.length > MAX_DNS_NAME)
    throw pkiErrors.badSan(input, `a DNS name has 1 to ${MAX_DNS_NAME} characters`);
  const labels = name.split(".");
  const first = labels[0] === "*" && labels.length > 1 ? 1 : 0;
  for (const label of labels.slice(first)) {
    if (label.length > MAX_LABEL || !LABEL.test(label)) throw pkiErrors.badSan(input);
  }
  // WHATWG URLs read an all-digit last label as IPv4 ("10.1" is 10.0.0.1), so such a "name" is ambiguous.
  if (/^[0-9]+$/.test(labels[labels.length - 1])) throw pkiErrors.badSan(input);
  return { type: "dns", value: name };
}

function canonicalIpv6(input: string): string {
  try {
    // The URL parser prints IPv6 in RFC 5952 form: lowercase, zeros compressed.
    return new URL(`http://[${input}]/`).hostname.slice(1, -1);
  } catch {
    throw pkiErrors.badSan(input);
  }
}

/** Parses and de-duplicates SANs, keeping the first occurrence's position. */
export function normalizeSans(inputs: string[]): San[] {
  const seen = new Set<string>();
  const out: San[] = [];
  for (const input of inputs) {
    const san = parseSan(input);
    const key = `${san.type}:${san.value}`;
    if (seen.has(key)) continue;
    seen.add(key);
    out.push(san);
  }
  return out;
}

/** True when `input` is a usable SAN; for optional extras such as the machine's hostname. */
export function isValidSan(input: string): boolean {
  try {
    parseSan(input);
    return true;
  } catch {
    return false;
  }
}

// A CA name is free text for people, but kept to characters that need no escaping in a distinguished name.
const CA_NAME = /^[A-Za-z0-9][A-Za-z0-9 ._()@:/-]{0,63}$/;

export function checkCaName(name: string): string {
  if (!CA_NAME.test(name))
    throw pkiErrors.badName(name, "a CA name has 1 to 64 letters, digits, spaces and . _ ( ) @ : / -");
  return name;
}

/** Longest validity accepted, for CA and leaves alike. */
export const MAX_DAYS = 36500;

/** Validity in whole days; `what` says which ("certificate", "CA") in the error. */
export function checkDays(days: number, what: string): number {
  if (!Number.isInteger(days) || days < 1 || days > MAX_DAYS) throw pkiErrors.badDays(what, days, MAX_DAYS);
  return days;
}

// A SPIFFE trust domain: lower-case letters, digits, dots, dashes (and underscores, which SPIFFE allows).
const TRUST_DOMAIN = /^[a-z0-9]([a-z0-9._-]{0,253}[a-z0-9])?$/;

/** Throws BAD_NAME unless `domain` is a SPIFFE trust domain such as "fleet.example". */
export function checkTrustDomain(domain: string): string {
  if (!TRUST_DOMAIN.test(domain) || domain.includes(".."))
    throw pkiErrors.badName(
      domain,
      "a SPIFFE trust domain has lower-case letters, digits, dots, dashes and underscores, such as fleet.example",
    );
  return domain;
}
