/**
 * lf.a2a.v1.A2AService as the binding sees it: the spec's schema with the well-known types merged in, the
 * codec over it, and the method table keyed by the HTTP/2 `:path` a gRPC call arrives on
 * (`/lf.a2a.v1.A2AService/SendMessage`). The method names are the JSON-RPC binding's too (spec §5.3), so the
 * one request handler serves all three bindings by name.
 */
import { A2A_SCHEMA } from "./a2a-schema.generated";
import { ProtoCodec, type CodecOptions } from "./codec";
import { mergeSchemas, type MethodDescriptor, type Schema } from "./schema";
import { WELL_KNOWN } from "./well-known";

export const A2A_SERVICE = "lf.a2a.v1.A2AService";
export const A2A_PACKAGE = "lf.a2a.v1";

export const SCHEMA: Schema = mergeSchemas(A2A_SCHEMA, WELL_KNOWN);

export function a2aCodec(options?: CodecOptions): ProtoCodec {
  return new ProtoCodec(SCHEMA, options);
}

/** Every method of the service by its gRPC path. */
export const METHODS: ReadonlyMap<string, MethodDescriptor> = new Map(
  SCHEMA.services[A2A_SERVICE].methods.map((m) => [`/${A2A_SERVICE}/${m.name}`, m]),
);

/** The method a `:path` names, or undefined (the binding answers UNIMPLEMENTED). */
export function methodAt(path: string): MethodDescriptor | undefined {
  return METHODS.get(path);
}

export function pathOf(method: string): string {
  return `/${A2A_SERVICE}/${method}`;
}
