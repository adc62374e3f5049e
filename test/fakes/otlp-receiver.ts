/**
 * A twin of an OpenTelemetry collector's OTLP/HTTP trace receiver, built from the OTLP specification
 * (opentelemetry-proto docs/specification.md, "OTLP/HTTP"), for the exporter's tests over a real socket:
 * - POST /v1/traces only: another path is 404, another method 405 (with Allow: POST);
 * - the JSON Protobuf Encoding: `Content-Type: application/json`, lowerCamelCase fields, trace and span ids as
 *   hex, 64-bit integers as decimal strings; the answer carries the request's content type. Binary protobuf
 *   (`application/x-protobuf`) is answered 415: the exporter under test sends JSON only, and the spec lets a
 *   server support one encoding. `Content-Encoding: gzip` is accepted, as the spec says a server must;
 * - success is 200 with an ExportTraceServiceResponse: `{}`, or `{"partialSuccess":{"rejectedSpans":"N",
 *   "errorMessage":...}}` when a scripted answer rejects some;
 * - a malformed request is 400 with a google.rpc.Status body (`{"code":3,"message":...}`), which the spec says
 *   is not to be retried;
 * - throttling and outages as the spec lists the retryable answers: 429, 502, 503, 504, with Retry-After when
 *   scripted;
 * - `hold()` makes it accept requests and answer none until released: a collector that hangs.
 * What it does not model: the gRPC transport, metrics and logs signals, authentication (headers are recorded).
 */
import { gunzipSync } from "node:zlib";

export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  startTimeUnixNano: string;
  endTimeUnixNano: string;
  attributes: Record<string, string | number | boolean>;
  status: { code?: number; message?: string };
  flags?: number;
  traceState?: string;
}

export interface ReceivedRequest {
  headers: Record<string, string>;
  resource: Record<string, string | number | boolean>;
  scope: { name?: string; version?: string };
  spans: ReceivedSpan[];
}

/** One scripted answer, used by the next request (in order); once the script runs out, every answer is 200. */
export type ScriptedAnswer =
  { status: 429 | 502 | 503 | 504 | 500 | 400 | 401; retryAfter?: string } | { rejectSpans: number; message?: string };

export interface OtlpReceiver {
  /** http://127.0.0.1:PORT, the base endpoint (the exporter appends /v1/traces). */
  endpoint: string;
  /** Accepted requests, in order (refused ones are in `answered` only). */
  requests: ReceivedRequest[];
  /** Every request's status code, in order. */
  answered: number[];
  spans(): ReceivedSpan[];
  script(...answers: ScriptedAnswer[]): void;
  /** Resolves once at least n spans were accepted (event-driven, no polling). */
  waitForSpans(n: number): Promise<ReceivedSpan[]>;
  /** Resolves once at least n requests arrived, whatever their answer. */
  waitForRequests(n: number): Promise<void>;
  hold(): void;
  release(): void;
  close(): Promise<void>;
}

const HEX32 = /^[0-9a-fA-F]{32}$/;
const HEX16 = /^[0-9a-fA-F]{16}$/;
const UINT64 = /^\d{1,20}$/;

class Malformed extends Error {}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const requests: ReceivedRequest[] = [];
  const answered: number[] = [];
  const scripted: ScriptedAnswer[] = [];
  const waiters: (() => void)[] = [];
  let held: (() => void)[] | undefined;
  const notify = () => waiters.splice(0).forEach((w) => w());
  const allSpans = () => requests.flatMap((r) => r.spans);
  const until = (done: () => boolean) =>
    new Promise<void>((resolve) => {
      const check = () => (done() ? resolve() : waiters.push(check));
      check();
    });

  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(req) {
      const answer = (status: number, body: unknown, extra: Record<string, string> = {}) => {
        answered.push(status);
        notify();
        // The answer's content type is the request's, as the spec asks (Response.json would add a charset).
        return new Response(JSON.stringify(body), {
          status,
          headers: { "content-type": "application/json", ...extra },
        });
      };
      const path = new URL(req.url).pathname;
      if (path !== "/v1/traces") return answer(404, { code: 5, message: `no such path ${path}` });
      if (req.method !== "POST") return answer(405, { code: 12, message: "POST only" }, { allow: "POST" });
      const type = (req.headers.get("content-type") ?? "").split(";")[0].trim().toLowerCase();
      if (type === "application/x-protobuf")
        return answer(415, { code: 3, message: "this receiver decodes application/json only" });
      if (type !== "application/json") return answer(415, { code: 3, message: `unsupported content type '${type}'` });
      if (held) await new Promise<void>((r) => held?.push(r));
      let raw = new Uint8Array(await req.arrayBuffer());
      if ((req.headers.get("content-encoding") ?? "").toLowerCase() === "gzip") raw = gunzipSync(raw);
      let decoded: Omit<ReceivedRequest, "headers">;
      try {
        decoded = decode(JSON.parse(new TextDecoder().decode(raw)));
      } catch (err) {
        return answer(400, {
          code: 3,
          message: err instanceof Malformed ? err.message : `not JSON: ${(err as Error).message}`,
        });
      }
      const next = scripted.shift();
      if (next && "status" in next)
        return answer(
          next.status,
          { code: 14, message: "scripted" },
          next.retryAfter ? { "retry-after": next.retryAfter } : {},
        );
      const headers: Record<string, string> = {};
      req.headers.forEach((v, k) => (headers[k] = v));
      const rejected = next && "rejectSpans" in next ? Math.min(next.rejectSpans, decoded.spans.length) : 0;
      requests.push({ headers, ...decoded, spans: decoded.spans.slice(rejected) });
      return answer(
        200,
        rejected
          ? {
              partialSuccess: {
                rejectedSpans: String(rejected),
                errorMessage: next && "message" in next ? next.message : "rejected",
              },
            }
          : {},
      );
    },
  });

  return {
    endpoint: `http://127.0.0.1:${server.port}`,
    requests,
    answered,
    spans: allSpans,
    script: (...a) => scripted.push(...a),
    waitForSpans: async (n) => {
      await until(() => allSpans().length >= n);
      return allSpans();
    },
    waitForRequests: (n) => until(() => answered.length >= n),
    hold: () => {
      held ??= [];
    },
    release: () => {
      const h = held ?? [];
      held = undefined;
      h.forEach((r) => r());
    },
    close: async () => {
      const h = held ?? [];
      held = undefined;
      h.forEach((r) => r());
      await server.stop(true);
    },
  };
}

