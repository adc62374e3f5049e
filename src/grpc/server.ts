/**
 * gRPC calls on an HTTP/2 server: each stream is read as one call of lf.a2a.v1.A2AService, its request decoded
 * to the JSON the request handler takes, the handler's answer (or each item of its stream) written back as
 * length-prefixed messages, and the outcome sent as trailers. It knows nothing of TLS: the listener that
 * accepted the connection proved who the caller is and tagged the socket with it (`tagCaller`) before
 * handing the connection to this server, so a call whose socket has no caller never reaches the handler.
 *
 * Made for `http2.createServer()` fed by `emit("connection", socket)` from our own listeners (see
 * src/help/topics/grpc.md for why not @grpc/grpc-js). Under Bun an Http2Session's `socket` is a wrapper over
 * the one that was emitted, which forwards property reads: hence a symbol property, not a WeakMap.
 */
import http2, { type IncomingHttpHeaders, type ServerHttp2Stream } from "node:http2";
import type { StreamItem } from "../protocol/types";
import { methodAt } from "./a2a-service";
import { DecodeError } from "./codec";
import { GrpcMessages } from "./convert";
import { DEFAULT_MAX_MESSAGE_BYTES, FramingError, MessageReader, frame } from "./framing";
import { deadlineMs, isProtobufGrpc, serviceParameters, type ServiceParameters } from "./metadata";
import type { MethodDescriptor } from "./schema";
import { errorTrailers, OK_TRAILERS, plainTrailers, type A2AErrorLike } from "./status";

const CALLER = Symbol.for("a2a-node.grpc.caller");

/** Marks a connection's socket with the caller its certificate (or the listener's rule) proved. */
export function tagCaller<C>(socket: object, caller: C): void {
  (socket as { [CALLER]?: C })[CALLER] = caller;
}

function callerOf<C>(stream: ServerHttp2Stream): C | undefined {
  return (stream.session?.socket as { [CALLER]?: C } | undefined)?.[CALLER];
}

export interface GrpcCall<C> {
  method: MethodDescriptor;
  /** The decoded request: the same object a JSON-RPC client sends as `params` for this method. */
  request: Record<string, unknown>;
  params: ServiceParameters;
  /**
   * Every request header of the call, as received (lowercase keys; pseudo-headers included): the metadata a
   * handler reads beyond the service parameters (e.g. `traceparent`). Never a source of identity.
   */
  metadata: Readonly<IncomingHttpHeaders>;
  caller: C;
  /** Aborted when the client cancels (RST_STREAM), the connection closes, or the deadline passes. */
  signal: AbortSignal;
  /** Set by the handler: response metadata sent with the answer's headers (e.g. the activated a2a-extensions). */
  responseMetadata?: Record<string, string>;
  /**
   * Set by the handler: counts each answer message's bytes while they wait for the client to read them, or
   * throws the refusal (an A2A error) when they do not fit; the server gives them back once they are written.
   */
  countAnswer?(bytes: number): { release(): void } | undefined;
}

/**
 * The request handler as the binding calls it: a unary method's answer, or, for the two streaming methods,
 * the items once the call is accepted (a refusal is a thrown error, answered before any message).
 */
export type GrpcHandler<C> = (call: GrpcCall<C>) => Promise<unknown>;

export interface GrpcServerOptions<C> {
  handler: GrpcHandler<C>;
  /** Largest request message read (RESOURCE_EXHAUSTED above it). */
  maxMessageBytes?: number;
  /**
   * The whole request (headers to the end of its one message) must arrive within this long once its stream
   * opened (a slow-request guard, like the HTTP/1.1 loop's request timeout); absent: no limit.
   */
  requestTimeoutMs?: number;
  /** A thrown error that is not an A2A error: logged by the caller of this module, answered INTERNAL. */
  onInternalError?(err: unknown, method: string): void;
}

