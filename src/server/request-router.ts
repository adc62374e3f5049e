import { parseExtensionsHeader, type CallContext, type CallerIdentity } from "../rpc/caller";
import { A2AError } from "../protocol/errors";
import { statusBody } from "../rpc/http-json-errors";
import { matchRoute, type HttpMethod } from "../rpc/http-json-routes";
import type { HttpJsonOutcome, HttpJsonTransport } from "../rpc/http-json-transport";
import { errorBody, type JsonRpcTransport } from "../rpc/jsonrpc-transport";
import type { HeldText } from "../rpc/answer-holds";
import type { AnswerHold } from "../rpc/caller";
import type { AnswerBudget } from "./answer-budget";
import type { AuditCall } from "./audit-log";
import type { HttpRequest, HttpResponse } from "./http1";
import type { PeerRateLimiter } from "./rate-limit";
import { CallGate, type RouterMetrics } from "./call-gate";

export type { RouterMetrics } from "./call-gate";

/** Paths that take JSON-RPC POSTs: the interface URL named in the agent card, and the legacy Hermes path. */
export const JSONRPC_PATH = "/";
const JSONRPC_PATHS = new Set([JSONRPC_PATH, "/a2a/rpc"]);
const JSON_HEADERS = { "content-type": "application/json" };
/** The User-Agent of Hermes's own A2A client (plugins/platforms/a2a/tools.py): "Hermes-A2A/1.0". */
const HERMES_A2A_AGENT = "Hermes-A2A/";
const SSE_HEADERS = { "content-type": "text/event-stream", "cache-control": "no-cache" };

/**
 * Server-sent events: `id:` carries the task event number a reconnecting client sends back as Last-Event-ID.
 * A plain iterator rather than an async generator, so that return() (the client went away) reaches the event
 * source at once even while it is waiting for the next event. `closed` is called once, when the stream ends
 * or its client goes away.
 */
function sse(
  events: AsyncIterable<{ id?: string; event?: string; data: string; hold?: AnswerHold }>,
  closed?: () => void,
): AsyncIterable<string | HeldText> {
  let open = true;
  const close = () => {
    if (!open) return;
    open = false;
    closed?.();
  };
  return {
    [Symbol.asyncIterator]() {
      const it = events[Symbol.asyncIterator]();
      return {
        async next() {
          let r: IteratorResult<{ id?: string; event?: string; data: string; hold?: AnswerHold }>;
          try {
            r = await it.next();
          } catch (err) {
            close();
            throw err;
          }
          if (r.done) {
            close();
            return { value: undefined, done: true };
          }
          const e = r.value;
          const head =
            (e.id === undefined ? "" : `id: ${e.id}\n`) + (e.event === undefined ? "" : `event: ${e.event}\n`);
          const text = `${head}data: ${e.data}\n\n`;
          return { value: e.hold ? { text, hold: e.hold } : text, done: false };
        },
        async return() {
          close();
          await it.return?.();
          return { value: undefined, done: true };
        },
      };
    },
  };
}

export interface RouterOptions {
  transport: JsonRpcTransport;
  /** The HTTP+JSON binding's routes (/message:send, /tasks/...), over the same method table as JSON-RPC. */
  httpJson: HttpJsonTransport;
  /** Everything else (card, OpenAPI) goes to the web app. */
  web(request: Request, caller: CallerIdentity): Promise<Response>;
  /** Health and metrics (see ops-routes.ts): answered here, before the web app, when they match. */
  ops?(method: string, path: string, caller: CallerIdentity): Promise<HttpResponse> | undefined;
  /**
   * Per-peer rate limit on A2A requests (both bindings), checked once the caller is known and before anything is
   * parsed.
   */
  limiter?: PeerRateLimiter;
  metrics?: RouterMetrics;
  /** Paths under /pki/ (the fleet PKI: revocation list, renewal), when this listener serves them. */
  pki?(req: HttpRequest, caller: CallerIdentity, path: string): Promise<HttpResponse>;
  /** Told of every A2A call (either binding) and fleet PKI call once it is answered, for the audit log. */
  audit?(call: AuditCall): void;
  /**
   * The bytes of answers held for clients that have not read them (answer_bytes_per_caller,
   * answer_bytes_in_flight): an A2A request waits for room before it is handled, and its answers are counted.
   */
  answers?: AnswerBudget;
  /** The gate every A2A call passes (limiter, answers, audit, metrics); made from the options above when absent. */
  gate?: CallGate;
}

/**
 * Splits traffic between the two A2A bindings and the web app. JSON-RPC POSTs, the per-task hot path, are
 * checked first and go straight from the connection to the transport, and so do the HTTP+JSON routes:
 * turning them into Fetch Requests and back would cost more than the rest of the node's work on a task.
 * Everything else (card, health, OpenAPI) goes through the web app (Elysia).
 */
