/**
 * The fuzzer stays on loopback: the node looks up a webhook URL's host when one is registered, and posts to
 * it, so no body may reach the node carrying a URL whose host is a name (which a mutation can make of
 * "127.0.0.1": one flipped bit gives "1w7.0.0.1", a DNS query leaving the machine). Every string of a body
 * that parses, as the node would parse it, is checked; only IP literals the guard refuses without a lookup,
 * and the sink on 127.0.0.1, may appear as hosts.
 */
import { render, SAMPLE_RUNTIME } from "./tokens";

const SAFE_HOSTS = new Set(["127.0.0.1", "[::1]", "10.0.0.1", "169.254.169.254", "0.0.0.0", "192.168.0.1"]);

/** True if `body`, once the node parses it, holds a URL that could make the node look up or reach a name. */
export function reachesOffHost(body: Uint8Array): boolean {
  if (body.length === 0 || body.indexOf(0x3a) === -1) return false; // no ':' at all: no URL
  let value: unknown;
  try {
    value = JSON.parse(new TextDecoder().decode(render(body, SAMPLE_RUNTIME)));
  } catch {
    return false; // the node cannot parse it either
  }
  try {
    return someString(value, (s) => {
      if (!s.includes(":") || !URL.canParse(s)) return false;
      const host = new URL(s).hostname;
      return host !== "" && !SAFE_HOSTS.has(host);
    });
  } catch {
    return false; // nested past the stack: far deeper than the node's limit, refused before it is parsed
  }
}

function someString(v: unknown, test: (s: string) => boolean): boolean {
  if (typeof v === "string") return test(v);
  if (typeof v !== "object" || v === null) return false;
  for (const k in v) if (test(k) || someString((v as Record<string, unknown>)[k], test)) return true;
  return false;
}
