/**
 * W3C Trace Context (https://www.w3.org/TR/trace-context/): the `traceparent` and `tracestate` headers that carry
 * a trace from one process to the next. Parsing refuses every malformed form the spec names (a refused header
 * starts a new trace; it is never repaired), so a caller cannot make us emit an id the spec forbids.
 */

/** The identity of one span as it crosses a process boundary. */
export interface SpanContext {
  /** 32 lower-case hex digits, not all zero. */
  traceId: string;
  /** 16 lower-case hex digits, not all zero. */
  spanId: string;
  /** The sampled flag (bit 0 of trace-flags): the caller recorded this trace, so we should too. */
  sampled: boolean;
  /** The vendor entries of `tracestate`, in order, passed on unchanged. */
  traceState?: TraceState;
  /** True when the context came from another process (a header), false when made here. */
  remote: boolean;
}

export type TraceState = readonly (readonly [key: string, value: string])[];

const HEX_TRACE_ID = /^[0-9a-f]{32}$/;
const HEX_SPAN_ID = /^[0-9a-f]{16}$/;
const ZERO_TRACE_ID = "0".repeat(32);
const ZERO_SPAN_ID = "0".repeat(16);

export const isValidTraceId = (id: string): boolean => HEX_TRACE_ID.test(id) && id !== ZERO_TRACE_ID;
export const isValidSpanId = (id: string): boolean => HEX_SPAN_ID.test(id) && id !== ZERO_SPAN_ID;

/**
 * Parses a `traceparent` header; undefined for anything the spec says to ignore. Version 00 must be exactly
 * 55 characters; a later version (not ff) may carry more fields after a dash, which we ignore as the spec asks
 * ("parse the first four fields of a higher version"). Hex must be lower case: the spec's ABNF is HEXDIGLC.
 */
export function parseTraceparent(header: string | null | undefined): SpanContext | undefined {
  if (typeof header !== "string") return undefined;
  const value = header.trim();
  if (value.length < 55) return undefined;
  const version = value.slice(0, 2);
  if (!/^[0-9a-f]{2}$/.test(version) || version === "ff") return undefined;
  if (version === "00" && value.length !== 55) return undefined;
  if (value.length > 55 && value[55] !== "-") return undefined;
  const [, traceId, spanId, flags] = value.slice(0, 55).split("-");
  if (value[2] !== "-" || value[35] !== "-" || value[52] !== "-") return undefined;
  if (!isValidTraceId(traceId) || !isValidSpanId(spanId) || !/^[0-9a-f]{2}$/.test(flags)) return undefined;
  return { traceId, spanId, sampled: (parseInt(flags, 16) & 1) === 1, remote: true };
}

/** Formats the version-00 `traceparent` header we send for a span. */
export function formatTraceparent(ctx: Pick<SpanContext, "traceId" | "spanId" | "sampled">): string {
  return `00-${ctx.traceId}-${ctx.spanId}-${ctx.sampled ? "01" : "00"}`;
}

// tracestate keys: a simple key, or tenant@system; values: printable ASCII without ',' and '=', no trailing space.
const TRACESTATE_KEY = /^(?:[a-z][a-z0-9_\-*/]{0,255}|[a-z0-9][a-z0-9_\-*/]{0,240}@[a-z][a-z0-9_\-*/]{0,13})$/;
const TRACESTATE_VALUE = /^[\x20-\x2b\x2d-\x3c\x3e-\x7e]{0,255}[\x21-\x2b\x2d-\x3c\x3e-\x7e]$/;
/** The spec's limit on list members; a longer list is refused whole rather than cut at a guess. */
export const TRACESTATE_MAX_MEMBERS = 32;

/**
 * Parses `tracestate` (one or several header lines, already joined with commas). Undefined when any member is
 * malformed, a key repeats, or there are more than 32: the spec lets a receiver drop the whole header then,
 * and passing on part of a vendor's state would be worse than none.
 */
export function parseTracestate(header: string | null | undefined): TraceState | undefined {
  if (typeof header !== "string") return undefined;
  const members: [string, string][] = [];
  const seen = new Set<string>();
  for (const raw of header.split(",")) {
    const member = raw.trim();
    if (member === "") continue; // empty list members are allowed and ignored
    const eq = member.indexOf("=");
    if (eq <= 0) return undefined;
    const key = member.slice(0, eq);
    const value = member.slice(eq + 1);
    if (!TRACESTATE_KEY.test(key) || !TRACESTATE_VALUE.test(value) || seen.has(key)) return undefined;
    seen.add(key);
    members.push([key, value]);
  }
  if (members.length === 0 || members.length > TRACESTATE_MAX_MEMBERS) return undefined;
  return members;
}

export function formatTracestate(state: TraceState): string {
  return state.map(([k, v]) => `${k}=${v}`).join(",");
}

/** Reads both headers from any header source (fetch Headers, or a gRPC metadata getter later). */
export function extractContext(get: (name: string) => string | null | undefined): SpanContext | undefined {
  const parent = parseTraceparent(get("traceparent"));
  if (!parent) return undefined; // tracestate without a valid traceparent is discarded, as the spec says
  const traceState = parseTracestate(get("tracestate"));
  return traceState ? { ...parent, traceState } : parent;
}

/** The headers that carry `ctx` on to the next process. */
export function injectContext(ctx: SpanContext, set: (name: string, value: string) => void): void {
  set("traceparent", formatTraceparent(ctx));
  if (ctx.traceState?.length) set("tracestate", formatTracestate(ctx.traceState));
}