export function createRequestRouter(options: RouterOptions) {
  const { transport, httpJson, web, ops, metrics, audit } = options;
  const gate = options.gate ?? new CallGate(options);
  const limiter = gate.limiter;
  const streamClosed = gate.streamClosed;
  /** A request refused because its caller's (or the node's) answers wait unread: 429, like a rate limit. */
  const answersHeld = (err: A2AError, binding: "jsonrpc" | "http-json"): HttpResponse => ({
    status: 429,
    headers: { ...JSON_HEADERS, "retry-after": "1" },
    body: binding === "http-json" ? statusBody(err, 429) : errorBody(null, err),
  });

  return async function route(req: HttpRequest, caller: CallerIdentity): Promise<HttpResponse> {
    const q = req.target.indexOf("?");
    const path = q === -1 ? req.target : req.target.slice(0, q);
    if (req.method === "POST" && JSONRPC_PATHS.has(path)) {
      const wait = gate.rateLimit(caller, "jsonrpc");
      if (wait > 0) return rateLimitedResponse(wait, limiter!);
      const type = req.headers.get("content-type")?.split(";")[0].trim().toLowerCase();
      if (type && type !== "application/json" && !type.endsWith("+json")) {
        const err = A2AError.contentTypeNotSupported(`Content-Type ${type} is not JSON; send application/json`);
        gate.record({ caller }, "jsonrpc", undefined, performance.now(), err.code);
        return { status: 200, headers: JSON_HEADERS, body: errorBody(null, err) };
      }
      const admission = await gate.admit(caller, "jsonrpc");
      if (admission?.refused) return answersHeld(admission.refused, "jsonrpc");
      // A client that left while its request waited for room gets nothing built.
      if (admission && req.gone?.()) {
        admission.done();
        return { status: 204 };
      }
      const started = gate.started();
      const ctx = callContext(gate, req, caller);
      let out: Awaited<ReturnType<typeof transport.handle>>;
      try {
        out = await transport.handle(
          req.body.toString("utf8"),
          protocolVersion(req, q),
          ctx,
          req.headers.get("last-event-id"),
        );
      } finally {
        admission?.done();
      }
      gate.answered(ctx, "jsonrpc", out.method, started, out.error);
      if (out.kind === "json")
        return {
          status: 200,
          headers: out.error === undefined ? withExtensions(JSON_HEADERS, ctx) : JSON_HEADERS,
          body: out.body,
          hold: out.hold,
        };
      if (out.kind === "none") return { status: 204 };
      gate.streamOpened();
      return { status: 200, headers: withExtensions(SSE_HEADERS, ctx), stream: sse(out.events, streamClosed) };
    }
    const answered = ops?.(req.method, path, caller);
    if (answered) return answered;
    if (options.pki && path.startsWith("/pki/")) {
      const started = audit ? performance.now() : 0;
      const res = await options.pki(req, caller, path);
      // Renewals and revocation-list fetches are fleet calls too; a path it does not serve is named by kind only.
      const known = path === "/pki/renew" || path === "/pki/crl";
      const method = known ? `${req.method} ${path}` : undefined;
      if (res.status === 429) {
        // Over the /pki/ routes' own per-peer limits (src/fleet/pki-routes.ts).
        metrics?.rateLimited(caller.name, Number(res.headers?.["retry-after"] ?? 1));
        audit?.({
          peer: caller.name,
          fingerprint: caller.fingerprint,
          binding: "pki",
          method,
          outcome: "rate_limited",
          code: 429,
          ms: 0,
        });
      } else gate.record({ caller }, "pki", method, started, res.status < 400 ? undefined : res.status);
      return res;
    }
    const match = matchRoute(path);
    if (match !== undefined) {
      const wait = gate.rateLimit(caller, "http-json");
      if (wait > 0) return rateLimitedResponse(wait, limiter!, "http-json");
      const admission = await gate.admit(caller, "http-json");
      if (admission?.refused) return answersHeld(admission.refused, "http-json");
      if (admission && req.gone?.()) {
        admission.done();
        return { status: 204 };
      }
      const started = gate.started();
      const ctx = callContext(gate, req, caller);
      const handling = httpJson.handle(
        match,
        {
          method: req.method,
          path,
          query: q === -1 ? "" : req.target.slice(q + 1),
          body: req.body.toString("utf8"),
          contentType: req.headers.get("content-type")?.split(";")[0].trim().toLowerCase(),
          version: protocolVersion(req, q),
          lastEventId: req.headers.get("last-event-id"),
        },
        ctx,
      );
      let out: Awaited<typeof handling>;
      try {
        out = await handling;
      } finally {
        admission?.done();
      }
      const method = typeof match === "object" ? match.operations[req.method as HttpMethod] : undefined;
      const code = out.kind === "json" ? out.error : undefined;
      gate.answered(ctx, "http-json", method, started, code);
      if (out.kind === "stream") gate.streamOpened();
      const res = httpJsonResponse(out, req.headers.get("accept"), streamClosed);
      // A refused request activated nothing (the refusal may come after the extensions were read).
      return out.kind === "json" && out.error !== undefined
        ? res
        : { ...res, headers: withExtensions(res.headers ?? {}, ctx) };
    }
    const headers = new Headers();
    for (const [k, v] of req.headers) headers.set(k, v);
    const hasBody = req.method !== "GET" && req.method !== "HEAD";
    // A fixed origin: the client's Host header must not steer routing (Elysia finds the path by position).
    const response = await web(
      new Request(`https://localhost${req.target}`, {
        method: req.method,
        headers,
        body: hasBody ? req.body : undefined,
      }),
      caller,
    );
    const out: Record<string, string> = {};
    response.headers.forEach((v, k) => (out[k] = v));
    return { status: response.status, headers: out, body: new Uint8Array(await response.arrayBuffer()) };
  };
}

