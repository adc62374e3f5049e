import type { HttpRequest, HttpResponse } from "./http1";

/**
 * The plain loopback listener has no identity: every request on it acts as the machine's own '@local'. A web
 * page open in a browser on this machine can reach 127.0.0.1 too, so it must not be able to act through it:
 * - a browser always names the page's origin in `Origin` on a cross-origin POST: only this listener's own
 *   origin is accepted (and `Sec-Fetch-Site: cross-site` is refused outright);
 * - a "simple" cross-origin POST (no preflight) can only carry text/plain, form or multipart bodies: a body
 *   must be declared JSON;
 * - DNS rebinding makes a hostile name resolve to 127.0.0.1, but the browser then sends that name as `Host`:
 *   only 127.0.0.1:PORT and localhost:PORT are accepted.
 * Returns the refusal, or undefined when the request may go on.
 */
export function refuseBrowserRequest(req: HttpRequest, port: number): HttpResponse | undefined {
  const hosts = [`127.0.0.1:${port}`, `localhost:${port}`];
  const host = req.headers.get("host")?.toLowerCase();
  if (!host || !hosts.includes(host)) return refusal(400, `Host must be ${hosts.join(" or ")} on this loopback listener`);
  const origin = req.headers.get("origin");
  if (origin !== undefined && !hosts.some((h) => origin.toLowerCase() === `http://${h}`))
    return refusal(403, `requests from another origin (${origin}) are refused: this listener acts as the machine itself`);
  if (req.headers.get("sec-fetch-site")?.toLowerCase() === "cross-site") return refusal(403, "cross-site requests are refused");
  if (req.method === "POST") {
    const type = req.headers.get("content-type")?.split(";")[0].trim().toLowerCase();
    if (!type || (type !== "application/json" && !type.endsWith("+json")))
      return refusal(415, `a POST body must be JSON (Content-Type application/json or application/a2a+json; got ${type ?? "none"})`);
  }
  return undefined;
}

function refusal(status: number, message: string): HttpResponse {
  return { status, headers: { "content-type": "text/plain; charset=utf-8" }, body: `${message}\n` };
}
