/** The port `a2a-node serve` listens on unless told otherwise (a test keeps it equal to the setting's default). */
export const NODE_DEFAULT_PORT = 9443;

/** A peer URL as a person typed it, refused with the reason and the form we expect. */
export class PeerUrlError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "PeerUrlError";
  }
}

export interface NormalizedUrl {
  /** https://HOST:PORT[/path], the port always written. */
  url: string;
  /** What was filled in, said to the person (e.g. the default port), if anything. */
  note?: string;
}

/**
 * Checks and completes a peer's URL. Peers speak mutual TLS, so only https is taken (http:// is refused, not
 * upgraded: it names another port, the plain one, more often than not). A URL without a port means the
 * node's default 9443, not HTTPS's 443, and says so; an explicit :443 is kept. A bare HOST or HOST:PORT is
 * taken as https://.
 *
 * @example normalizePeerUrl("https://10.0.0.7").url === "https://10.0.0.7:9443"
 */
export function normalizePeerUrl(raw: string): NormalizedUrl {
  const text = raw.trim();
  const notes: string[] = [];
  let withScheme = text;
  if (!/^[a-z][a-z0-9+.-]*:\/\//i.test(text)) {
    if (text === "" || /[\s/?#@]/.test(text.replace(/\/+$/, "")))
      throw new PeerUrlError(`'${raw}' is not a URL (expected https://HOST:${NODE_DEFAULT_PORT})`);
    withScheme = `https://${text}`;
    notes.push("no scheme given: using https://");
  }
  let u: URL;
  try {
    u = new URL(withScheme);
  } catch {
    throw new PeerUrlError(`'${raw}' is not a URL (expected https://HOST:${NODE_DEFAULT_PORT})`);
  }
  if (u.protocol === "http:")
    throw new PeerUrlError(
      `'${raw}' is plain HTTP; peers speak mutual TLS only: use https://${u.hostname}:${u.port || NODE_DEFAULT_PORT}`,
    );
  if (u.protocol !== "https:")
    throw new PeerUrlError(
      `'${raw}' is not an https:// URL (peers speak mutual TLS: https://HOST:${NODE_DEFAULT_PORT})`,
    );
  if (u.username || u.password)
    throw new PeerUrlError(`'${raw}' carries a user name or password; peers know each other by certificate only`);
  if (u.search || u.hash)
    throw new PeerUrlError(`'${raw}' has a query or fragment; give the node's base URL, https://HOST:PORT`);
  // URL drops a port equal to the scheme's default, so whether one was written is read from the text itself.
  const explicitPort = /^[a-z]+:\/\/(\[[^\]]*\]|[^/:?#]*):(\d+)/i.exec(withScheme)?.[2];
  const port = explicitPort !== undefined ? Number(explicitPort) : NODE_DEFAULT_PORT;
  if (explicitPort === undefined) notes.push(`no port given: using the node default ${NODE_DEFAULT_PORT}`);
  const path = u.pathname === "/" ? "" : u.pathname.replace(/\/+$/, "");
  const url = `https://${u.hostname}:${port}${path}`;
  return notes.length ? { url, note: `${notes.join("; ")} (${url})` } : { url };
}

/** A loopback host: plain HTTP to it never leaves this machine. */
export function isLoopbackHost(host: string): boolean {
  const h = host.replace(/^\[|\]$/g, "").toLowerCase();
  return h === "localhost" || h === "::1" || /^127\.\d+\.\d+\.\d+$/.test(h);
}

/**
 * Checks a URL of an agent outside the fleet. Unlike a fleet peer's, it is taken as the agent publishes it:
 * the scheme must be written, a missing port is the scheme's own (443 or 80), and a path is kept. Plain
 * http:// is taken for a loopback host (a local agent, a test); for any other host only with `insecureHttp`,
 * since the token would cross the network in clear.
 *
 * @example normalizeOutsideUrl("https://agent.example.com/a2a").url === "https://agent.example.com/a2a"
 */
export function normalizeOutsideUrl(raw: string, options: { insecureHttp?: boolean } = {}): NormalizedUrl {
  const text = raw.trim();
  let u: URL;
  try {
    u = new URL(text);
  } catch {
    throw new PeerUrlError(`'${raw}' is not a URL (expected https://HOST[:PORT][/PATH])`);
  }
  if (u.protocol !== "https:" && u.protocol !== "http:") throw new PeerUrlError(`'${raw}' is not an http(s) URL`);
  if (u.protocol === "http:" && !isLoopbackHost(u.hostname) && !options.insecureHttp)
    throw new PeerUrlError(
      `'${raw}' is plain HTTP to another machine: credentials would cross the network in clear; use https://, or pass --insecure-http if that network is yours`,
    );
  if (u.username || u.password)
    throw new PeerUrlError(
      `'${raw}' carries a user name or password; give credentials with --token-file or --header-file`,
    );
  if (u.search || u.hash) throw new PeerUrlError(`'${raw}' has a query or fragment; give the agent's URL without them`);
  const path = u.pathname === "/" ? "" : u.pathname.replace(/\/+$/, "");
  return { url: `${u.origin}${path}` };
}
