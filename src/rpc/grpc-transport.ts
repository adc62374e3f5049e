import type { CallContext } from "./caller";
import { A2AError } from "../protocol/errors";
import type { StreamResponse } from "../protocol/types";
import { asA2AError, type MethodTable, type StreamEvent } from "./jsonrpc-transport";

/** One item of a gRPC server stream: a StreamResponse, and the task event number it came from (if any). */
export interface GrpcStreamItem {
  seq?: number;
  response: StreamResponse;
}

export type GrpcOutcome = { kind: "unary"; result: unknown } | { kind: "stream"; items: AsyncIterable<GrpcStreamItem> };

/**
 * A2A's gRPC binding (spec §10) over the same method table as JSON-RPC and HTTP+JSON: the gRPC method name is
 * the JSON-RPC method name, and a decoded request message is the params object a JSON-RPC client sends
 * (src/grpc/convert.ts), so validation, the request handler, caller scoping and errors are the other bindings'
 * own. Knows nothing of HTTP/2 or protobuf: a refusal is thrown as the A2AError the gRPC layer turns into a
 * status with ErrorInfo (src/grpc/status.ts), and a stream's failure is thrown from its next item.
 *
 * A missing `a2a-version` reads as 1.0: this service (`lf.a2a.v1`) is v1.0's, and v0.3 had no such package,
 * unlike JSON-RPC, where a missing version means 0.3. Streams carry no resume token: gRPC has no Last-Event-ID,
 * and the spec defines no metadata for one, so a client that re-subscribes after a cut stream gets the task as
 * it is now, then the events that follow (see src/help/topics/grpc.md).
 */
export class GrpcTransport {
  constructor(private readonly v1: MethodTable) {}

  async handle(
    method: string,
    request: Record<string, unknown>,
    version: string | null,
    ctx: CallContext,
  ): Promise<GrpcOutcome> {
    const v = (version ?? "1.0").trim();
    if (v !== "1.0" && v !== "1") throw A2AError.versionNotSupported(v);
    try {
      if (Object.hasOwn(this.v1.unary, method))
        return { kind: "unary", result: await this.v1.unary[method](request, ctx) };
      if (Object.hasOwn(this.v1.stream, method))
        return { kind: "stream", items: items(await this.v1.stream[method](request, ctx, undefined), method) };
    } catch (err) {
      throw asA2AError(err, method);
    }
    throw A2AError.methodNotFound(method);
  }
}

/** The table's events as stream items; a failure of the source is thrown as the A2A error a client is shown. */
function items(events: AsyncIterable<StreamEvent>, method: string): AsyncIterable<GrpcStreamItem> {
  return {
    [Symbol.asyncIterator]() {
      const it = events[Symbol.asyncIterator]();
      return {
        async next(): Promise<IteratorResult<GrpcStreamItem>> {
          let r: IteratorResult<StreamEvent>;
          try {
            r = await it.next();
          } catch (err) {
            throw asA2AError(err, method);
          }
          if (r.done) return { value: undefined, done: true };
          const seq = r.value.id === undefined ? undefined : Number(r.value.id);
          return { value: { seq, response: r.value.result as StreamResponse }, done: false };
        },
        // Passed straight through (as mapStream does): a client that leaves a quiet stream unsubscribes at once.
        async return(): Promise<IteratorResult<GrpcStreamItem>> {
          await it.return?.();
          return { value: undefined, done: true };
        },
      };
    },
  };
}
