import { holdAnswer } from "./answer-holds";
import type { AnswerHold, CallContext } from "./caller";
import { A2AError } from "../protocol/errors";
import { httpStatusOf, statusBody } from "./http-json-errors";
import { queryFields, type HttpMethod, type RouteMatch } from "./http-json-routes";
import { inexactNumber, MAX_JSON_DEPTH, scanJson } from "../protocol/json-depth";
import { asA2AError, type MethodTable, type StreamEvent } from "./jsonrpc-transport";
import { mapStreamCatching } from "./streams";

export interface HttpJsonRequest {
  method: string;
  /** The path, without the query. */
  path: string;
  /** The query string, without the "?". */
  query: string;
  body: string;
  /** The Content-Type's media type, lower-cased, when the request has one. */
  contentType?: string;
  /** The A2A-Version header (or query parameter); null when the request names none. */
  version: string | null;
  /** A reconnecting stream's Last-Event-ID. */
  lastEventId?: string;
}

/** One server-sent event: `data` is a StreamResponse, or a google.rpc.Status as the last event, named "error". */
export interface SseEvent {
  id?: string;
  event?: string;
  data: string;
  /** The event's bytes counted against the caller's answer budget (see answer-holds.ts). */
  hold?: AnswerHold;
}

/** `error`: the A2A error code of an error answer (for the metrics, as JSON-RPC's outcome carries it). */
export type HttpJsonOutcome =
  | { kind: "json"; status: number; body: string; allow?: string; error?: number; hold?: AnswerHold }
  | { kind: "stream"; events: AsyncIterable<SseEvent> };

const ROUTES_HINT =
  "the HTTP+JSON routes are /message:send, /message:stream, /tasks, /tasks/{id}, /tasks/{id}:cancel, /tasks/{id}:subscribe, /tasks/{id}/pushNotificationConfigs[/{configId}] and /extendedAgentCard";

/**
 * A2A's HTTP+JSON binding (spec §11) over the same method table as JSON-RPC: each route is turned into the
 * params object of its JSON-RPC method (path segments, query parameters or the body), and the answer or
 * error comes back as HTTP. Validation, the request handler, caller scoping and errors are therefore the
 * JSON-RPC binding's own; only the envelope differs. Knows nothing of the HTTP server.
 */
export class HttpJsonTransport {
  constructor(private readonly v1: MethodTable) {}

  async handle(
    match: Exclude<RouteMatch, undefined>,
    req: HttpJsonRequest,
    ctx: CallContext,
  ): Promise<HttpJsonOutcome> {
    if (match === "not-found")
      return failure(
        new A2AError(-32601, `no A2A operation at ${req.path}: ${ROUTES_HINT}`, "METHOD_NOT_FOUND", { path: req.path }),
      );
    if (match === "bad-path")
      return failure(A2AError.invalidRequest(`the path ${req.path} is not valid percent-encoding`));
    const operation = match.operations[req.method as HttpMethod];
    if (!operation) {
      const allow = Object.keys(match.operations).join(", ");
      const err = new A2AError(
        -32601,
        `${req.method} is not allowed on ${req.path}; use ${allow}`,
        "METHOD_NOT_FOUND",
        { method: req.method, allow },
      );
      return { ...failure(err, 405), allow };
    }
    const version = versionError(req.version);
    if (version) return failure(version);
    const fields = req.method === "POST" ? bodyFields(req) : fromQuery(req.query);
    if (fields instanceof A2AError)
      return failure(fields, fields.reason === "CONTENT_TYPE_NOT_SUPPORTED" ? 415 : undefined);
    for (const [name, value] of Object.entries(match.params)) {
      if (fields[name] !== undefined && fields[name] !== value)
        return failure(
          A2AError.invalidParams(`the request names ${name} '${String(fields[name])}' but its path names '${value}'`),
        );
      fields[name] = value;
    }
    try {
      if (Object.hasOwn(this.v1.unary, operation)) {
        const result = await this.v1.unary[operation](fields, ctx);
        const { text, hold } = holdAnswer(ctx, JSON.stringify(result));
        return { kind: "json", status: 200, body: text, hold };
      }
      const events = await this.v1.stream[operation](fields, ctx, req.lastEventId);
      return {
        kind: "stream",
        events: mapStreamCatching<StreamEvent, SseEvent>(
          events,
          (e) => {
            const { text, hold } = holdAnswer(ctx, JSON.stringify(e.result));
            return { id: e.id, data: text, hold };
          },
          (err) => ({ event: "error", data: statusBody(restWording(asA2AError(err, operation))) }),
        ),
      };
    } catch (err) {
      return failure(asA2AError(err, operation));
    }
  }
}

function failure(err: A2AError, status?: number): { kind: "json"; status: number; body: string; error: number } {
  const e = restWording(err);
  const code = status ?? httpStatusOf(e);
  return { kind: "json", status: code, body: statusBody(e, code), error: e.code };
}

/**
 * The checks name request fields as JSON-RPC sees them ("params.message.parts"); here they are body or
 * query fields, so the "params." goes.
 */
function restWording(err: A2AError): A2AError {
  if (err.reason !== "INVALID_PARAMS" || !err.message.includes("params.")) return err;
  return new A2AError(err.code, err.message.replace(/\bparams\./g, ""), err.reason, err.metadata);
}

/** This binding speaks v1.0 only: v0.3's REST paths were others (/v1/...), and no caller here needs them. */
function versionError(raw: string | null): A2AError | undefined {
  const v = (raw ?? "").trim();
  if (v === "1.0" || v === "1") return undefined;
  if (v !== "") return A2AError.versionNotSupported(v);
  const e = A2AError.versionNotSupported("0.3");
  return new A2AError(
    e.code,
    "no A2A-Version header: the spec reads that as 0.3, which this node speaks over JSON-RPC only; send A2A-Version: 1.0",
    e.reason,
    e.metadata,
  );
}

function bodyFields(req: HttpJsonRequest): Record<string, unknown> | A2AError {
  const type = req.contentType;
  if (type && type !== "application/json" && !type.endsWith("+json"))
    return A2AError.contentTypeNotSupported(
      `Content-Type ${type} is not JSON; send application/a2a+json or application/json`,
    );
  // CancelTask and SubscribeToTask need nothing but the path: their body may be empty.
  if (req.body.trim() === "") return {};
  const scan = scanJson(req.body, MAX_JSON_DEPTH);
  if (scan.tooDeep)
    return A2AError.invalidParams(
      `the request is nested deeper than ${MAX_JSON_DEPTH} levels of objects and arrays; no A2A request needs that`,
    );
  let parsed: unknown;
  try {
    parsed = JSON.parse(req.body);
  } catch {
    return A2AError.parse("Invalid JSON payload: the request body is not valid JSON");
  }
  // What the caller stores is what it gets back: a number JSON.parse has already changed is refused.
  if (scan.inexact !== undefined) return A2AError.invalidParams(inexactNumber(scan.inexact));
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed))
    return A2AError.invalidRequest("the request body must be a JSON object (the operation's request message)");
  return parsed as Record<string, unknown>;
}

function fromQuery(query: string): Record<string, unknown> | A2AError {
  const q = queryFields(query);
  if ("fields" in q) return q.fields;
  return A2AError.invalidParams(`query parameter ${q.bad} must be ${q.expected} (got '${q.value}')`);
}
