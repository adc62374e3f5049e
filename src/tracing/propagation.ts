import type { Attributes } from "./attributes";
import { SpanKind, type Span } from "./span";
import { extractContext, injectContext } from "./trace-context";
import { hasValidContext, type SpanOptions, type Tracer } from "./tracer";

/**
 * The three moves the wiring makes at each boundary, so bindings, executors and the client do not handle
 * headers or span ends themselves: continue a caller's trace, pass ours on, and wrap one call in a span.
 */

/** A server span continuing the trace in the request's headers; a new trace when they carry none (or a bad one). */
export function serverSpan(
  tracer: Tracer,
  name: string,
  header: (name: string) => string | null | undefined,
  attributes?: Attributes,
): Span {
  return tracer.startSpan(name, { kind: SpanKind.Server, parent: extractContext(header), attributes });
}

/** The headers an outgoing call made under `span` carries: none for the no-op's span, which has no trace. */
export function outgoingHeaders(span: Span): Record<string, string> {
  const out: Record<string, string> = {};
  if (hasValidContext(span)) injectContext(span.context, (k, v) => (out[k] = v));
  return out;
}

/**
 * Runs `fn` in a span that ends when it settles. A throw marks the span failed with the error's name only:
 * an error's message may quote a peer's or a model's words, which spans never carry.
 */
export async function inSpan<T>(
  tracer: Tracer,
  name: string,
  options: SpanOptions,
  fn: (span: Span) => Promise<T>,
): Promise<T> {
  const span = tracer.startSpan(name, options);
  try {
    return await fn(span);
  } catch (err) {
    span.fail((err as Error)?.name || "Error");
    throw err;
  } finally {
    span.end();
  }
}
