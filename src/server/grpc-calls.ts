import type { Http2Server } from "node:http2";
import { createGrpcServer, type GrpcCall, type GrpcHandler } from "../grpc/server";
import type { Logger } from "../log";
import { A2AError } from "../protocol/errors";
import { holdBytes } from "../rpc/answer-holds";
import type { CallContext, CallerIdentity } from "../rpc/caller";
import type { GrpcStreamItem, GrpcTransport } from "../rpc/grpc-transport";
import type { CallGate } from "./call-gate";

export interface GrpcCallsOptions {
  transport: GrpcTransport;
  /** The gate every A2A call passes: rate limit, answer budget, audit line, metrics (the other bindings' own). */
  gate: CallGate;
  log?: Logger;
  /** Largest request message (RESOURCE_EXHAUSTED above it): the node's max_body_bytes. */
  maxMessageBytes: number;
  /** The request message must arrive within this long (request_timeout_seconds). */
  requestTimeoutMs?: number;
}

/**
 * The gRPC binding's handler: each call passes the same gate as a JSON-RPC or HTTP+JSON request (rate limit,
 * answer budget, one audit line, metrics) and goes to the same method table through GrpcTransport. The caller
 * is the one the listener proved for the connection (src/grpc/server.ts reads it from the socket's tag).
 */
export function grpcHandler(o: Pick<GrpcCallsOptions, "transport" | "gate">): GrpcHandler<CallerIdentity> {
  const { transport, gate } = o;
  return async (call: GrpcCall<CallerIdentity>) => {
    const { caller } = call;
    const method = call.method.name;
    const wait = gate.rateLimit(caller, "grpc");
    if (wait > 0) {
      const limits = gate.limiter!;
      throw A2AError.rateLimited(wait, limits.perSecond, limits.burst);
    }
    const admission = await gate.admit(caller, "grpc");
    if (admission?.refused) throw admission.refused;
    const ctx = callContext(gate, call);
    const started = gate.started();
    let out: Awaited<ReturnType<GrpcTransport["handle"]>>;
    try {
      // A client that left while its call waited for room gets nothing built.
      if (call.signal.aborted) throw new A2AError(-32603, "the call was cancelled", "CANCELLED");
      out = await transport.handle(method, call.request, call.params.version, ctx);
    } catch (err) {
      gate.answered(ctx, "grpc", method, started, err instanceof A2AError ? err.code : -32603);
      throw err;
    } finally {
      admission?.done();
    }
    gate.answered(ctx, "grpc", method, started);
    const activated = ctx.extensions?.activated;
    if (activated?.length) call.responseMetadata = { "a2a-extensions": activated.join(",") };
    // Each answer message is counted against the caller's answer budget until the stream has taken it.
    call.countAnswer = (bytes) => holdBytes(ctx, bytes);
    if (out.kind === "unary") return out.result;
    gate.streamOpened();
    return closing(out.items, gate.streamClosed);
  };
}

/**
 * The call's context. This is where a call's metadata reaches the handler: the service parameters
 * (a2a-extensions) now; trace context (`traceparent` in call.metadata) is read here too when tracing comes.
 * Nothing in the metadata names the caller: that is the connection's.
 */
function callContext(gate: CallGate, call: GrpcCall<CallerIdentity>): CallContext {
  return gate.context(call.caller, call.params.extensions);
}

/** Calls `closed` once, when the stream ends, fails, or its client goes away. */
function closing(items: AsyncIterable<GrpcStreamItem>, closed?: () => void): AsyncIterable<GrpcStreamItem> {
  if (!closed) return items;
  let open = true;
  const close = () => {
    if (open) closed();
    open = false;
  };
  return {
    [Symbol.asyncIterator]() {
      const it = items[Symbol.asyncIterator]();
      return {
        async next() {
          try {
            const r = await it.next();
            if (r.done) close();
            return r;
          } catch (err) {
            close();
            throw err;
          }
        },
        async return() {
          close();
          await it.return?.();
          return { value: undefined, done: true };
        },
      };
    },
  };
}

/** An HTTP/2 server (no socket of its own) serving the A2A service; listeners hand it their h2 connections. */
export function createGrpcCalls(o: GrpcCallsOptions): Http2Server {
  return createGrpcServer<CallerIdentity>({
    handler: grpcHandler(o),
    maxMessageBytes: o.maxMessageBytes,
    requestTimeoutMs: o.requestTimeoutMs,
    onInternalError: (err, method) =>
      o.log?.error("a gRPC call failed", { method, reason: err instanceof Error ? err.message : String(err) }),
  });
}
