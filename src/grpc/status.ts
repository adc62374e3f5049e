/**
 * Errors in the gRPC binding: a gRPC status code, a message, and a google.rpc.Status whose details carry
 * google.rpc.ErrorInfo{reason, domain "a2a-protocol.org", metadata} (spec v1.0.1 §10.6), sent as the trailers
 * grpc-status, grpc-message and grpc-status-details-bin. The reason-to-code table is the spec's §5.4; the
 * reasons outside it (ours and JSON-RPC's) take the code that says the same thing.
 *
 * Known disagreement: the conformance kit (a2a-tck 1.0-dev, tck/requirements/base.py) expects UNIMPLEMENTED for
 * PushNotificationNotSupported, UnsupportedOperation and VersionNotSupported, where spec v1.0.1 and
 * @a2a-js/sdk 1.3.0 say FAILED_PRECONDITION. We follow the spec; see src/help/topics/grpc.md.
 */
import { base64Decode, base64Encode } from "@bufbuild/protobuf/wire";
import { a2aCodec } from "./a2a-service";
import { BAD_REQUEST, ERROR_INFO, RPC_STATUS } from "./well-known";

/** gRPC status codes (grpc/doc/statuscodes.md). */
export const GrpcCode = {
  OK: 0,
  CANCELLED: 1,
  UNKNOWN: 2,
  INVALID_ARGUMENT: 3,
  DEADLINE_EXCEEDED: 4,
  NOT_FOUND: 5,
  ALREADY_EXISTS: 6,
  PERMISSION_DENIED: 7,
  RESOURCE_EXHAUSTED: 8,
  FAILED_PRECONDITION: 9,
  ABORTED: 10,
  OUT_OF_RANGE: 11,
  UNIMPLEMENTED: 12,
  INTERNAL: 13,
  UNAVAILABLE: 14,
  DATA_LOSS: 15,
  UNAUTHENTICATED: 16,
} as const;
export type GrpcCodeName = keyof typeof GrpcCode;

export const ERROR_DOMAIN = "a2a-protocol.org";
export const ERROR_INFO_TYPE_URL = `type.googleapis.com/${ERROR_INFO}`;
const BAD_REQUEST_TYPE_URL = `type.googleapis.com/${BAD_REQUEST}`;

/** What an A2A error carries; src/protocol/errors.ts's A2AError has this shape. */
export interface A2AErrorLike {
  reason: string;
  message: string;
  metadata?: Record<string, string>;
}

const BY_REASON: Record<string, GrpcCodeName> = {
  // The spec's table (§5.4).
  TASK_NOT_FOUND: "NOT_FOUND",
  TASK_NOT_CANCELABLE: "FAILED_PRECONDITION",
  PUSH_NOTIFICATION_NOT_SUPPORTED: "FAILED_PRECONDITION",
  UNSUPPORTED_OPERATION: "FAILED_PRECONDITION",
  CONTENT_TYPE_NOT_SUPPORTED: "INVALID_ARGUMENT",
  INVALID_AGENT_RESPONSE: "INTERNAL",
  EXTENDED_AGENT_CARD_NOT_CONFIGURED: "FAILED_PRECONDITION",
  EXTENSION_SUPPORT_REQUIRED: "FAILED_PRECONDITION",
  VERSION_NOT_SUPPORTED: "FAILED_PRECONDITION",
  // JSON-RPC's own errors, as the spec's generic error model maps them (§3.3.2).
  PARSE_ERROR: "INVALID_ARGUMENT",
  INVALID_REQUEST: "INVALID_ARGUMENT",
  INVALID_PARAMS: "INVALID_ARGUMENT",
  // In gRPC an unknown method is UNIMPLEMENTED (grpc/doc/statuscodes.md), not NOT_FOUND as over HTTP.
  METHOD_NOT_FOUND: "UNIMPLEMENTED",
  // a2a-node's own reasons.
  RESOURCE_EXHAUSTED: "RESOURCE_EXHAUSTED",
  PERMISSION_DENIED: "PERMISSION_DENIED",
  UNAUTHENTICATED: "UNAUTHENTICATED",
  INTERNAL_ERROR: "INTERNAL",
};

export function grpcCodeOf(reason: string): GrpcCodeName {
  return BY_REASON[reason] ?? "INTERNAL";
}

/** One field a request got wrong, for google.rpc.BadRequest (INVALID_ARGUMENT answers). */
export interface FieldViolation {
  field: string;
  description: string;
}

export interface GrpcStatus {
  code: number;
  message: string;
  /** The ErrorInfo, when the status carried one in grpc-status-details-bin. */
  errorInfo?: { reason: string; domain: string; metadata?: Record<string, string> };
  fieldViolations?: FieldViolation[];
}

