/**
 * Between gRPC messages and a2a-node's JSON types (src/protocol/types.ts). Those types are the ProtoJSON of
 * a2a.proto, so most of the work is the codec's; what is left is which message each method takes and returns,
 * the two answers that have no JSON-RPC counterpart in shape (DeleteTaskPushNotificationConfig's Empty, a
 * stream item's envelope), and filling the members our types require where proto3 leaves defaults off the
 * wire.
 *
 * A decoded request is exactly the `params` a JSON-RPC client sends for the same method (the JSON-RPC binding's
 * params are the request message's ProtoJSON), so the server side hands it on as it is and the one validator
 * and method table serve both bindings.
 */
import type { StreamItem, StreamResponse } from "../protocol/types";
import { a2aCodec, methodAt, pathOf } from "./a2a-service";
import { DecodeError, EncodeError, type ProtoCodec } from "./codec";
import type { MethodDescriptor } from "./schema";

export class GrpcMessages {
  constructor(private readonly codec: ProtoCodec = a2aCodec()) {}

  /** Server side: a request message's bytes -> the JSON-RPC-shaped params for `method`. */
  decodeRequest(method: MethodDescriptor, bytes: Uint8Array): Record<string, unknown> {
    return this.codec.decode(method.input, bytes) as Record<string, unknown>;
  }

  /** Server side: the handler's answer -> the response message's bytes. */
  encodeResponse(method: MethodDescriptor, result: unknown): Uint8Array {
    // DeleteTaskPushNotificationConfig answers google.protobuf.Empty; the handler's answer is nothing.
    return this.codec.encode(method.output, result ?? {});
  }

  /** Server side: one item of SendStreamingMessage or SubscribeToTask -> a StreamResponse message. */
  encodeStreamItem(method: MethodDescriptor, item: StreamItem): Uint8Array {
    return this.codec.encode(method.output, item.response);
  }

  /** Client side: the request for `method` (by name) from the same params a JSON-RPC call would send. */
  encodeRequest(methodName: string, params: unknown): { method: MethodDescriptor; path: string; bytes: Uint8Array } {
    const path = pathOf(methodName);
    const method = methodAt(path);
    if (!method) throw new EncodeError(`lf.a2a.v1.A2AService has no method ${methodName}`);
    return { method, path, bytes: this.codec.encode(method.input, params ?? {}) };
  }

  /** Client side: a response message -> our JSON type, with every member the type requires present. */
  decodeResponse(method: MethodDescriptor, bytes: Uint8Array): unknown {
    if (method.output === "google.protobuf.Empty") {
      this.codec.decode(method.output, bytes);
      return undefined;
    }
    const decoded = this.codec.decode(method.output, bytes, { fillRequired: true });
    return method.serverStreaming ? streamResponse(decoded) : prune(method.output, decoded);
  }
}

/** A stream item names exactly one of its four members. */
function streamResponse(decoded: unknown): StreamResponse {
  const r = decoded as Record<string, unknown>;
  const keys = ["task", "message", "statusUpdate", "artifactUpdate"].filter((k) => r[k] !== undefined);
  if (keys.length !== 1) {
    throw new DecodeError(`a StreamResponse with ${keys.length ? keys.join(" and ") : "no payload"}`);
  }
  return { [keys[0]]: r[keys[0]] } as StreamResponse;
}

function prune(type: string, decoded: unknown): unknown {
  if (type === "lf.a2a.v1.SendMessageResponse") {
    const r = decoded as Record<string, unknown>;
    if (r.task === undefined && r.message === undefined) throw new DecodeError("a SendMessageResponse with no payload");
  }
  return decoded;
}
