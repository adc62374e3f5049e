import type {
  AgentCard,
  GetTaskParams,
  ListTasksParams,
  ListTasksResult,
  SendMessageParams,
  SendMessageResult,
  Task,
} from "../protocol/types";
import { CURRENT_PROTOCOL_VERSION } from "../protocol/types";
import {
  fromV03ArtifactUpdate,
  fromV03Message,
  fromV03StatusUpdate,
  fromV03Task,
  toV03Message,
} from "../protocol/v03/convert";
import { readSse } from "../sse";
import {
  fetchAgentCard,
  ProtocolError,
  RemoteError,
  type FetchFn,
  type PeerClient,
  type PeerProtocol,
} from "./peer-client";
import type { StreamResponse } from "../protocol/types";
import { traced, tracedStream, UNTRACED, type CallTracing } from "./call-tracing";

/**
 * A minimal A2A v1.0 JSON-RPC client. It never imports server code; every request names the protocol
 * version it speaks (A2A-Version: 1.0).
 */
export class JsonRpcClient implements PeerClient {
  readonly binding = "JSONRPC";
  private nextId = 1;

  constructor(
    /** The JSON-RPC interface URL, e.g. https://beta:9443/ */
    readonly rpcUrl: string,
    private readonly fetchFn: FetchFn,
    /** Speak v0.3 (method names, shapes, no A2A-Version header) to a peer that only knows it. */
    readonly protocol: PeerProtocol = "1.0",
    /** The `tenant` of the card's interface, sent in every v1.0 request's params when the card names one. */
    private readonly tenant?: string,
    /** Each call's span and the trace headers its request carries (call-tracing.ts). */
    private readonly tracing: CallTracing = UNTRACED,
  ) {}

  async sendMessage(params: SendMessageParams, signal?: AbortSignal): Promise<SendMessageResult> {
    if (this.protocol === "1.0") return this.call("SendMessage", params, signal);
    const c = params.configuration;
    const result = await this.call<{ kind?: string }>(
      "message/send",
      {
        message: toV03Message(params.message),
        configuration: {
          blocking: c?.returnImmediately !== true,
          ...(c?.historyLength !== undefined ? { historyLength: c.historyLength } : {}),
        },
        ...(params.metadata ? { metadata: params.metadata } : {}),
      },
      signal,
    );
    return result.kind === "message"
      ? { message: fromV03Message(result, "result") }
      : { task: fromV03Task(result, "result") };
  }

  /**
   * SendStreamingMessage: the Task first, then its status and artifact updates as they happen, until it
   * settles. A v0.3 peer's events are converted to v1.0 shapes.
   */
  sendStreamingMessage(params: SendMessageParams, signal?: AbortSignal): AsyncIterable<StreamResponse> {
    const v1 = this.protocol === "1.0";
    const rpcParams = v1
      ? params
      : { message: toV03Message(params.message), ...(params.metadata ? { metadata: params.metadata } : {}) };
    return this.stream(v1 ? "SendStreamingMessage" : "message/stream", rpcParams, signal);
  }

  /**
   * SubscribeToTask: the task as it is, then its updates while it runs. A task that has already ended is
   * refused by the server (-32004: read it with GetTask); one waiting for input keeps the stream open.
   */
  subscribeToTask(id: string, signal?: AbortSignal, opened?: () => void): AsyncIterable<StreamResponse> {
    return this.stream(this.protocol === "1.0" ? "SubscribeToTask" : "tasks/resubscribe", { id }, signal, opened);
  }

  private stream(
    method: string,
    params: unknown,
    signal?: AbortSignal,
    opened?: () => void,
  ): AsyncIterable<StreamResponse> {
    return tracedStream(this.tracing, { method, rpcSystem: "jsonrpc", taskId: taskIdOf(params) }, (trace) =>
      this.openStream(method, params, trace, signal, opened),
    );
  }