/** An http2 server (no listener of its own) that serves the A2A service on every stream it is given. */
export function createGrpcServer<C>(options: GrpcServerOptions<C>): http2.Http2Server {
  const server = http2.createServer();
  server.on("stream", (stream: ServerHttp2Stream, headers: IncomingHttpHeaders) => serveCall(stream, headers, options));
  return server;
}

const messages = new GrpcMessages();

export function serveCall<C>(
  stream: ServerHttp2Stream,
  headers: IncomingHttpHeaders,
  options: GrpcServerOptions<C>,
): void {
  const reply = new Reply(stream);
  if (headers[":method"] !== "POST") return reply.http(405);
  // gRPC: a content-type that is not application/grpc gets HTTP 415 (PROTOCOL-HTTP2.md).
  if (!isProtobufGrpc(headers["content-type"])) return reply.http(415);
  const path = String(headers[":path"] ?? "");
  const method = methodAt(path);
  if (!method) return reply.fail(plainTrailers("UNIMPLEMENTED", `unknown method ${path}`));
  const caller = callerOf<C>(stream);
  if (caller === undefined) {
    return reply.fail(plainTrailers("UNAUTHENTICATED", "the connection has no verified caller"));
  }

  const abort = new AbortController();
  const ms = deadlineMs(headers);
  const timer =
    ms === undefined
      ? undefined
      : setTimeout(() => {
          abort.abort();
          reply.fail(plainTrailers("DEADLINE_EXCEEDED", `deadline of ${ms} ms exceeded`));
        }, ms);
  // A request trickled in (or never finished) holds a stream and its buffer: it must all arrive in time.
  let arriving =
    options.requestTimeoutMs === undefined
      ? undefined
      : setTimeout(() => {
          abort.abort();
          reply.fail(plainTrailers("DEADLINE_EXCEEDED", "the request message took too long to arrive"));
          stream.close(http2.constants.NGHTTP2_NO_ERROR);
        }, options.requestTimeoutMs);
  stream.on("close", () => {
    clearTimeout(timer);
    clearTimeout(arriving);
    abort.abort();
  });

  const reader = new MessageReader(options.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES);
  const received: Uint8Array[] = [];
  stream.on("data", (chunk: Buffer) => {
    if (reply.done) return;
    try {
      received.push(...reader.push(chunk));
    } catch (e) {
      if (!(e instanceof FramingError)) throw e;
      reply.fail(plainTrailers(e.code, e.message));
      // Stop reading what the caller still sends (as grpc-go does): the answer is queued ahead of the reset.
      stream.close(http2.constants.NGHTTP2_NO_ERROR);
    }
  });
  stream.on("end", () => {
    clearTimeout(arriving);
    arriving = undefined;
    if (reply.done) return;
    // Every A2A method takes exactly one request message.
    if (received.length !== 1 || reader.pending() > 0) {
      const what = reader.pending() > 0 ? "a truncated message" : `${received.length} request messages`;
      return reply.fail(plainTrailers("INVALID_ARGUMENT", `${method.name} takes one request message; got ${what}`));
    }
    let request: Record<string, unknown>;
    try {
      request = messages.decodeRequest(method, received[0]);
    } catch (e) {
      const why = e instanceof DecodeError ? e.message : String(e);
      return reply.fail(plainTrailers("INVALID_ARGUMENT", `the ${method.input} does not decode: ${why}`));
    }
    const call: GrpcCall<C> = {
      method,
      request,
      params: serviceParameters(headers),
      metadata: headers,
      caller,
      signal: abort.signal,
    };
    void run(call, reply, options).finally(() => clearTimeout(timer));
  });
}

