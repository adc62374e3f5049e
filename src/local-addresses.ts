import { hostname, networkInterfaces } from "node:os";

/**
 * This machine's IP addresses, loopback first: what `serve --host` can bind and what "this machine" means.
 * IPv6 link-local addresses are left out: binding one needs an interface scope (fe80::1%eth0).
 */
export function machineAddresses(): string[] {
  const all = Object.values(networkInterfaces())
    .flat()
    .flatMap((a) => (a && !/^fe80:/i.test(a.address) ? [{ address: a.address, internal: a.internal }] : []));
  all.sort((a, b) => Number(b.internal) - Number(a.internal));
  return [...new Set(all.map((a) => a.address))];
}

/** Whether a URL's host is this machine (loopback, one of its addresses, or its host name). */
export function isThisMachine(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, "").toLowerCase();
  if (h === "localhost" || h === "::1" || h.startsWith("127.") || h === hostname().toLowerCase()) return true;
  return machineAddresses().includes(h);
}