  private async *openStream(
    method: string,
    params: unknown,
    trace: Readonly<Record<string, string>>,
    signal?: AbortSignal,
    opened?: () => void,
  ): AsyncIterable<StreamResponse> {
    const v1 = this.protocol === "1.0";
    const headers: Record<string, string> = {
      ...trace,
      "content-type": "application/json",
      accept: "text/event-stream",
    };
    if (v1) headers["a2a-version"] = CURRENT_PROTOCOL_VERSION;
    const res = await this.fetchFn(this.rpcUrl, {
      method: "POST",
      headers,
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: this.nextId++,
        method,
        params: v1 ? this.withTenant(params) : params,
      }),
      signal,
    });
    if (!(res.headers.get("content-type") ?? "").includes("text/event-stream")) {
      // A refusal comes back as a plain JSON-RPC error.
      const body = (await res.json().catch(() => ({}))) as { error?: unknown };
      const error = rpcError(body.error);
      if (error) throw error;
      throw new ProtocolError(`streaming call answered HTTP ${res.status} without an event stream`);
    }
    opened?.();
    for await (const data of readSse(res.body as ReadableStream<Uint8Array>)) {
      const msg = JSON.parse(data) as {
        result?: Record<string, unknown>;
        error?: { code: number; message: string; data?: unknown };
      };
      if (msg.error) throw new RemoteError(msg.error.code, msg.error.message, msg.error.data);
      const r = msg.result ?? {};
      if (v1) yield r as StreamResponse;
      else if (r.kind === "task") yield { task: fromV03Task(r, "result") };
      else if (r.kind === "message") yield { message: fromV03Message(r, "result") };
      else if (r.kind === "status-update") yield { statusUpdate: fromV03StatusUpdate(r, "result") };
      else if (r.kind === "artifact-update") yield { artifactUpdate: fromV03ArtifactUpdate(r, "result") };
    }
  }

  async getTask(params: GetTaskParams, signal?: AbortSignal): Promise<Task> {
    if (this.protocol === "1.0") return this.call("GetTask", params, signal);
    return fromV03Task(await this.call("tasks/get", params, signal), "result");
  }

  listTasks(params: ListTasksParams, signal?: AbortSignal): Promise<ListTasksResult> {
    return this.call("ListTasks", params, signal);
  }

  async cancelTask(id: string, signal?: AbortSignal): Promise<Task> {
    if (this.protocol === "1.0") return this.call("CancelTask", { id }, signal);
    return fromV03Task(await this.call("tasks/cancel", { id }, signal), "result");
  }

  getAgentCard(baseUrl: string, signal?: AbortSignal): Promise<AgentCard> {
    return fetchAgentCard(this.fetchFn, baseUrl, signal);
  }

  private withTenant(params: unknown): unknown {
    return this.tenant ? { ...(params as object), tenant: this.tenant } : params;
  }

  private call<T>(method: string, params: unknown, signal?: AbortSignal): Promise<T> {
    return traced(this.tracing, { method, rpcSystem: "jsonrpc", taskId: taskIdOf(params) }, (trace) =>
      this.exchange<T>(method, params, trace, signal),
    );
  }

  private async exchange<T>(
    method: string,
    params: unknown,
    trace: Readonly<Record<string, string>>,
    signal?: AbortSignal,
  ): Promise<T> {
    const id = this.nextId++;
    const headers: Record<string, string> = {
      ...trace,
      "content-type": "application/json",
      accept: "application/json",
    };
    if (this.protocol === "1.0") {
      headers["a2a-version"] = CURRENT_PROTOCOL_VERSION;
      params = this.withTenant(params);
    }
    const res = await this.fetchFn(this.rpcUrl, {
      method: "POST",
      headers,
      body: JSON.stringify({ jsonrpc: "2.0", id, method, params }),
      signal,
    });
    const text = await res.text();
    const notRpc = () =>
      new ProtocolError(
        `${method}: the server answered HTTP ${res.status} with something that is not JSON-RPC: ${text.slice(0, 120)}`,
      );
    let body: { result?: T; error?: unknown };
    try {
      body = JSON.parse(text);
    } catch {
      throw notRpc();
    }
    if (typeof body !== "object" || body === null) throw notRpc();
    if (body.error !== undefined) throw rpcError(body.error) ?? notRpc();
    if (!("result" in body)) throw new ProtocolError(`${method}: the answer has neither result nor error`);
    return body.result as T;
  }
}

/** The task a call's params name: GetTask's and CancelTask's id, or the task a message answers. */
function taskIdOf(params: unknown): string | undefined {
  const p = params as { id?: unknown; message?: { taskId?: unknown } } | undefined;
  const id = p?.id ?? p?.message?.taskId;
  return typeof id === "string" ? id : undefined;
}

/**
 * A JSON-RPC error object (a numeric code and a message) as a RemoteError; undefined for anything else, such
 * as the `{"error": "not found"}` of a web server that is no JSON-RPC endpoint.
 */
function rpcError(error: unknown): RemoteError | undefined {
  const e = error as { code?: unknown; message?: unknown; data?: unknown } | null | undefined;
  if (typeof e !== "object" || e === null || typeof e.code !== "number" || !Number.isInteger(e.code)) return undefined;
  return new RemoteError(e.code, typeof e.message === "string" ? e.message : "", e.data);
}
