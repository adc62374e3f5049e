/**
 * The one error type of the protocol layer. Each has its JSON-RPC code and, for v1.0, an ErrorInfo reason
 * carried in `error.data` (see the A2A spec, "Error handling").
 */
export const ERROR_INFO_TYPE = "type.googleapis.com/google.rpc.ErrorInfo";
export const ERROR_DOMAIN = "a2a-protocol.org";

export interface JsonRpcErrorObject {
  code: number;
  message: string;
  data?: unknown;
}

export class A2AError extends Error {
  constructor(
    readonly code: number,
    message: string,
    readonly reason: string,
    readonly metadata?: Record<string, string>,
  ) {
    super(message);
    this.name = "A2AError";
  }

  toJsonRpc(): JsonRpcErrorObject {
    const info: Record<string, unknown> = { "@type": ERROR_INFO_TYPE, reason: this.reason, domain: ERROR_DOMAIN };
    if (this.metadata) info.metadata = this.metadata;
    return { code: this.code, message: this.message, data: [info] };
  }

  static parse(message = "Invalid JSON payload") {
    return new A2AError(-32700, message, "PARSE_ERROR");
  }
  static invalidRequest(message = "Request payload validation error") {
    return new A2AError(-32600, message, "INVALID_REQUEST");
  }
  static methodNotFound(method: string) {
    return new A2AError(-32601, `Method not found: ${method}`, "METHOD_NOT_FOUND", { method });
  }
  static invalidParams(message: string) {
    return new A2AError(-32602, message, "INVALID_PARAMS");
  }
  static internal(message = "Internal error") {
    return new A2AError(-32603, message, "INTERNAL_ERROR");
  }
  static taskNotFound(id: string) {
    return new A2AError(-32001, `Task not found: ${id}`, "TASK_NOT_FOUND", { taskId: id });
  }
  static taskNotCancelable(id: string, state: string) {
    return new A2AError(-32002, `Task ${id} cannot be canceled: it is ${state}`, "TASK_NOT_CANCELABLE", { taskId: id });
  }
  static pushNotSupported() {
    return new A2AError(-32003, "Push notifications are not supported", "PUSH_NOTIFICATION_NOT_SUPPORTED");
  }
  static unsupportedOperation(message: string) {
    return new A2AError(-32004, message, "UNSUPPORTED_OPERATION");
  }
  static contentTypeNotSupported(message: string) {
    return new A2AError(-32005, message, "CONTENT_TYPE_NOT_SUPPORTED");
  }
  static invalidAgentResponse(message: string) {
    return new A2AError(-32006, message, "INVALID_AGENT_RESPONSE");
  }
  static extendedCardNotConfigured() {
    return new A2AError(-32007, "No extended agent card is configured", "EXTENDED_AGENT_CARD_NOT_CONFIGURED");
  }
  static versionNotSupported(version: string) {
    return new A2AError(
      -32009,
      `A2A protocol version '${version}' is not supported; this node speaks 1.0 (send header A2A-Version: 1.0)`,
      "VERSION_NOT_SUPPORTED",
      { version, supported: "1.0" },
    );
  }
  /**
   * The caller sent more requests than its rate limit allows; it may retry after `seconds`. The same code and
   * reason as a node at capacity (the A2A spec assigns back-pressure no code of its own), with the wait in
   * the ErrorInfo metadata for programs and in the message for people.
   */
  static rateLimited(seconds: number, perSecond: number, burst: number) {
    return new A2AError(
      -32603,
      `rate limit: retry after ${seconds} s (this node takes ${perSecond} requests per second from one peer, ${burst} at once)`,
      "RESOURCE_EXHAUSTED",
      { retry: "later", retryAfterSeconds: String(seconds), limit: "rate" },
    );
  }
  /** The node is at capacity; the caller should retry later. */
  static busy(message: string) {
    return new A2AError(-32603, message, "RESOURCE_EXHAUSTED", { retry: "later" });
  }
}
