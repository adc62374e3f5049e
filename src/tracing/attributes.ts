/**
 * The span attributes a2a-node records, and the filter every attribute passes through. Names follow
 * OpenTelemetry's semantic conventions where one exists: HTTP and URL (stable), RPC (jsonrpc, grpc), GenAI
 * (development status: gen_ai.*). A2A has no published convention yet (no semconv draft, and the A2A SDKs
 * that trace use their own names), so its own facts live under `a2a.*`.
 *
 * The filter is an allow-list, not a deny-list: message text, file contents, tokens and header values can
 * only reach an exporter if someone adds their key here, which a test forbids for the names that would carry
 * them. A value that is not a string, a finite number or a boolean is dropped, and strings are cut short.
 */
export type AttributeValue = string | number | boolean;
export type Attributes = Record<string, AttributeValue>;

export const ATTR = {
  // HTTP server/client spans (semconv http.*, url.*, server.*, network.*)
  httpMethod: "http.request.method",
  httpStatus: "http.response.status_code",
  httpRoute: "http.route",
  urlScheme: "url.scheme",
  urlPath: "url.path",
  serverAddress: "server.address",
  serverPort: "server.port",
  networkProtocol: "network.protocol.version",
  errorType: "error.type",
  // RPC spans (semconv rpc.*): rpc.system is "jsonrpc" for the JSON-RPC binding, "grpc" for gRPC, "http" for REST
  rpcSystem: "rpc.system",
  rpcMethod: "rpc.method",
  rpcService: "rpc.service",
  jsonrpcVersion: "rpc.jsonrpc.version",
  jsonrpcErrorCode: "rpc.jsonrpc.error_code",
  grpcStatus: "rpc.grpc.status_code",
  // GenAI (semconv gen_ai.*, development): the model call and the agent invocation
  genAiOperation: "gen_ai.operation.name",
  genAiProvider: "gen_ai.provider.name",
  genAiRequestModel: "gen_ai.request.model",
  genAiResponseModel: "gen_ai.response.model",
  genAiInputTokens: "gen_ai.usage.input_tokens",
  genAiOutputTokens: "gen_ai.usage.output_tokens",
  genAiAgentName: "gen_ai.agent.name",
  genAiConversationId: "gen_ai.conversation.id",
  // A2A facts (our own namespace until a convention exists)
  a2aTaskId: "a2a.task.id",
  a2aContextId: "a2a.context.id",
  a2aTaskState: "a2a.task.state",
  a2aPeer: "a2a.peer.name",
  a2aCaller: "a2a.caller.name",
  a2aExecutor: "a2a.executor",
  a2aBinding: "a2a.binding",
  a2aProtocolVersion: "a2a.protocol.version",
  a2aQueueMs: "a2a.task.queue_ms",
  a2aInputWaitMs: "a2a.task.input_wait_ms",
  a2aPushAttempt: "a2a.push.attempt",
} as const;

const ALLOWED: ReadonlySet<string> = new Set(Object.values(ATTR));

/** Longer strings are cut: ids and names fit; anything longer is not what an attribute here is for. */
export const MAX_ATTRIBUTE_LENGTH = 256;

/** Is this key one we may record? */
export const isAllowedAttribute = (key: string): boolean => ALLOWED.has(key);

/**
 * Keeps the allowed keys with usable values; returns how many were dropped so a caller (or a test) can see
 * that something was refused rather than lost silently.
 */
export function filterAttributes(
  input: Record<string, unknown>,
  into: Attributes = {},
): { attributes: Attributes; dropped: number } {
  let dropped = 0;
  for (const key in input) if (!keepAttribute(key, input[key], into)) dropped++;
  return { attributes: into, dropped };
}

/** One attribute: stored in `into` when allowed and usable; false when dropped. */
export function keepAttribute(key: string, value: unknown, into: Attributes): boolean {
  const kept = ALLOWED.has(key) ? usable(value) : undefined;
  if (kept === undefined) return false;
  into[key] = kept;
  return true;
}

function usable(value: unknown): AttributeValue | undefined {
  if (typeof value === "string")
    return value.length > MAX_ATTRIBUTE_LENGTH ? value.slice(0, MAX_ATTRIBUTE_LENGTH) : value;
  if (typeof value === "number") return Number.isFinite(value) ? value : undefined;
  if (typeof value === "boolean") return value;
  return undefined;
}