/** ExportTraceServiceRequest (JSON) → what the tests look at; anything the spec's JSON mapping forbids throws. */
function decode(doc: any): Omit<ReceivedRequest, "headers"> {
  if (!doc || !Array.isArray(doc.resourceSpans)) throw new Malformed("resourceSpans must be an array");
  const spans: ReceivedSpan[] = [];
  let resource: ReceivedRequest["resource"] = {};
  let scope: ReceivedRequest["scope"] = {};
  for (const rs of doc.resourceSpans) {
    resource = attributes(rs.resource?.attributes ?? []);
    for (const ss of rs.scopeSpans ?? []) {
      scope = { name: ss.scope?.name, version: ss.scope?.version };
      for (const s of ss.spans ?? []) {
        if (!HEX32.test(s.traceId ?? "") || /^0+$/.test(s.traceId))
          throw new Malformed(`invalid traceId '${s.traceId}'`);
        if (!HEX16.test(s.spanId ?? "") || /^0+$/.test(s.spanId)) throw new Malformed(`invalid spanId '${s.spanId}'`);
        if (s.parentSpanId !== undefined && s.parentSpanId !== "" && !HEX16.test(s.parentSpanId))
          throw new Malformed(`invalid parentSpanId '${s.parentSpanId}'`);
        for (const t of ["startTimeUnixNano", "endTimeUnixNano"])
          if (!UINT64.test(String(s[t]))) throw new Malformed(`${t} must be a uint64 (got ${s[t]})`);
        if (typeof s.name !== "string" || s.name === "") throw new Malformed("a span needs a name");
        if (s.kind !== undefined && !(Number.isInteger(s.kind) && s.kind >= 0 && s.kind <= 5))
          throw new Malformed(`invalid kind ${s.kind}`);
        spans.push({
          traceId: s.traceId.toLowerCase(),
          spanId: s.spanId.toLowerCase(),
          parentSpanId: s.parentSpanId ? s.parentSpanId.toLowerCase() : undefined,
          name: s.name,
          kind: s.kind ?? 0,
          startTimeUnixNano: String(s.startTimeUnixNano),
          endTimeUnixNano: String(s.endTimeUnixNano),
          attributes: attributes(s.attributes ?? []),
          status: s.status ?? {},
          flags: s.flags,
          traceState: s.traceState,
        });
      }
    }
  }
  return { resource, scope, spans };
}

function attributes(list: any[]): Record<string, string | number | boolean> {
  const out: Record<string, string | number | boolean> = {};
  for (const kv of list) {
    const v = kv?.value ?? {};
    if (typeof kv?.key !== "string") throw new Malformed("an attribute needs a key");
    if ("stringValue" in v) out[kv.key] = String(v.stringValue);
    else if ("boolValue" in v) out[kv.key] = Boolean(v.boolValue);
    else if ("intValue" in v) {
      if (!/^-?\d+$/.test(String(v.intValue))) throw new Malformed(`intValue of ${kv.key} must be an integer`);
      out[kv.key] = Number(v.intValue);
    } else if ("doubleValue" in v) out[kv.key] = Number(v.doubleValue);
    else throw new Malformed(`attribute ${kv.key} has no value this receiver reads`);
  }
  return out;
}
