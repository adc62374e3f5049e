import { inexactNumber, MAX_JSON_DEPTH, scanJson } from "../protocol/json-depth";
import { holdAnswer } from "./answer-holds";
import type { AnswerHold, CallContext } from "./caller";
import { A2AError, type JsonRpcErrorObject } from "../protocol/errors";
import { mapStreamCatching } from "./streams";
import { a2aErrorOf } from "./refusals";

export type RpcId = string | number | null;
export type UnaryMethod = (params: unknown, ctx: CallContext) => Promise<unknown>;
/** One server-sent event: its `id` (a task event's sequence number, for Last-Event-ID) and JSON-RPC result. */
export interface StreamEvent {
  id?: string;
  result: unknown;
}
export type StreamMethod = (
  params: unknown,
  ctx: CallContext,
  lastEventId: string | undefined,
) => Promise<AsyncIterable<StreamEvent>>;

/** The methods of one protocol generation, and how its errors look on the wire. */
export interface MethodTable {
  unary: Record<string, UnaryMethod>;
  stream: Record<string, StreamMethod>;
  error(err: A2AError): JsonRpcErrorObject;
}

/**
 * What became of a request. `method` names the method when it is one this protocol generation serves (a closed
 * set, so metrics can be labelled by it); `error` is the JSON-RPC error code of an error answer.
 */
export type RpcOutcome =
  /** `hold`: the answer's bytes counted against the caller's answer budget, given back as they are written. */
  (
    | { kind: "json"; body: string; hold?: AnswerHold }
    /** A notification (a request with no "id" member): JSON-RPC 2.0 says it gets no response at all. */
    | { kind: "none" }
    /** Each `data` is a whole JSON-RPC response, ready for an SSE `data:` line (`hold` as for a JSON answer). */
    | { kind: "stream"; events: AsyncIterable<{ id?: string; data: string; hold?: AnswerHold }> }
  ) & { method?: string; error?: number };

export interface Generations {
  /** A2A-Version: 1.0 */
  v1: MethodTable;
  /** No A2A-Version (the spec reads a missing one as 0.3): v0.3 method names, and the legacy Hermes ones. */
  v03?: MethodTable;
}

/**
 * JSON-RPC 2.0 over whatever carries the bytes. Knows nothing of HTTP frameworks: it takes the request body
 * text, the A2A-Version the request named and the verified caller, picks the method table of that protocol
 * generation, and returns either a JSON body or a stream of responses. Errors travel in the body (HTTP 200),
 * as the A2A JSON-RPC binding says.
 */
export class JsonRpcTransport {
  constructor(private readonly generations: Generations) {}

  /**
   * @param version the raw A2A-Version header (or query parameter) value; null/empty means 0.3.
   * @param lastEventId the Last-Event-ID header of a reconnecting stream.
   */
  async handle(body: string, version: string | null, ctx: CallContext, lastEventId?: string): Promise<RpcOutcome> {
    const { v1 } = this.generations;
    let request: unknown;
    const scan = scanJson(body, MAX_JSON_DEPTH);
    if (scan.tooDeep)
      return json(
        v1,
        null,
        A2AError.invalidParams(
          `the request is nested deeper than ${MAX_JSON_DEPTH} levels of objects and arrays; no A2A request needs that`,
        ),
      );
    try {
      request = JSON.parse(body);
    } catch {
      return json(v1, null, A2AError.parse("Invalid JSON payload: the request body is not valid JSON"));
    }
    if (Array.isArray(request)) return json(v1, null, A2AError.invalidRequest("batch requests are not supported"));
    if (typeof request !== "object" || request === null)
      return json(v1, null, A2AError.invalidRequest("the request must be a JSON-RPC 2.0 object"));
    const r = request as Record<string, unknown>;
    const id = r.id;
    if (id !== undefined && id !== null && typeof id !== "string" && typeof id !== "number")
      return json(v1, null, A2AError.invalidRequest("id must be a string, a number or null"));
    const rid: RpcId = (id as RpcId) ?? null;
    if (r.jsonrpc !== "2.0") return json(v1, rid, A2AError.invalidRequest('jsonrpc must be "2.0"'));
    if (typeof r.method !== "string" || r.method.length === 0)
      return json(v1, rid, A2AError.invalidRequest("method must be a non-empty string"));
    const table = this.pick(version);
    if (!Object.hasOwn(r, "id"))
      return scan.inexact === undefined ? notify(table, r.method, r.params, ctx) : { kind: "none" };
    if (table instanceof A2AError) return json(v1, rid, table);
    // What the caller stores is what it gets back: a number JSON.parse has already changed is refused.
    if (scan.inexact !== undefined) {
      const served = Object.hasOwn(table.unary, r.method) || Object.hasOwn(table.stream, r.method);
      return json(table, rid, A2AError.invalidParams(inexactNumber(scan.inexact)), served ? r.method : undefined);
    }
    const method = r.method;
    try {
      if (Object.hasOwn(table.unary, method)) {
        const result = await table.unary[method](r.params, ctx);
        const { text, hold } = holdAnswer(
          ctx,
          `{"jsonrpc":"2.0","id":${JSON.stringify(rid)},"result":${JSON.stringify(result)}}`,
        );
        return { kind: "json", body: text, hold, method };
      }
      if (Object.hasOwn(table.stream, method)) {
        const events = await table.stream[method](r.params, ctx, lastEventId);
        return { kind: "stream", events: frame(events, rid, table, ctx), method };
      }
    } catch (err) {
      return json(table, rid, asA2AError(err, method), method);
    }
    return json(table, rid, A2AError.methodNotFound(method));
  }

