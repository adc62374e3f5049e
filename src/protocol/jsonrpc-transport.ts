import type { CallContext } from "./caller";
import { A2AError } from "./errors";
import type { A2ARequestHandler } from "./request-handler";
import { CURRENT_PROTOCOL_VERSION } from "./types";
import * as validate from "./validate";

type Id = string | number | null;
type Method = (params: unknown, ctx: CallContext) => Promise<unknown>;

/**
 * JSON-RPC 2.0 over whatever carries the bytes. Knows nothing of HTTP frameworks: it takes the request body
 * text, the A2A-Version the request named, and the verified caller, and returns the response body text.
 * Errors travel in the body (HTTP 200), as the A2A JSON-RPC binding says.
 */
export class JsonRpcTransport {
  private readonly methods: Record<string, Method>;

  constructor(handler: A2ARequestHandler) {
    this.methods = {
      SendMessage: (p, ctx) => handler.sendMessage(validate.sendMessageParams(p), ctx),
      GetTask: (p, ctx) => handler.getTask(validate.getTaskParams(p), ctx),
      ListTasks: (p, ctx) => handler.listTasks(validate.listTasksParams(p), ctx),
      CancelTask: (p, ctx) => handler.cancelTask(validate.cancelTaskParams(p), ctx),
    };
  }

  /**
   * @param version the raw A2A-Version header (or query parameter) value; null/empty means 0.3.
   */
  async handle(body: string, version: string | null, ctx: CallContext): Promise<string> {
    let request: unknown;
    try {
      request = JSON.parse(body);
    } catch {
      return errorBody(null, A2AError.parse("Invalid JSON payload: the request body is not valid JSON"));
    }
    if (Array.isArray(request)) return errorBody(null, A2AError.invalidRequest("batch requests are not supported"));
    if (typeof request !== "object" || request === null)
      return errorBody(null, A2AError.invalidRequest("the request must be a JSON-RPC 2.0 object"));
    const r = request as Record<string, unknown>;
    const id = r.id;
    if (id !== undefined && id !== null && typeof id !== "string" && typeof id !== "number")
      return errorBody(null, A2AError.invalidRequest("id must be a string, a number or null"));
    const rid: Id = (id as Id) ?? null;
    if (r.jsonrpc !== "2.0") return errorBody(rid, A2AError.invalidRequest('jsonrpc must be "2.0"'));
    if (typeof r.method !== "string" || r.method.length === 0)
      return errorBody(rid, A2AError.invalidRequest("method must be a non-empty string"));
    const versionError = checkVersion(version);
    if (versionError) return errorBody(rid, versionError);
    const method = Object.hasOwn(this.methods, r.method) ? this.methods[r.method] : undefined;
    if (!method) return errorBody(rid, A2AError.methodNotFound(r.method));
    try {
      const result = await method(r.params, ctx);
      return `{"jsonrpc":"2.0","id":${JSON.stringify(rid)},"result":${JSON.stringify(result)}}`;
    } catch (err) {
      if (err instanceof A2AError) return errorBody(rid, err);
      console.error(`a2a-node: ${r.method} failed:`, err);
      return errorBody(rid, A2AError.internal(`internal error while handling ${r.method}`));
    }
  }
}

/** v1.0 only for now: a missing header means v0.3, which this node does not speak yet. */
function checkVersion(version: string | null): A2AError | undefined {
  const v = (version ?? "").trim();
  if (v === CURRENT_PROTOCOL_VERSION || v === "1") return undefined;
  return A2AError.versionNotSupported(v === "" ? "0.3" : v);
}

export function errorBody(id: Id, err: A2AError): string {
  return JSON.stringify({ jsonrpc: "2.0", id, error: err.toJsonRpc() });
}
