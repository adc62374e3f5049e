import type { ClientHttp2Session, IncomingHttpHeaders } from "node:http2";
import { GrpcCallError, GrpcClient, type CallOptions } from "../grpc/client";
import { GrpcCode } from "../grpc/status";
import { CODE_OF_REASON, ERROR_DOMAIN, ERROR_INFO_TYPE } from "../protocol/errors";
import type {
  AgentCard,
  GetTaskParams,
  ListTasksParams,
  ListTaskPushNotificationConfigsResult,
  ListTasksResult,
  SendMessageParams,
  SendMessageResult,
  StreamResponse,
  Task,
  TaskPushNotificationConfig,
} from "../protocol/types";
import { CURRENT_PROTOCOL_VERSION } from "../protocol/types";
import { DEFAULT_PEER_TIMEOUTS, PeerTimeoutError, type PeerTimeouts } from "./deadlines";
import type { SessionOpener } from "./mtls-session";
import { ProtocolError, RemoteError, type PeerClient } from "./peer-client";

/**
 * A2A v1.0 over gRPC (spec §10: lf.a2a.v1.A2AService, protobuf over HTTP/2) as a PeerClient: the same params,
 * answers and errors as the JSON-RPC and HTTP+JSON clients, so `send` and `status` need not know which binding
 * a peer speaks. A gRPC error's ErrorInfo reason becomes the RemoteError code JSON-RPC would have given.
 *
 * Calls share one HTTP/2 session, opened (and its server's identity checked) by `open` at the first call and
 * again after the connection is lost. Each call is bounded as the other clients' are: a unary call by the
 * answer time (sent as grpc-timeout too), a stream by its silences.
 */
export class GrpcPeerClient implements PeerClient {
  readonly binding = "GRPC";
  readonly protocol = "1.0" as const;
  private session?: Promise<ClientHttp2Session>;
  private active = 0;
  private activated?: string[];

  constructor(
    /** Where the peer serves gRPC: https://HOST:PORT (the card's `host:port`, at the host the peer was reached). */
    readonly origin: string,
    private readonly open: SessionOpener,
    private readonly timeouts: PeerTimeouts = DEFAULT_PEER_TIMEOUTS,
    /** The `tenant` of the card's interface, sent in every request message when the card names one. */
    private readonly tenant?: string,
    /** A2A extensions to request of the peer (the a2a-extensions metadata of every call). */
    private readonly extensions: string[] = [],
  ) {}

  sendMessage(params: SendMessageParams, signal?: AbortSignal): Promise<SendMessageResult> {
    return this.call("SendMessage", params, signal);
  }

  /** The Task first, then its status and artifact updates as they happen, until it settles. */
  sendStreamingMessage(params: SendMessageParams, signal?: AbortSignal): AsyncIterable<StreamResponse> {
    return this.stream("SendStreamingMessage", params, signal);
  }

  /** The task as it is, then its updates while it runs (an ended task is refused: read it with GetTask). */
  subscribeToTask(id: string, signal?: AbortSignal, opened?: () => void): AsyncIterable<StreamResponse> {
    return this.stream("SubscribeToTask", { id }, signal, opened);
  }

  getTask(params: GetTaskParams, signal?: AbortSignal): Promise<Task> {
    return this.call("GetTask", params, signal);
  }

  listTasks(params: ListTasksParams, signal?: AbortSignal): Promise<ListTasksResult> {
    return this.call("ListTasks", params, signal);
  }

  cancelTask(id: string, signal?: AbortSignal): Promise<Task> {
    return this.call("CancelTask", { id }, signal);
  }

  /** GetExtendedAgentCard: the card the peer gives this caller (ExtendedAgentCardNotConfigured without one). */
  getExtendedAgentCard(signal?: AbortSignal): Promise<AgentCard> {
    return this.call("GetExtendedAgentCard", {}, signal);
  }

  createPushConfig(config: TaskPushNotificationConfig, signal?: AbortSignal): Promise<TaskPushNotificationConfig> {
    return this.call("CreateTaskPushNotificationConfig", config, signal);
  }

  getPushConfig(taskId: string, id: string, signal?: AbortSignal): Promise<TaskPushNotificationConfig> {
    return this.call("GetTaskPushNotificationConfig", { taskId, id }, signal);
  }

  async listPushConfigs(taskId: string, signal?: AbortSignal): Promise<ListTaskPushNotificationConfigsResult> {
    const r = await this.call<Partial<ListTaskPushNotificationConfigsResult>>(
      "ListTaskPushNotificationConfigs",
      { taskId },
      signal,
    );
    // proto3 leaves an empty list (and an empty token) off the wire; the JSON type always has them.
    return { configs: r.configs ?? [], nextPageToken: r.nextPageToken ?? "" };
  }

  async deletePushConfig(taskId: string, id: string, signal?: AbortSignal): Promise<void> {
    await this.call("DeleteTaskPushNotificationConfig", { taskId, id }, signal);
  }

