import type { A2AError } from "../protocol/errors";

/**
 * How A2A errors look in the HTTP+JSON binding: an HTTP status, and a google.rpc.Status body (AIP-193)
 * whose `details` carry the same ErrorInfo (reason, domain a2a-protocol.org, metadata) as JSON-RPC's
 * `error.data`. The statuses are the spec's table (§5.4, as of v1.0.1; v1.0.0 had 409 for
 * TaskNotCancelable, 415 for ContentTypeNotSupported, 502 for InvalidAgentResponse), each with the
 * google.rpc.Code that status stands for; errors outside the table follow the same code-to-status mapping.
 */
const BY_REASON: Record<string, readonly [number, string]> = {
  TASK_NOT_FOUND: [404, "NOT_FOUND"],
  TASK_NOT_CANCELABLE: [400, "FAILED_PRECONDITION"],
  PUSH_NOTIFICATION_NOT_SUPPORTED: [400, "FAILED_PRECONDITION"],
  UNSUPPORTED_OPERATION: [400, "FAILED_PRECONDITION"],
  CONTENT_TYPE_NOT_SUPPORTED: [400, "INVALID_ARGUMENT"],
  INVALID_AGENT_RESPONSE: [500, "INTERNAL"],
  EXTENDED_AGENT_CARD_NOT_CONFIGURED: [400, "FAILED_PRECONDITION"],
  EXTENSION_SUPPORT_REQUIRED: [400, "FAILED_PRECONDITION"],
  VERSION_NOT_SUPPORTED: [400, "FAILED_PRECONDITION"],
  PARSE_ERROR: [400, "INVALID_ARGUMENT"],
  INVALID_REQUEST: [400, "INVALID_ARGUMENT"],
  INVALID_PARAMS: [400, "INVALID_ARGUMENT"],
  METHOD_NOT_FOUND: [404, "NOT_FOUND"],
  // The node is at capacity (JSON-RPC: -32603 with this reason): HTTP's "retry later".
  RESOURCE_EXHAUSTED: [429, "RESOURCE_EXHAUSTED"],
  // The authorization policy refused the call (JSON-RPC: -32000 with this reason).
  PERMISSION_DENIED: [403, "PERMISSION_DENIED"],
  INTERNAL_ERROR: [500, "INTERNAL"],
};

/** Statuses the HTTP layer itself answers with, and the google.rpc.Code written beside them. */
const HTTP_ONLY: Record<number, string> = { 405: "UNIMPLEMENTED", 413: "INVALID_ARGUMENT", 415: "INVALID_ARGUMENT" };

export function httpStatusOf(err: A2AError): number {
  return (BY_REASON[err.reason] ?? BY_REASON.INTERNAL_ERROR)[0];
}

/**
 * The error's google.rpc.Status JSON. `status` overrides the spec's for answers that are HTTP's own (a body
 * over the limit: 413; a body that is not JSON: 415; a method the path does not take: 405); `error.code`
 * is always the HTTP status sent.
 */
export function statusBody(err: A2AError, status = httpStatusOf(err)): string {
  const mapped = BY_REASON[err.reason];
  const name = mapped && mapped[0] === status ? mapped[1] : (HTTP_ONLY[status] ?? mapped?.[1] ?? "UNKNOWN");
  return JSON.stringify({ error: { code: status, status: name, message: err.message, details: [err.errorInfo()] } });
}