/**
 * The request's context (see CallGate.context): the verified caller, and the extensions its A2A-Extensions
 * header requests (v0.3 clients name the header X-A2A-Extensions).
 */
function callContext(gate: CallGate, req: HttpRequest, caller: CallerIdentity): CallContext {
  const requested = parseExtensionsHeader(req.headers.get("a2a-extensions") ?? req.headers.get("x-a2a-extensions"));
  // Presentation only (how its streams are cut), never identity: the caller is the one the listener proved.
  return gate.context(caller, requested, req.headers.get("user-agent")?.startsWith(HERMES_A2A_AGENT) ?? false);
}

/** The answer's headers, with A2A-Extensions listing the extensions the handler activated, if any. */
function withExtensions(headers: Record<string, string>, ctx: CallContext): Record<string, string> {
  const activated = ctx.extensions?.activated;
  return activated?.length ? { ...headers, "a2a-extensions": activated.join(",") } : headers;
}

/**
 * The answer to a peer over its rate limit: HTTP 429 with Retry-After, carrying the binding's error (refused
 * before the request is read: a JSON-RPC error has id null) that says how long to wait. Clients that only
 * read bodies get the same message as those that read the status.
 */
export function rateLimitedResponse(
  seconds: number,
  limits: { perSecond: number; burst: number },
  binding: "jsonrpc" | "http-json" = "jsonrpc",
): HttpResponse {
  const err = A2AError.rateLimited(seconds, limits.perSecond, limits.burst);
  return {
    status: 429,
    headers: { ...JSON_HEADERS, "retry-after": String(seconds) },
    body: binding === "http-json" ? statusBody(err, 429) : errorBody(null, err),
  };
}

/**
 * application/a2a+json is the binding's media type (spec v1.0.1 §11.1: SHOULD); clients that do not name it
 * in Accept (v1.0.0 said application/json) get the same JSON labelled application/json.
 */
function jsonType(accept: string | undefined): string {
  return accept?.toLowerCase().includes("application/a2a+json") ? A2A_JSON : "application/json";
}
const A2A_JSON = "application/a2a+json";

function httpJsonResponse(out: HttpJsonOutcome, accept: string | undefined, streamClosed?: () => void): HttpResponse {
  if (out.kind === "stream") return { status: 200, headers: SSE_HEADERS, stream: sse(out.events, streamClosed) };
  const headers: Record<string, string> = { "content-type": jsonType(accept) };
  if (out.allow) headers.allow = out.allow;
  return { status: out.status, headers, body: out.body, hold: out.hold };
}

/**
 * The answer to a body over the limit: HTTP 413 naming the limit, as a JSON-RPC error, or as a
 * google.rpc.Status on an HTTP+JSON route.
 */
export function tooLargeResponse(limit: number, declared: number | undefined, target = "/"): HttpResponse {
  const what = declared === undefined ? "request body exceeds" : `request body of ${declared} bytes exceeds`;
  const err = A2AError.invalidRequest(`${what} this node's limit of ${limit} bytes`);
  const q = target.indexOf("?");
  if (matchRoute(q === -1 ? target : target.slice(0, q)) !== undefined)
    return { status: 413, headers: JSON_HEADERS, body: statusBody(err, 413) };
  return { status: 413, headers: JSON_HEADERS, body: errorBody(null, err) };
}

/** The A2A-Version header, or the A2A-Version query parameter; null when neither is given. */
function protocolVersion(req: HttpRequest, q: number): string | null {
  const h = req.headers.get("a2a-version");
  if (h !== undefined && h !== "") return h;
  if (q !== -1) {
    const v = new URLSearchParams(req.target.slice(q + 1)).get("A2A-Version");
    if (v !== null) return v;
  }
  return h === undefined ? null : "";
}