  private pick(version: string | null): MethodTable | A2AError {
    const v = (version ?? "").trim();
    if (v === "1.0" || v === "1") return this.generations.v1;
    if (v === "" || v === "0.3") return this.generations.v03 ?? A2AError.versionNotSupported("0.3");
    return A2AError.versionNotSupported(v);
  }
}

/**
 * Runs a notification and answers nothing, whatever happens (an error included: "the client would not be
 * aware of any errors", JSON-RPC 2.0 §4.1). It is run to its end before the transport returns, so a client
 * cannot start unbounded work by sending notifications faster than they finish. A streaming method is started
 * and its stream closed at once: there is nobody to send the events to.
 */
async function notify(
  table: MethodTable | A2AError,
  method: string,
  params: unknown,
  ctx: CallContext,
): Promise<RpcOutcome> {
  if (table instanceof A2AError) return { kind: "none" };
  if (!Object.hasOwn(table.unary, method) && !Object.hasOwn(table.stream, method)) return { kind: "none" };
  try {
    if (Object.hasOwn(table.unary, method)) await table.unary[method](params, ctx);
    else await (await table.stream[method](params, ctx, undefined))[Symbol.asyncIterator]().return?.();
  } catch (err) {
    return { kind: "none", method, error: asA2AError(err, method).code };
  }
  return { kind: "none", method };
}

/**
 * Wraps each result as a JSON-RPC response, counted against the caller's answer budget; an error mid-stream
 * (an event over the budget included) becomes the stream's last item.
 */
function frame(
  events: AsyncIterable<StreamEvent>,
  id: RpcId,
  table: MethodTable,
  ctx: CallContext,
): AsyncIterable<{ id?: string; data: string; hold?: AnswerHold }> {
  const rid = JSON.stringify(id);
  return mapStreamCatching(
    events,
    (e) => {
      const { text, hold } = holdAnswer(ctx, `{"jsonrpc":"2.0","id":${rid},"result":${JSON.stringify(e.result)}}`);
      return { id: e.id, data: text, hold };
    },
    (err) => ({ data: JSON.stringify({ jsonrpc: "2.0", id, error: table.error(asA2AError(err, "stream")) }) }),
  );
}

/** Any failure as the A2A error a client is shown: an unexpected one is logged and becomes -32603. */
export function asA2AError(thrown: unknown, method: string): A2AError {
  const err = a2aErrorOf(thrown);
  if (err instanceof A2AError) return err;
  console.error(`a2a-node: ${method} failed:`, err);
  return A2AError.internal(`internal error while handling ${method}`);
}

function json(table: MethodTable, id: RpcId, err: A2AError, method?: string): RpcOutcome {
  return {
    kind: "json",
    body: JSON.stringify({ jsonrpc: "2.0", id, error: table.error(err) }),
    method,
    error: err.code,
  };
}

/** A v1.0 error body, for answers given before any method table is chosen (e.g. a body over the limit). */
export function errorBody(id: RpcId, err: A2AError): string {
  return JSON.stringify({ jsonrpc: "2.0", id, error: err.toJsonRpc() });
}
