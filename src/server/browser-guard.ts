import type { HttpRequest, HttpResponse } from "./http1";

/**
 * The plain loopback listener has no identity: every request on it acts as the machine's own '@local'. A web
 * page open in a browser on this machine can reach 127.0.0.1 too, so it must not be able to act through it:
 * - a browser always names the page's origin in `Origin` on a cross-origin request: only the origin the
 *   request itself names as `Host` (the same origin) is accepted, and `Sec-Fetch-Site: cross-site` is refused
 *   outright;
 * - a "simple" cross-origin POST (no preflight) can only carry text/plain, form or multipart bodies: a body
 *   must be declared JSON;
 * - DNS rebinding makes a hostile name resolve to 127.0.0.1, but the browser then sends that name as `Host`:
 *   only a loopback host is accepted. That is the host part alone: the port a client names is the one it
 *   connected to, which differs from ours behind a tunnel (`ssh -L 8080:localhost:PORT` sends
 *   `Host: localhost:8080`) or a local proxy, and a rebinding page cannot choose a loopback host name.
 * Returns the refusal, or undefined when the request may go on.
 */
export function refuseBrowserRequest(req: HttpRequest): HttpResponse | undefined {
  const host = req.headers.get("host")?.toLowerCase();
  if (!host || !isLoopbackHost(host))
    return refusal(
      400,
      `Host must name this machine's loopback (localhost, 127.0.0.1 or [::1], any port) on this listener; got ${host === undefined ? "none" : `'${host}'`}`,
    );
  const origin = req.headers.get("origin");
  if (origin !== undefined && origin.toLowerCase() !== `http://${host}`)
    return refusal(
      403,
      `requests from another origin (${origin}) are refused: this listener acts as the machine itself`,
    );
  if (req.headers.get("sec-fetch-site")?.toLowerCase() === "cross-site")
    return refusal(403, "cross-site requests are refused");
  if (req.method === "POST") {
    const type = req.headers.get("content-type")?.split(";")[0].trim().toLowerCase();
    if (!type || (type !== "application/json" && !type.endsWith("+json")))
      return refusal(
        415,
        `a POST body must be JSON (Content-Type application/json or application/a2a+json; got ${type ?? "none"})`,
      );
  }
  return undefined;
}

/** `localhost`, an address of 127.0.0.0/8 or `[::1]`, with or without a port (lower case). */
export function isLoopbackHost(host: string): boolean {
  const m = /^(\[[^\]]*\]|[^:]*)(?::(\d{1,5}))?$/.exec(host);
  if (!m || (m[2] !== undefined && Number(m[2]) > 65535)) return false;
  const name = m[1];
  if (name === "localhost" || name === "[::1]") return true;
  const v4 = /^127\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(name);
  return v4 !== null && v4.slice(1).every((o) => Number(o) <= 255);
}

function refusal(status: number, message: string): HttpResponse {
  return { status, headers: { "content-type": "text/plain; charset=utf-8" }, body: `${message}\n` };
}