  /** The extensions the peer's last answer said it activated (undefined before any answer). */
  activatedExtensions(): string[] | undefined {
    return this.activated;
  }

  /** Ends the HTTP/2 session, if one is open (calls under way are cut). */
  close(): void {
    const s = this.session;
    this.session = undefined;
    void s?.then((session) => session.close()).catch(() => undefined);
  }

  private async call<T>(method: string, params: unknown, signal?: AbortSignal): Promise<T> {
    const session = await this.begin();
    try {
      const options = this.options(signal);
      return (await new GrpcClient(session).call(method, this.withTenant(params), {
        ...options,
        timeoutMs: this.timeouts.answerMs,
      })) as T;
    } catch (err) {
      throw this.failure(method, err, signal);
    } finally {
      this.end();
    }
  }

  private async *stream(
    method: string,
    params: unknown,
    signal?: AbortSignal,
    opened?: () => void,
  ): AsyncIterable<StreamResponse> {
    const session = await this.begin();
    let open = false;
    const onOpen = () => {
      if (open) return;
      open = true;
      opened?.();
    };
    try {
      const options: CallOptions = { ...this.options(signal), idleMs: this.timeouts.streamIdleMs, onOpen };
      for await (const item of new GrpcClient(session).stream(method, this.withTenant(params), options)) {
        // A server that sends its headers with the first message has taken the call by then.
        onOpen();
        yield item;
      }
    } catch (err) {
      throw this.failure(method, err, signal);
    } finally {
      this.end();
    }
  }

  private options(signal?: AbortSignal): CallOptions {
    return {
      version: CURRENT_PROTOCOL_VERSION,
      extensions: this.extensions,
      signal,
      onHeaders: (h) => this.heard(h),
    };
  }

  /** The session for a call, opened if there is none (or it was lost); it keeps the process alive meanwhile. */
  private async begin(): Promise<ClientHttp2Session> {
    let pending = this.session;
    if (pending) {
      const current = await pending.catch(() => undefined);
      if (!current || current.closed || current.destroyed) pending = undefined;
    }
    if (!pending) {
      pending = this.open(this.origin).then((s) => {
        // A session lost (GOAWAY, a cut connection) is dropped: the next call opens another.
        const drop = () => {
          if (this.session === pending) this.session = undefined;
        };
        s.on("close", drop);
        s.on("goaway", drop);
        s.on("error", drop);
        return s;
      });
      this.session = pending;
      pending.catch(() => {
        if (this.session === pending) this.session = undefined;
      });
    }
    const session = await pending;
    this.active++;
    session.ref();
    return session;
  }

  /** A call ended: an idle session does not keep the process alive (a command ends with its last call). */
  private end(): void {
    if (--this.active > 0) return;
    void this.session?.then((s) => !s.destroyed && s.unref()).catch(() => undefined);
  }

  private heard(headers: IncomingHttpHeaders): void {
    const v = headers["a2a-extensions"];
    const text = Array.isArray(v) ? v.join(",") : (v ?? "");
    this.activated = text
      .split(",")
      .map((u) => u.trim())
      .filter(Boolean);
  }

  private withTenant(params: unknown): unknown {
    return this.tenant ? { ...(params as object), tenant: this.tenant } : params;
  }

  /**
   * A failed call as the other clients would have thrown it: an A2A error as a RemoteError with JSON-RPC's
   * code (from the ErrorInfo reason), our own bound as a PeerTimeoutError, any other status as a ProtocolError.
   */
  private failure(method: string, err: unknown, signal?: AbortSignal): unknown {
    if (!(err instanceof GrpcCallError)) return err;
    // Stopped by the caller: the same AbortError a fetch gives.
    if (err.status.code === GrpcCode.CANCELLED && signal?.aborted)
      return new DOMException(`${method} was aborted`, "AbortError");
    if (err.bound === "deadline") return new PeerTimeoutError("answer", this.origin, this.timeouts.answerMs / 1000);
    if (err.bound === "idle") return new PeerTimeoutError("stream", this.origin, this.timeouts.streamIdleMs / 1000);
    const reason = err.reason;
    const code = reason === undefined ? undefined : CODE_OF_REASON[reason];
    if (code !== undefined) {
      const info = err.status.errorInfo!;
      const details = [{ "@type": ERROR_INFO_TYPE, reason, domain: ERROR_DOMAIN, metadata: info.metadata ?? {} }];
      return new RemoteError(code, err.status.message, details);
    }
    const name = Object.keys(GrpcCode).find((k) => GrpcCode[k as keyof typeof GrpcCode] === err.status.code);
    return new ProtocolError(
      `${method}: the server answered gRPC status ${name ?? err.status.code}${reason ? ` (reason ${reason})` : " without an A2A error reason"}${err.status.message ? `: ${err.status.message}` : ""}`,
    );
  }
}