async function run<C>(call: GrpcCall<C>, reply: Reply, options: GrpcServerOptions<C>): Promise<void> {
  const { method } = call;
  try {
    const answer = await options.handler(call);
    if (call.responseMetadata) reply.metadata = call.responseMetadata;
    if (reply.done) {
      if (method.serverStreaming) void (answer as AsyncIterable<StreamItem>)[Symbol.asyncIterator]().return?.();
      return;
    }
    if (!method.serverStreaming) {
      await reply.message(messages.encodeResponse(method, answer), call);
      return reply.finish(OK_TRAILERS);
    }
    const items = answer as AsyncIterable<StreamItem>;
    const iterator = items[Symbol.asyncIterator]();
    // A cancelled call stops the handler's stream rather than leaving it to run to its end.
    call.signal.addEventListener("abort", () => void iterator.return?.(), { once: true });
    try {
      reply.open();
      for (;;) {
        const next = await iterator.next();
        if (next.done || reply.done) break;
        await reply.message(messages.encodeStreamItem(method, next.value), call);
      }
    } finally {
      // However the stream ended (the client gone, an item that did not fit), its source is stopped.
      if (reply.done || call.signal.aborted) void iterator.return?.();
    }
    reply.finish(OK_TRAILERS);
  } catch (e) {
    if (reply.done) return;
    if (isA2AError(e)) return reply.fail(errorTrailers(e));
    options.onInternalError?.(e, method.name);
    // The message says nothing of the cause: the log has it; the caller gets no internals.
    reply.fail(plainTrailers("INTERNAL", "internal error"));
  }
}

function isA2AError(e: unknown): e is A2AErrorLike {
  return e instanceof Error && typeof (e as Partial<A2AErrorLike>).reason === "string";
}

/** The one answer of one stream: headers once, messages, then trailers (or trailers-only for an early error). */
class Reply {
  done = false;
  /** Response metadata the handler set, sent with the headers. */
  metadata: Record<string, string> = {};
  private opened = false;
  /** Answer bytes counted and not yet taken by the stream: given back when it closes, however it closes. */
  private readonly held = new Set<{ release(): void }>();

  constructor(private readonly stream: ServerHttp2Stream) {
    stream.once("close", () => {
      for (const h of this.held) h.release();
      this.held.clear();
    });
  }

  http(status: number): void {
    if (this.settle()) this.stream.respond({ ":status": status }, { endStream: true });
  }

  open(): void {
    if (this.opened || this.done || this.stream.destroyed) return;
    this.opened = true;
    this.stream.respond(
      { ...this.metadata, ":status": 200, "content-type": "application/grpc" },
      { waitForTrailers: true },
    );
  }

  /**
   * Writes one message, waiting for the peer to drain what it has not read yet; its bytes are counted
   * (call.countAnswer) until the stream has taken them. A message that does not fit throws the refusal.
   */
  async message(
    bytes: Uint8Array,
    call?: { countAnswer?(bytes: number): { release(): void } | undefined },
  ): Promise<void> {
    if (this.done || this.stream.destroyed) return;
    const held = call?.countAnswer?.(bytes.length);
    this.open();
    if (this.done || this.stream.destroyed) return held?.release();
    if (held) this.held.add(held);
    const written = this.stream.write(frame(bytes), () => {
      held?.release();
      if (held) this.held.delete(held);
    });
    if (!written) {
      await new Promise<void>((resolve) => {
        const settle = () => {
          this.stream.off("drain", settle);
          this.stream.off("close", settle);
          resolve();
        };
        this.stream.on("drain", settle);
        this.stream.on("close", settle);
      });
    }
  }

  finish(trailers: Record<string, string>): void {
    if (!this.opened) return this.fail(trailers);
    if (!this.settle()) return;
    this.stream.once("wantTrailers", () => this.stream.sendTrailers(trailers));
    this.stream.end();
  }

  /** An error: as trailers after messages already sent, else as a trailers-only response. */
  fail(trailers: Record<string, string>): void {
    if (this.opened) return this.finish(trailers);
    if (!this.settle()) return;
    this.stream.respond(
      { ...this.metadata, ":status": 200, "content-type": "application/grpc", ...trailers },
      { endStream: true },
    );
  }

  private settle(): boolean {
    if (this.done || this.stream.destroyed || this.stream.closed) {
      this.done = true;
      return false;
    }
    this.done = true;
    return true;
  }
}