const codec = a2aCodec();

/** The google.rpc.Status bytes for an A2A error: its code, message, ErrorInfo (and BadRequest if given). */
export function statusDetails(err: A2AErrorLike, violations?: FieldViolation[]): Uint8Array {
  const info: Record<string, unknown> = { reason: err.reason, domain: ERROR_DOMAIN };
  if (err.metadata && Object.keys(err.metadata).length) info.metadata = err.metadata;
  const details = [{ typeUrl: ERROR_INFO_TYPE_URL, value: base64Encode(codec.encode(ERROR_INFO, info)) }];
  if (violations?.length) {
    const badRequest = codec.encode(BAD_REQUEST, { fieldViolations: violations });
    details.push({ typeUrl: BAD_REQUEST_TYPE_URL, value: base64Encode(badRequest) });
  }
  return codec.encode(RPC_STATUS, { code: GrpcCode[grpcCodeOf(err.reason)], message: err.message, details });
}

/** The trailers (or, for an error before any message, the trailers-only headers) that report an A2A error. */
export function errorTrailers(err: A2AErrorLike, violations?: FieldViolation[]): Record<string, string> {
  return {
    "grpc-status": String(GrpcCode[grpcCodeOf(err.reason)]),
    "grpc-message": encodeGrpcMessage(err.message),
    // Binary metadata is base64; gRPC asks senders to leave the padding off (receivers accept both).
    "grpc-status-details-bin": base64Encode(statusDetails(err, violations), "std_raw"),
  };
}

/** Trailers for a status that is the transport's own (no A2A reason): code and message only. */
export function plainTrailers(code: GrpcCodeName, message: string): Record<string, string> {
  return { "grpc-status": String(GrpcCode[code]), "grpc-message": encodeGrpcMessage(message) };
}

export const OK_TRAILERS: Readonly<Record<string, string>> = { "grpc-status": "0" };

/** Reads a call's outcome from its trailers (a client's view); a status without details has no errorInfo. */
export function readStatus(trailers: Record<string, string | string[] | undefined>): GrpcStatus {
  const one = (k: string) => {
    const v = trailers[k];
    return Array.isArray(v) ? v[0] : v;
  };
  const codeText = one("grpc-status");
  const code = codeText !== undefined && /^\d+$/.test(codeText) ? Number(codeText) : GrpcCode.UNKNOWN;
  const status: GrpcStatus = { code, message: decodeGrpcMessage(one("grpc-message") ?? "") };
  const bin = one("grpc-status-details-bin");
  if (!bin) return status;
  try {
    type Decoded = { message?: string; details?: { typeUrl?: string; value?: string }[] };
    const decoded = codec.decode(RPC_STATUS, base64Decode(bin)) as Decoded;
    for (const d of decoded.details ?? []) {
      if (d.typeUrl === ERROR_INFO_TYPE_URL && d.value !== undefined) {
        status.errorInfo = codec.decode(ERROR_INFO, base64Decode(d.value)) as GrpcStatus["errorInfo"];
      } else if (d.typeUrl === BAD_REQUEST_TYPE_URL && d.value !== undefined) {
        const badRequest = codec.decode(BAD_REQUEST, base64Decode(d.value)) as { fieldViolations?: FieldViolation[] };
        status.fieldViolations = badRequest.fieldViolations;
      }
    }
    if (!status.message && decoded.message) status.message = decoded.message;
  } catch {
    // Details that do not decode leave the code and message, which are what a caller must act on.
  }
  return status;
}

/**
 * grpc-message is percent-encoded UTF-8: bytes outside printable ASCII, and "%" itself, become %XX
 * (PROTOCOL-HTTP2.md), so any message survives an HTTP/2 header.
 */
export function encodeGrpcMessage(message: string): string {
  let out = "";
  for (const b of new TextEncoder().encode(message)) {
    const plain = b >= 0x20 && b <= 0x7e && b !== 0x25;
    out += plain ? String.fromCharCode(b) : `%${b.toString(16).toUpperCase().padStart(2, "0")}`;
  }
  return out;
}

export function decodeGrpcMessage(text: string): string {
  const bytes: number[] = [];
  for (let i = 0; i < text.length; i++) {
    const hex = text[i] === "%" ? text.slice(i + 1, i + 3) : "";
    if (/^[0-9A-Fa-f]{2}$/.test(hex)) {
      bytes.push(parseInt(hex, 16));
      i += 2;
    } else bytes.push(...new TextEncoder().encode(text[i]));
  }
  return new TextDecoder().decode(new Uint8Array(bytes));
}
