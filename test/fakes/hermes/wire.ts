/**
 * Byte-level wire details of the Hermes Agent API server (an aiohttp app) that the fake copies, so a client
 * that parses too strictly (or too loosely) fails here as it would against the real server:
 * - every JSON body and SSE `data:` line is Python's `json.dumps` with its defaults: `", "` and `": "`
 *   separators and `ensure_ascii=True` (every non-ASCII character as `\uXXXX`); floats keep their `.0`
 *   (`aiohttp.web.json_response` uses `json.dumps`; the SSE writers call `json.dumps(event)` /
 *   `_sse_frame(event)` in gateway/platforms/api_server.py).
 * - errors are the OpenAI envelope of `_openai_error(message, err_type, param, code)`; aiohttp's own 404/405/500
 *   are plain text.
 */

export type Generation = "older" | "newer";

/** Keys whose values Python sends as floats (`time.time()`, `round(duration, 3)`, `time.monotonic() + t`). */
const FLOAT_KEYS = new Set(["timestamp", "created_at", "updated_at", "duration", "expires_at"]);

function pyString(s: string): string {
  let out = '"';
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c === 0x22) out += '\\"';
    else if (c === 0x5c) out += "\\\\";
    else if (c === 0x0a) out += "\\n";
    else if (c === 0x0d) out += "\\r";
    else if (c === 0x09) out += "\\t";
    else if (c === 0x08) out += "\\b";
    else if (c === 0x0c) out += "\\f";
    // ensure_ascii escapes everything outside the printable ASCII range (UTF-16 units, so surrogate pairs too).
    else if (c < 0x20 || c > 0x7e) out += "\\u" + c.toString(16).padStart(4, "0");
    else out += s[i];
  }
  return out + '"';
}

function pyValue(v: unknown, key?: string): string {
  if (v === null || v === undefined) return "null";
  if (typeof v === "boolean") return v ? "true" : "false";
  if (typeof v === "number") {
    if (!Number.isFinite(v)) return Number.isNaN(v) ? "NaN" : v > 0 ? "Infinity" : "-Infinity";
    return key && FLOAT_KEYS.has(key) && Number.isInteger(v) ? `${v}.0` : String(v);
  }
  if (typeof v === "string") return pyString(v);
  if (Array.isArray(v)) return "[" + v.map((x) => pyValue(x)).join(", ") + "]";
  if (typeof v === "object") {
    const parts: string[] = [];
    for (const [k, x] of Object.entries(v as Record<string, unknown>))
      if (x !== undefined) parts.push(`${pyString(k)}: ${pyValue(x, k)}`);
    return "{" + parts.join(", ") + "}";
  }
  return pyString(String(v));
}

/** `json.dumps(value)` as Python writes it. */
export const pyJson = (value: unknown): string => pyValue(value);

/** One server-sent event as the runs stream writes it: a `data:` line only (no `event:`, no `id:`). */
export const sseFrame = (event: Record<string, unknown>): string => `data: ${pyJson(event)}\n\n`;

/** `_openai_error(message, err_type="invalid_request_error", param=None, code=None)` (api_server.py). */
export function openaiError(
  message: string,
  opts: { type?: string; param?: string | null; code?: string | null } = {},
) {
  return {
    error: { message, type: opts.type ?? "invalid_request_error", param: opts.param ?? null, code: opts.code ?? null },
  };
}

/** Headers the security middleware adds to every answer (`_SECURITY_HEADERS` in api_server.py; 0.18.2 has them all). */
function securityHeaders(_generation: Generation): Record<string, string> {
  const base = { "x-content-type-options": "nosniff", "referrer-policy": "no-referrer" };
  return {
    ...base,
    "content-security-policy": "default-src 'none'; frame-ancestors 'none'",
    "permissions-policy": "camera=(), microphone=(), geolocation=()",
    "strict-transport-security": "max-age=31536000; includeSubDomains",
    "x-frame-options": "DENY",
    "x-xss-protection": "0",
  };
}

/** `web.json_response(body, status=..., headers=...)`. */
export function jsonAnswer(
  generation: Generation,
  body: unknown,
  status = 200,
  headers: Record<string, string> = {},
): Response {
  return new Response(pyJson(body), {
    status,
    headers: { "content-type": "application/json; charset=utf-8", ...securityHeaders(generation), ...headers },
  });
}

/** An OpenAI-shaped error answer. */
export function errorAnswer(
  generation: Generation,
  status: number,
  message: string,
  opts: { type?: string; code?: string; headers?: Record<string, string> } = {},
): Response {
  return jsonAnswer(generation, openaiError(message, opts), status, opts.headers);
}

/** aiohttp's own plain-text answers: no route (404), a route without this method (405), an uncaught exception (500). */
export function aiohttpText(generation: Generation, status: 404 | 405 | 500, allow?: string): Response {
  const text = {
    404: "404: Not Found",
    405: "405: Method Not Allowed",
    500: "500 Internal Server Error\n\nServer got itself in trouble",
  }[status];
  return new Response(text, {
    status,
    headers: {
      "content-type": "text/plain; charset=utf-8",
      ...securityHeaders(generation),
      ...(allow ? { allow } : {}),
    },
  });
}

/** Where an SSE reader writes (a node:http response, so headers go out at once as aiohttp's `prepare()`). */
export interface SseOut {
  write(text: string): void;
  end(): void;
  /** cb runs when the client goes away before the stream ended. */
  onGone(cb: () => void): void;
}

/** An answer that streams: headers now, then whatever `start` writes. */
export interface StreamAnswer {
  headers: Record<string, string>;
  start(out: SseOut): void;
}

export type Answer = Response | StreamAnswer;

/** The SSE answer's headers (`_handle_run_events`). */
export const sseHeaders = (generation: Generation): Record<string, string> => ({
  "content-type": "text/event-stream",
  "cache-control": "no-cache",
  "x-accel-buffering": "no",
  ...securityHeaders(generation),
});

/** Python truthiness, for fields the older server reads with `bool(body.get(...))`. */
export function pyTruthy(v: unknown): boolean {
  if (v === null || v === undefined || v === false || v === 0 || v === "") return false;
  if (Array.isArray(v)) return v.length > 0;
  if (typeof v === "object") return Object.keys(v as object).length > 0;
  return true;
}

/** `_coerce_request_bool(value, default=False)` of the newer api_server.py. */
export function coerceRequestBool(v: unknown): boolean {
  if (typeof v === "boolean") return v;
  if (typeof v === "string") return ["1", "true", "yes", "on"].includes(v.trim().toLowerCase());
  if (typeof v === "number") return v !== 0;
  return false;
}

/** A JSON value with object keys sorted, for the idempotency fingerprint (`json.dumps(..., sort_keys=True)`). */
export function canonicalJson(v: unknown): string {
  if (Array.isArray(v)) return "[" + v.map(canonicalJson).join(",") + "]";
  if (v && typeof v === "object") {
    const o = v as Record<string, unknown>;
    return (
      "{" +
      Object.keys(o)
        .sort()
        .map((k) => JSON.stringify(k) + ":" + canonicalJson(o[k]))
        .join(",") +
      "}"
    );
  }
  return JSON.stringify(v ?? null);
}

/** `uuid.uuid4().hex`. */
export const hex32 = (): string => crypto.randomUUID().replaceAll("-", "");

/** `time.time()`: seconds as a float. */
export const nowSeconds = (): number => Date.now() / 1000;

/** `time.monotonic()`: seconds since an arbitrary start, NOT wall-clock time. */
export const monotonicSeconds = (): number => performance.now() / 1000;
