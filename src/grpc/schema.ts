/**
 * The shape of a protobuf schema as the codec reads it: messages with numbered fields, enums, and services.
 * It is what a `.proto` file says, reduced to what encoding and decoding need; a2a-schema.generated.ts holds
 * the spec's a2a.proto in this form, well-known.ts the google.protobuf and google.rpc types it relies on.
 */

/** The scalar types the A2A proto and its well-known types use (enums travel as int32). */
export type Scalar = "string" | "bytes" | "bool" | "int32" | "uint32" | "int64" | "uint64" | "double" | "float";

export const SCALARS: readonly Scalar[] = [
  "string",
  "bytes",
  "bool",
  "int32",
  "uint32",
  "int64",
  "uint64",
  "double",
  "float",
];

export interface FieldDescriptor {
  /** The proto name (snake_case). */
  name: string;
  /** The ProtoJSON name (lowerCamelCase). */
  json: string;
  no: number;
  kind: "scalar" | "enum" | "message" | "map";
  /** A Scalar, or the fully-qualified name of an enum or message (for a map: of its value). */
  type: string;
  repeated?: true;
  /** Set when the value is on the wire even at its default: `optional`, a oneof member, or a message. */
  presence?: true;
  oneof?: string;
  /** Marked `(google.api.field_behavior) = REQUIRED` in the proto: a decoded answer always has it. */
  required?: true;
  /** For a map field: the key's scalar type and the kind of its value (`type` names the value). */
  mapKey?: Scalar;
  mapValueKind?: "scalar" | "enum" | "message";
}

export interface MessageDescriptor {
  name: string;
  fields: FieldDescriptor[];
}

export interface EnumDescriptor {
  name: string;
  values: Record<string, number>;
}

export interface MethodDescriptor {
  name: string;
  input: string;
  output: string;
  serverStreaming: boolean;
}

export interface ServiceDescriptor {
  name: string;
  methods: MethodDescriptor[];
}

export interface Schema {
  messages: Record<string, MessageDescriptor>;
  enums: Record<string, EnumDescriptor>;
  services: Record<string, ServiceDescriptor>;
}

/** Merges schemas (the A2A file and the well-known types it imports) into one the codec can resolve names in. */
export function mergeSchemas(...parts: Schema[]): Schema {
  const out: Schema = { messages: {}, enums: {}, services: {} };
  for (const p of parts) {
    Object.assign(out.messages, p.messages);
    Object.assign(out.enums, p.enums);
    Object.assign(out.services, p.services);
  }
  return out;
}

/** protoc's JSON name: underscores dropped, the letter after each capitalised. */
export function jsonName(protoName: string): string {
  return protoName.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());
}
