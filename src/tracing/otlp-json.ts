import type { Attributes, AttributeValue } from "./attributes";
import type { FinishedSpan } from "./span";

/**
 * The OTLP/JSON encoding of an ExportTraceServiceRequest (opentelemetry-proto, trace/v1), as the OTLP spec's
 * "JSON Protobuf Encoding" defines it: lowerCamelCase field names, trace and span ids as hex strings (not
 * base64, an exception the spec makes), 64-bit integers as decimal strings, enums as their numbers.
 */
export interface OtlpResource {
  "service.name": string;
  "service.version"?: string;
  [key: string]: AttributeValue | undefined;
}

export const SCOPE = { name: "a2a-node" } as const;

export function encodeExportRequest(
  spans: readonly FinishedSpan[],
  resource: OtlpResource,
  scopeVersion?: string,
): string {
  return JSON.stringify({
    resourceSpans: [
      {
        resource: { attributes: keyValues(resource) },
        scopeSpans: [
          { scope: { ...SCOPE, ...(scopeVersion ? { version: scopeVersion } : {}) }, spans: spans.map(encodeSpan) },
        ],
      },
    ],
  });
}

function encodeSpan(s: FinishedSpan) {
  return {
    traceId: s.context.traceId,
    spanId: s.context.spanId,
    ...(s.parentSpanId ? { parentSpanId: s.parentSpanId } : {}),
    ...(s.context.traceState?.length
      ? { traceState: s.context.traceState.map(([k, v]) => `${k}=${v}`).join(",") }
      : {}),
    // Bit 0: sampled (always, for a recorded span); bits 8-9: the parent is known to be remote or local.
    flags: 0x01 | (s.parentSpanId ? 0x100 | (s.parentRemote ? 0x200 : 0) : 0),
    name: s.name,
    kind: s.kind,
    startTimeUnixNano: msToNanos(s.startMs),
    endTimeUnixNano: msToNanos(s.endMs),
    attributes: keyValues(s.attributes),
    ...(s.droppedAttributes ? { droppedAttributesCount: s.droppedAttributes } : {}),
    status: s.status.message ? { code: s.status.code, message: s.status.message } : { code: s.status.code },
  };
}

/** Milliseconds (with a fraction) since the epoch, as the decimal string of nanoseconds. */
export function msToNanos(ms: number): string {
  const whole = Math.floor(ms);
  const nanosInMs = Math.round((ms - whole) * 1e6);
  return (BigInt(whole) * 1_000_000n + BigInt(nanosInMs)).toString();
}

function keyValues(attrs: Attributes | OtlpResource) {
  const out: { key: string; value: Record<string, unknown> }[] = [];
  for (const [key, v] of Object.entries(attrs)) {
    if (v === undefined) continue;
    out.push({ key, value: anyValue(v) });
  }
  return out;
}

function anyValue(v: AttributeValue): Record<string, unknown> {
  if (typeof v === "string") return { stringValue: v };
  if (typeof v === "boolean") return { boolValue: v };
  return Number.isInteger(v) ? { intValue: String(v) } : { doubleValue: v };
}
