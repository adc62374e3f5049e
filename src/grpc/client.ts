/**
 * Calls lf.a2a.v1.A2AService over an HTTP/2 session the caller opened (TLS with the node's certificate to a
 * fleet peer, or h2c on loopback): the same params and answers as the JSON-RPC client, carried as protobuf.
 * Every call is bounded: a deadline is sent as grpc-timeout and enforced here too, and a stream ends when
 * the caller stops reading or aborts.
 */
import http2, { type ClientHttp2Session, type ClientHttp2Stream, type IncomingHttpHeaders } from "node:http2";
import type { StreamResponse } from "../protocol/types";
import { GrpcMessages } from "./convert";
import { DEFAULT_MAX_MESSAGE_BYTES, MessageReader, frame } from "./framing";
import { serviceMetadata, timeoutHeader } from "./metadata";
import type { MethodDescriptor } from "./schema";
import { GrpcCode, readStatus, type GrpcStatus } from "./status";

/** A call that ended with a status other than OK: the status, with its ErrorInfo when the server sent one. */
export class GrpcCallError extends Error {
  override name = "GrpcCallError";
  constructor(
    readonly status: GrpcStatus,
    /**
     * Set when this client ended the call itself, and why: its deadline passed, or a stream went silent
     * longer than `idleMs`. The status is then DEADLINE_EXCEEDED; no server said so.
     */
    readonly bound?: "deadline" | "idle",
  ) {
    super(status.message || `gRPC status ${status.code}`);
  }
  /** The A2A reason (TASK_NOT_FOUND...), when the status carried an ErrorInfo of the a2a-protocol.org domain. */
  get reason(): string | undefined {
    return this.status.errorInfo?.domain === "a2a-protocol.org" ? this.status.errorInfo.reason : undefined;
  }
}

export interface CallOptions {
  /**
   * Milliseconds the whole call may take (sent as grpc-timeout; DEADLINE_EXCEEDED after it). A stream that
   * lasts as long as its task goes without, and is bounded by `idleMs` instead.
   */
  timeoutMs?: number;
  /**
   * Milliseconds the call may go without hearing anything: no message, and no answer to the HTTP/2 PING sent
   * when it has been quiet a third of that. A server holds a stream open between a task's events with no
   * keep-alive message of gRPC's own, so a live connection answers the PING and a dead one does not.
   */
  idleMs?: number;
  /** Called once, when the server took the call: its answer headers came without a status (not a refusal). */
  onOpen?: () => void;
  /** The answer headers, as they came (a server names the extensions it activated in them). */
  onHeaders?: (headers: IncomingHttpHeaders) => void;
  version?: string;
  extensions?: string[];
  signal?: AbortSignal;
  maxMessageBytes?: number;
}

const messages = new GrpcMessages();

export class GrpcClient {
  constructor(private readonly session: ClientHttp2Session) {}

  /** A unary method: its one answer, in our JSON type (undefined for DeleteTaskPushNotificationConfig). */
  async call(methodName: string, params: unknown, options: CallOptions): Promise<unknown> {
    let answer: unknown;
    let count = 0;
    for await (const m of this.open(methodName, params, options, false)) {
      answer = m;
      count++;
    }
    if (count !== 1) {
      const message = `${methodName} answered ${count} messages, not one`;
      throw new GrpcCallError({ code: GrpcCode.INTERNAL, message });
    }
    return answer;
  }

  /** SendStreamingMessage or SubscribeToTask: the items as they come; ends with the call. */
  stream(methodName: string, params: unknown, options: CallOptions): AsyncIterable<StreamResponse> {
    return this.open(methodName, params, options, true) as AsyncIterable<StreamResponse>;
  }

  private async *open(
    methodName: string,
    params: unknown,
    options: CallOptions,
    streaming: boolean,
  ): AsyncGenerator<unknown> {
    const { method, path, bytes } = messages.encodeRequest(methodName, params);
    if (method.serverStreaming !== streaming) {
      throw new TypeError(`${methodName} is ${method.serverStreaming ? "" : "not "}a streaming method`);
    }
    const req = this.session.request({
      ":method": "POST",
      ":path": path,
      "content-type": "application/grpc",
      te: "trailers",
      ...(options.timeoutMs === undefined ? {} : { "grpc-timeout": timeoutHeader(options.timeoutMs) }),
      ...serviceMetadata(options),
    });
    req.end(frame(bytes));
    yield* readCall(this.session, req, method, options);
  }
}

