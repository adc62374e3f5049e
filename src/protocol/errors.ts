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

  /** The google.rpc.ErrorInfo both bindings carry: in JSON-RPC's `error.data`, in HTTP+JSON's `error.details`. */
  errorInfo(): Record<string, unknown> {
    const info: Record<string, unknown> = { "@type": ERROR_INFO_TYPE, reason: this.reason, domain: ERROR_DOMAIN };
    if (this.metadata) info.metadata = this.metadata;
    return info;
  }

  toJsonRpc(): JsonRpcErrorObject {
    return { code: this.code, message: this.message, data: [this.errorInfo()] };
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
  /** A message that did not request (A2A-Extensions) an extension the card marks required. */
  static extensionSupportRequired(missing: string[]) {
    return new A2AError(
      -32008,
      `this agent requires the A2A extension${missing.length > 1 ? "s" : ""} ${missing.join(", ")}: request ${missing.length > 1 ? "them" : "it"} in the A2A-Extensions header (its card lists them under capabilities.extensions)`,
      "EXTENSION_SUPPORT_REQUIRED",
      { extensions: missing.join(",") },
    );
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
  /**
   * The node's authorization policy does not let this peer make this call. JSON-RPC has no "forbidden" and the
   * A2A spec assigns none, so the code is -32000, the first of JSON-RPC's implementation-defined server errors
   * (A2A's own start at -32001), and the kind is in the ErrorInfo reason, PERMISSION_DENIED, the google.rpc.Code
   * HTTP+JSON answers with (HTTP 403). The message names the peer, the call and what the operator can change.
   */
  static permissionDenied(peer: string, method: string, skill?: string) {
    const what = skill === undefined ? method : `${method} with skill '${skill}'`;
    return new A2AError(
      PERMISSION_DENIED_CODE,
      `permission denied: peer '${peer}' may not call ${what} on this node (no [[authorize]] rule in its config.toml allows it); ` +
        `this node's operator can add '${peer}' to the peers of a rule whose methods include ${method}${skill === undefined ? "" : ` and whose skills include '${skill}'`}, then reload it with SIGHUP`,
      "PERMISSION_DENIED",
      skill === undefined ? { peer, method } : { peer, method, skill },
    );
  }
  /**
   * A limit of what one caller may hold on this node (stored bytes or tasks, webhooks, answers waiting to be
   * read) is reached, or the node's disk is low: RESOURCE_EXHAUSTED, as for a node at capacity, with the
   * setting in the ErrorInfo metadata (`limit`) and the message saying what frees room.
   */
  static quota(message: string, limit: string, more: Record<string, string> = {}) {
    return new A2AError(-32603, message, "RESOURCE_EXHAUSTED", { retry: "later", limit, ...more });
  }
  /** The node is at capacity; the caller should retry later. */
  static busy(message: string) {
    return new A2AError(-32603, message, "RESOURCE_EXHAUSTED", { retry: "later" });
  }
}

/**
 * The JSON-RPC code of each ErrorInfo reason: an HTTP+JSON error names its kind only by reason (several share
 * one HTTP status), so a client turns it back into the code its callers already handle.
 */
/** The JSON-RPC code of a call the authorization policy refused (see A2AError.permissionDenied). */
export const PERMISSION_DENIED_CODE = -32000;

export const CODE_OF_REASON: Readonly<Record<string, number>> = {
  PARSE_ERROR: -32700,
  INVALID_REQUEST: -32600,
  METHOD_NOT_FOUND: -32601,
  INVALID_PARAMS: -32602,
  INTERNAL_ERROR: -32603,
  RESOURCE_EXHAUSTED: -32603,
  PERMISSION_DENIED: PERMISSION_DENIED_CODE,
  TASK_NOT_FOUND: -32001,
  TASK_NOT_CANCELABLE: -32002,
  PUSH_NOTIFICATION_NOT_SUPPORTED: -32003,
  UNSUPPORTED_OPERATION: -32004,
  CONTENT_TYPE_NOT_SUPPORTED: -32005,
  INVALID_AGENT_RESPONSE: -32006,
  EXTENDED_AGENT_CARD_NOT_CONFIGURED: -32007,
  EXTENSION_SUPPORT_REQUIRED: -32008,
  VERSION_NOT_SUPPORTED: -32009,
};
