import { readNamedSse } from "../sse";
import { CODE_OF_REASON, ERROR_INFO_TYPE } from "../protocol/errors";
import type {
  GetTaskParams,
  ListTasksParams,
  ListTasksResult,
  SendMessageParams,
  SendMessageResult,
  StreamResponse,
  Task,
} from "../protocol/types";
import { CURRENT_PROTOCOL_VERSION } from "../protocol/types";
import { ProtocolError, RemoteError, type FetchFn, type PeerClient } from "./peer-client";
import { traced, tracedStream, UNTRACED, type CallTracing } from "./call-tracing";

const A2A_JSON = "application/a2a+json";

/**
 * A minimal A2A v1.0 HTTP+JSON client (spec §11): the operations `send` and `status` use, over RESTful
 * routes. Errors (google.rpc.Status) come back as the same RemoteError the JSON-RPC client throws, its code
 * read from the ErrorInfo reason, so callers need not know which binding a peer speaks.
 */
export class HttpJsonClient implements PeerClient {
  readonly binding = "HTTP+JSON";
  readonly protocol = "1.0" as const;
  private readonly base: string;

  constructor(
    /** The interface URL from the peer's card, e.g. https://beta:9443; routes are joined to it. */
    baseUrl: string,
    private readonly fetchFn: FetchFn,
    /** The `tenant` of the card's interface: sent as the first path segment when the card names one. */
    tenant?: string,
    /** Each call's span and the trace headers its request carries (call-tracing.ts). */
    private readonly tracing: CallTracing = UNTRACED,
  ) {
    this.base = baseUrl.replace(/\/+$/, "") + (tenant ? `/${encodeURIComponent(tenant)}` : "");
  }

  sendMessage(params: SendMessageParams, signal?: AbortSignal): Promise<SendMessageResult> {
    return this.call("SendMessage", "POST", "/message:send", params, signal, params.message.taskId);
  }

  /** The Task first, then its status and artifact updates as they happen, until it settles. */
  sendStreamingMessage(params: SendMessageParams, signal?: AbortSignal): AsyncIterable<StreamResponse> {
    return this.stream("SendStreamingMessage", "/message:stream", params, signal, undefined, params.message.taskId);
  }

  /** The task as it is, then its updates while it runs (an ended task is refused: read it with GetTask). */
  subscribeToTask(id: string, signal?: AbortSignal, opened?: () => void): AsyncIterable<StreamResponse> {
    return this.stream("SubscribeToTask", `/tasks/${encodeURIComponent(id)}:subscribe`, {}, signal, opened, id);
  }

  private stream(
    operation: string,
    path: string,
    body: unknown,
    signal?: AbortSignal,
    opened?: () => void,
    taskId?: string,
  ): AsyncIterable<StreamResponse> {
    return tracedStream(this.tracing, { method: operation, rpcSystem: "http", taskId }, (trace) =>
      this.openStream(operation, path, body, trace, signal, opened),
    );
  }

  private async *openStream(
    operation: string,
    path: string,
    body: unknown,
    trace: Readonly<Record<string, string>>,
    signal?: AbortSignal,
    opened?: () => void,
  ): AsyncIterable<StreamResponse> {
    const res = await this.fetchFn(`${this.base}${path}`, {
      method: "POST",
      headers: { ...trace, ...this.headers(), "content-type": A2A_JSON, accept: "text/event-stream" },
      body: JSON.stringify(body),
      signal,
    });
    if (!(res.headers.get("content-type") ?? "").includes("text/event-stream")) throw await failure(operation, res);
    opened?.();
    for await (const e of readNamedSse(res.body as ReadableStream<Uint8Array>)) {
      const item = JSON.parse(e.data) as Record<string, unknown>;
      // An error after the stream began comes as an "error" event holding a google.rpc.Status.
      if (e.event === "error" || "error" in item) throw fromStatus(operation, 200, item);
      yield item as StreamResponse;
    }
  }

  getTask(params: GetTaskParams, signal?: AbortSignal): Promise<Task> {
    const q = params.historyLength === undefined ? "" : `?historyLength=${params.historyLength}`;
    return this.call("GetTask", "GET", `/tasks/${encodeURIComponent(params.id)}${q}`, undefined, signal, params.id);
  }

  listTasks(params: ListTasksParams, signal?: AbortSignal): Promise<ListTasksResult> {
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(params)) if (v !== undefined) q.set(k, String(v));
    const text = q.toString();
    return this.call("ListTasks", "GET", `/tasks${text ? `?${text}` : ""}`, undefined, signal);
  }

  cancelTask(id: string, signal?: AbortSignal): Promise<Task> {
    return this.call("CancelTask", "POST", `/tasks/${encodeURIComponent(id)}:cancel`, {}, signal, id);
  }

  private headers(): Record<string, string> {
    return { "a2a-version": CURRENT_PROTOCOL_VERSION, accept: `${A2A_JSON}, application/json` };
  }

  private call<T>(
    operation: string,
    method: string,
    path: string,
    body: unknown,
    signal?: AbortSignal,
    taskId?: string,
  ): Promise<T> {
    return traced(this.tracing, { method: operation, rpcSystem: "http", taskId }, (trace) =>
      this.exchange<T>(operation, method, path, body, trace, signal),
    );
  }

  private async exchange<T>(
    operation: string,
    method: string,
    path: string,
    body: unknown,
    trace: Readonly<Record<string, string>>,
    signal?: AbortSignal,
  ): Promise<T> {
    const headers = { ...trace, ...this.headers() };
    if (body !== undefined) headers["content-type"] = A2A_JSON;
    const res = await this.fetchFn(`${this.base}${path}`, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      signal,
    });
    if (!res.ok) throw await failure(operation, res);
    try {
      return (await res.json()) as T;
    } catch {
      throw new ProtocolError(`${operation}: the server answered HTTP ${res.status} with something that is not JSON`);
    }
  }
}

/** A refusal as the error the JSON-RPC client would throw for it; an answer that is no A2A error, as such. */
async function failure(operation: string, res: Response): Promise<Error> {
  const text = await res.text().catch(() => "");
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return new ProtocolError(
      `${operation}: the server answered HTTP ${res.status} with something that is not an A2A error: ${text.slice(0, 120)}`,
    );
  }
  return fromStatus(operation, res.status, body);
}

function fromStatus(operation: string, httpStatus: number, body: unknown): Error {
  const error = (body as { error?: { message?: unknown; details?: unknown } })?.error;
  const details = Array.isArray(error?.details) ? (error.details as Record<string, unknown>[]) : [];
  const info = details.find((d) => d?.["@type"] === ERROR_INFO_TYPE);
  const code = typeof info?.reason === "string" ? CODE_OF_REASON[info.reason] : undefined;
  const message = typeof error?.message === "string" ? error.message : "";
  if (code === undefined)
    return new ProtocolError(
      `${operation}: the server answered HTTP ${httpStatus} without an A2A error reason${message ? `: ${message}` : ""}`,
    );
  return new RemoteError(code, message, details);
}