/** The answer messages of one call, then its status: OK ends the iteration, anything else throws. */
async function* readCall(
  session: ClientHttp2Session,
  req: ClientHttp2Stream,
  method: MethodDescriptor,
  options: CallOptions,
): AsyncGenerator<unknown> {
  const reader = new MessageReader(options.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES);
  const queue: Uint8Array[] = [];
  let headers: IncomingHttpHeaders = {};
  let trailers: IncomingHttpHeaders | undefined;
  let failure: Error | undefined;
  let ended = false;
  let wake: (() => void) | undefined;
  const notify = () => {
    wake?.();
    wake = undefined;
  };
  const fail = (e: Error) => {
    failure ??= e;
    req.close(http2.constants.NGHTTP2_CANCEL);
    notify();
  };
  const late = (bound: "deadline" | "idle", ms: number) =>
    new GrpcCallError(
      {
        code: GrpcCode.DEADLINE_EXCEEDED,
        message: bound === "deadline" ? `no answer within ${ms} ms` : `nothing heard for ${ms} ms`,
      },
      bound,
    );
  const timeoutMs = options.timeoutMs;
  const timer = timeoutMs === undefined ? undefined : setTimeout(() => fail(late("deadline", timeoutMs)), timeoutMs);
  const idle =
    options.idleMs === undefined ? undefined : silenceWatch(session, options.idleMs, (ms) => fail(late("idle", ms)));
  const onAbort = () => fail(new GrpcCallError({ code: GrpcCode.CANCELLED, message: "cancelled" }));
  options.signal?.addEventListener("abort", onAbort, { once: true });
  req.on("response", (h) => {
    headers = h;
    idle?.heard();
    options.onHeaders?.(h);
    if (h["grpc-status"] === undefined) options.onOpen?.();
  });
  req.on("trailers", (t) => (trailers = t));
  req.on("data", (chunk: Buffer) => {
    idle?.heard();
    try {
      queue.push(...reader.push(chunk));
    } catch (e) {
      return fail(e as Error);
    }
    notify();
  });
  req.on("end", () => {
    ended = true;
    notify();
  });
  req.on("close", () => {
    ended = true;
    notify();
  });
  req.on("error", (e) => fail(e));
  // A connection that fails (its TLS handshake refused, say) fails the call with its own error.
  const onSessionError = (e: Error) => fail(e);
  session.on("error", onSessionError);
  try {
    for (;;) {
      if (failure) throw failure;
      const next = queue.shift();
      if (next) {
        yield messages.decodeResponse(method, next);
        continue;
      }
      if (ended) break;
      await new Promise<void>((r) => (wake = r));
    }
    if (failure) throw failure;
    const status = headers[":status"];
    if (status === undefined && !trailers) {
      throw new GrpcCallError({ code: GrpcCode.UNAVAILABLE, message: "the connection closed before any answer" });
    }
    if (status !== undefined && Number(status) !== 200) {
      throw new GrpcCallError({ code: GrpcCode.UNKNOWN, message: `HTTP ${status} from a gRPC endpoint` });
    }
    // A trailers-only answer carries its status in the headers.
    const outcome = readStatus({ ...headers, ...(trailers ?? {}) } as Record<string, string>);
    if (!trailers && headers["grpc-status"] === undefined) {
      throw new GrpcCallError({ code: GrpcCode.INTERNAL, message: "the call ended without a status" });
    }
    if (outcome.code !== GrpcCode.OK) throw new GrpcCallError(outcome);
  } finally {
    clearTimeout(timer);
    idle?.stop();
    session.off("error", onSessionError);
    options.signal?.removeEventListener("abort", onAbort);
    if (!req.closed) req.close(http2.constants.NGHTTP2_CANCEL);
  }
}

/**
 * Watches a call for silence: `heard` when anything comes; after a third of `idleMs` of quiet, a PING asks
 * whether the connection is alive (its answer counts as heard); `cut` once nothing was heard for `idleMs`.
 */
function silenceWatch(session: ClientHttp2Session, idleMs: number, cut: (ms: number) => void) {
  let last = performance.now();
  const tick = Math.max(10, Math.floor(idleMs / 3));
  const timer = setInterval(() => {
    const quiet = performance.now() - last;
    if (quiet >= idleMs) return cut(idleMs);
    if (quiet >= tick && !session.destroyed) {
      try {
        session.ping((err) => {
          if (!err) last = performance.now();
        });
      } catch {
        // A session that cannot send a PING (closing) is left to the bound.
      }
    }
  }, tick);
  return {
    heard: () => (last = performance.now()),
    stop: () => clearInterval(timer),
  };
}
