import { ATTR, type Attributes } from "../tracing/attributes";
import { outgoingHeaders } from "../tracing/propagation";
import { SpanKind, type Span } from "../tracing/span";
import type { Tracer } from "../tracing/tracer";

/**
 * What every client of a peer (JSON-RPC, HTTP+JSON, gRPC) does around one call so that the call joins the
 * trace of whatever made it: a span for the call, and the W3C headers (`traceparent`, `tracestate`) the
 * request carries, as HTTP headers or as gRPC metadata. One place, so the bindings cannot differ in what they
 * send or record.
 */
export interface CallTracing {
  /** Starts one call: its span begins now; `headers` go on the request; `end` closes the span. */
  begin(call: CallSite): TracedCall;
}

/** The call as the client knows it before sending: never its message, only names and ids. */
export interface CallSite {
  /** The method as sent on the wire: SendMessage, GetTask, ... (message/send for a v0.3 peer). */
  method: string;
  /** OpenTelemetry's rpc.system: jsonrpc, grpc, or http for the HTTP+JSON binding. */
  rpcSystem: "jsonrpc" | "grpc" | "http";
  /** The task the call names, when it names one (GetTask, CancelTask, SubscribeToTask, an answer). */
  taskId?: string;
}

export interface TracedCall {
  /** `traceparent` (and `tracestate`) for this call's request; empty when nothing traces. */
  readonly headers: Readonly<Record<string, string>>;
  /**
   * Ends the call's span. `result`: what the peer answered (a Task, a SendMessageResult, a stream item), read
   * for its task id, context id and state only. `error`: the call failed; only the error's name is recorded.
   */
  end(outcome?: { result?: unknown; error?: unknown }): void;
}

const NOTHING: TracedCall = { headers: {}, end: () => {} };

/** No trace: no headers, no span. What a client uses when nobody gave it one. */
export const UNTRACED: CallTracing = { begin: () => NOTHING };

/**
 * Calls traced as client spans under `parent` (the command's span, or the node's task span), each naming the
 * peer. With a tracer that records nothing, the headers still carry `parent`'s trace on.
 */
export function spanCallTracing(tracer: Tracer, parent: Span, peer?: { name?: string; url?: string }): CallTracing {
  const where: Attributes = {};
  if (peer?.name) where[ATTR.a2aPeer] = peer.name;
  if (peer?.url) {
    const u = new URL(peer.url);
    where[ATTR.serverAddress] = u.hostname.replace(/^\[|\]$/g, "");
    where[ATTR.serverPort] = Number(u.port || 443);
  }
  return {
    begin(call) {
      const span = tracer.startSpan(`a2a ${call.method}`, {
        kind: SpanKind.Client,
        parent,
        attributes: { ...where, [ATTR.rpcSystem]: call.rpcSystem, [ATTR.rpcMethod]: call.method },
      });
      if (call.taskId) span.setAttribute(ATTR.a2aTaskId, call.taskId);
      return {
        headers: outgoingHeaders(span),
        end(outcome) {
          if (outcome?.result !== undefined && span.recording) span.setAttributes(taskFacts(outcome.result));
          if (outcome?.error !== undefined) span.fail(errorName(outcome.error));
          span.end();
        },
      };
    },
  };
}

/**
 * Runs one request-and-answer call in a traced call: the span ends with the answer (its task facts) or the
 * error's name, and the error goes on to the caller unchanged.
 */
export async function traced<T>(
  tracing: CallTracing,
  call: CallSite,
  send: (headers: Readonly<Record<string, string>>) => Promise<T>,
): Promise<T> {
  const traced = tracing.begin(call);
  try {
    const result = await send(traced.headers);
    traced.end({ result });
    return result;
  } catch (error) {
    traced.end({ error });
    throw error;
  }
}

/**
 * A streamed call in a traced call: the span lasts from the request until the stream ends, breaks, or its reader
 * stops; it records the task the stream is about (its first item names it) and the last state it saw.
 */
export async function* tracedStream<T>(
  tracing: CallTracing,
  call: CallSite,
  open: (headers: Readonly<Record<string, string>>) => AsyncIterable<T>,
): AsyncIterable<T> {
  const traced = tracing.begin(call);
  const seen: Record<string, string> = {};
  let failure: unknown;
  try {
    for await (const item of open(traced.headers)) {
      Object.assign(seen, taskFacts(item));
      yield item;
    }
  } catch (error) {
    failure = error;
    throw error;
  } finally {
    traced.end(failure === undefined ? { result: seen } : { error: failure });
  }
}

/**
 * The task id, context id and state of an answer, whichever shape it has: a Task, `{task}` (SendMessage's
 * result, a stream's first item), `{statusUpdate}`, `{artifactUpdate}`, or facts already read (the keys below).
 * Nothing else of the answer is looked at: its messages and artifacts hold the text spans never carry.
 */
export function taskFacts(answer: unknown): Record<string, string> {
  const a = answer as Record<string, any> | null;
  if (typeof a !== "object" || a === null) return {};
  if (Object.keys(a).some((k) => k.startsWith("a2a."))) return a as Record<string, string>;
  const inner = a.task ?? a.statusUpdate ?? a.artifactUpdate ?? a;
  const out: Record<string, string> = {};
  const taskId = typeof inner?.taskId === "string" ? inner.taskId : inner?.id;
  if (typeof taskId === "string" && (a.task || a.statusUpdate || a.artifactUpdate || inner.status))
    out[ATTR.a2aTaskId] = taskId;
  if (typeof inner?.contextId === "string") out[ATTR.a2aContextId] = inner.contextId;
  if (typeof inner?.status?.state === "string") out[ATTR.a2aTaskState] = inner.status.state;
  return out;
}

/** The error's class name, never its message (an error's message may quote the peer). */
function errorName(error: unknown): string {
  const name = (error as { name?: unknown })?.name;
  return typeof name === "string" && name !== "" ? name : "Error";
}
