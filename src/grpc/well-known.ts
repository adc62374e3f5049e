/**
 * The imported types a2a.proto uses (google.protobuf Struct, Value, ListValue, Timestamp, Empty) and the
 * error model of the gRPC binding (google.rpc.Status, ErrorInfo, BadRequest, google.protobuf.Any), written out
 * from their published definitions:
 *   https://github.com/protocolbuffers/protobuf/blob/main/src/google/protobuf/{struct,timestamp,empty,any}.proto
 *   https://github.com/googleapis/googleapis/blob/master/google/rpc/{status,error_details}.proto
 * These files have been stable for years; only the fields below are read or written.
 */
import type { FieldDescriptor, Schema } from "./schema";

const f = (
  name: string,
  json: string,
  no: number,
  kind: FieldDescriptor["kind"],
  type: string,
  extra: Partial<FieldDescriptor> = {},
): FieldDescriptor => ({
  name,
  json,
  no,
  kind,
  type,
  ...(kind === "message" ? { presence: true as const } : {}),
  ...extra,
});

export const STRUCT = "google.protobuf.Struct";
export const VALUE = "google.protobuf.Value";
export const LIST_VALUE = "google.protobuf.ListValue";
export const TIMESTAMP = "google.protobuf.Timestamp";
export const EMPTY = "google.protobuf.Empty";
export const ANY = "google.protobuf.Any";
export const RPC_STATUS = "google.rpc.Status";
export const ERROR_INFO = "google.rpc.ErrorInfo";
export const BAD_REQUEST = "google.rpc.BadRequest";

const oneofValue = { presence: true as const, oneof: "kind" };

export const WELL_KNOWN: Schema = {
  messages: {
    [STRUCT]: {
      name: STRUCT,
      fields: [f("fields", "fields", 1, "map", VALUE, { mapKey: "string", mapValueKind: "message" })],
    },
    [VALUE]: {
      name: VALUE,
      fields: [
        f("null_value", "nullValue", 1, "enum", "google.protobuf.NullValue", oneofValue),
        f("number_value", "numberValue", 2, "scalar", "double", oneofValue),
        f("string_value", "stringValue", 3, "scalar", "string", oneofValue),
        f("bool_value", "boolValue", 4, "scalar", "bool", oneofValue),
        f("struct_value", "structValue", 5, "message", STRUCT, oneofValue),
        f("list_value", "listValue", 6, "message", LIST_VALUE, oneofValue),
      ],
    },
    [LIST_VALUE]: { name: LIST_VALUE, fields: [f("values", "values", 1, "message", VALUE, { repeated: true })] },
    [TIMESTAMP]: {
      name: TIMESTAMP,
      fields: [f("seconds", "seconds", 1, "scalar", "int64"), f("nanos", "nanos", 2, "scalar", "int32")],
    },
    [EMPTY]: { name: EMPTY, fields: [] },
    [ANY]: {
      name: ANY,
      fields: [f("type_url", "typeUrl", 1, "scalar", "string"), f("value", "value", 2, "scalar", "bytes")],
    },
    [RPC_STATUS]: {
      name: RPC_STATUS,
      fields: [
        f("code", "code", 1, "scalar", "int32"),
        f("message", "message", 2, "scalar", "string"),
        f("details", "details", 3, "message", ANY, { repeated: true }),
      ],
    },
    [ERROR_INFO]: {
      name: ERROR_INFO,
      fields: [
        f("reason", "reason", 1, "scalar", "string"),
        f("domain", "domain", 2, "scalar", "string"),
        f("metadata", "metadata", 3, "map", "string", { mapKey: "string", mapValueKind: "scalar" }),
      ],
    },
    [BAD_REQUEST]: {
      name: BAD_REQUEST,
      fields: [
        f("field_violations", "fieldViolations", 1, "message", "google.rpc.BadRequest.FieldViolation", {
          repeated: true,
        }),
      ],
    },
    "google.rpc.BadRequest.FieldViolation": {
      name: "google.rpc.BadRequest.FieldViolation",
      fields: [f("field", "field", 1, "scalar", "string"), f("description", "description", 2, "scalar", "string")],
    },
  },
  enums: { "google.protobuf.NullValue": { name: "google.protobuf.NullValue", values: { NULL_VALUE: 0 } } },
  services: {},
};
