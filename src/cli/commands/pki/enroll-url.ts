import { hostname } from "node:os";
import { isIP } from "node:net";
import { machineAddresses } from "../../../local-addresses";
import type { RuntimeState } from "../../../runtime-state";

/** The enrollment URL a joining machine is told, and how sure we are of its host. */
export interface EnrollUrl {
  url: string;
  /** What the host was taken from, said to the person ("the address the enrollment port listens on", ...). */
  hostFrom: string;
  /** The port listens on loopback only: no other machine can reach it. */
  loopbackOnly: boolean;
}

/** What is known of where this home's node serves enrollment: from its running node, or from its settings. */
export interface EnrollFacts {
  /** The running node's state, if it runs. */
  running?: RuntimeState;
  /** From the config file and environment, for a node not running now. */
  config: { host: string; enrollPort?: number; advertiseUrl?: string };
  /** The SANs of this node's certificate, and its name. */
  sans: string[];
  name: string;
}

/**
 * The enrollment URL: its port from the running node's enrollment listener (else enroll_port), its host the
 * one a joining machine is likeliest to reach: the address the port is bound to when that is one address, else
 * the host of an advertise_url that was set, else the first name the certificate was issued for beyond the ones
 * every node gets (its name, localhost, 127.0.0.1, the host name: those given with --san), else the host name.
 * The joining machine checks the CA's fingerprint before it sends anything, so a wrong guess fails safely.
 * Undefined when no enrollment port runs or is configured.
 */
export function enrollmentUrl(f: EnrollFacts): EnrollUrl | undefined {
  const listening = f.running?.urls.enroll;
  let port: number;
  let bound: string;
  let advertised: string | undefined;
  if (listening) {
    const u = new URL(listening);
    port = Number(u.port);
    bound = u.hostname.replace(/^\[|\]$/g, "");
    advertised = f.running?.advertisedExplicitly ? f.running.urls.advertised : undefined;
  } else if (f.config.enrollPort !== undefined && f.config.enrollPort !== 0) {
    port = f.config.enrollPort;
    bound = f.config.host;
    advertised = f.config.advertiseUrl;
  } else return undefined;
  const wildcard = bound === "0.0.0.0" || bound === "::" || bound === "";
  const loopbackOnly = bound === "localhost" || bound === "::1" || bound.startsWith("127.");
  const own = new Set([f.name, "localhost", "127.0.0.1", "::1", hostname().toLowerCase()]);
  const given = f.sans.find((s) => !own.has(s.toLowerCase()));
  let host: string;
  let hostFrom: string;
  if (!wildcard) [host, hostFrom] = [bound, "the address the enrollment port listens on"];
  else if (advertised) [host, hostFrom] = [new URL(advertised).hostname.replace(/^\[|\]$/g, ""), "advertise_url"];
  else if (given) [host, hostFrom] = [given, "this node's certificate (a --san it was issued for)"];
  else [host, hostFrom] = [hostname(), "this machine's host name"];
  return { url: `https://${isIP(host) === 6 ? `[${host}]` : host}:${port}`, hostFrom, loopbackOnly };
}

/** This machine's addresses other machines might use (not loopback), for the person to pick from. */
export function otherAddresses(): string[] {
  return machineAddresses().filter((a) => a !== "::1" && !a.startsWith("127."));
}
