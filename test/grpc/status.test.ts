/**
 * Errors as gRPC statuses: the spec's table (v1.0.1 §5.4), google.rpc.Status with ErrorInfo in
 * grpc-status-details-bin, read back by our reader and by @a2a-js/sdk 1.3.0's, and grpc-message's escaping.
 */
import { describe, expect, it } from "vitest";
import { decodeErrorInfo, decodeStatus, encodeGrpcStatusDetails } from "@a2a-js/sdk/errors/grpc";
import { base64Decode } from "@bufbuild/protobuf/wire";
import { A2AError } from "../../src/protocol/errors";
import {
  decodeGrpcMessage,
  encodeGrpcMessage,
  errorTrailers,
  GrpcCode,
  grpcCodeOf,
  plainTrailers,
  readStatus,
} from "../../src/grpc/status";

describe("reason -> gRPC code", () => {
  it("is the spec's table for the nine A2A errors", () => {
    expect({
      TASK_NOT_FOUND: grpcCodeOf("TASK_NOT_FOUND"),
      TASK_NOT_CANCELABLE: grpcCodeOf("TASK_NOT_CANCELABLE"),
      PUSH_NOTIFICATION_NOT_SUPPORTED: grpcCodeOf("PUSH_NOTIFICATION_NOT_SUPPORTED"),
      UNSUPPORTED_OPERATION: grpcCodeOf("UNSUPPORTED_OPERATION"),
      CONTENT_TYPE_NOT_SUPPORTED: grpcCodeOf("CONTENT_TYPE_NOT_SUPPORTED"),
      INVALID_AGENT_RESPONSE: grpcCodeOf("INVALID_AGENT_RESPONSE"),
      EXTENDED_AGENT_CARD_NOT_CONFIGURED: grpcCodeOf("EXTENDED_AGENT_CARD_NOT_CONFIGURED"),
      EXTENSION_SUPPORT_REQUIRED: grpcCodeOf("EXTENSION_SUPPORT_REQUIRED"),
      VERSION_NOT_SUPPORTED: grpcCodeOf("VERSION_NOT_SUPPORTED"),
    }).toEqual({
      TASK_NOT_FOUND: "NOT_FOUND",
      TASK_NOT_CANCELABLE: "FAILED_PRECONDITION",
      PUSH_NOTIFICATION_NOT_SUPPORTED: "FAILED_PRECONDITION",
      UNSUPPORTED_OPERATION: "FAILED_PRECONDITION",
      CONTENT_TYPE_NOT_SUPPORTED: "INVALID_ARGUMENT",
      INVALID_AGENT_RESPONSE: "INTERNAL",
      EXTENDED_AGENT_CARD_NOT_CONFIGURED: "FAILED_PRECONDITION",
      EXTENSION_SUPPORT_REQUIRED: "FAILED_PRECONDITION",
      VERSION_NOT_SUPPORTED: "FAILED_PRECONDITION",
    });
  });

  it("an unknown method is UNIMPLEMENTED, bad params INVALID_ARGUMENT, anything unknown INTERNAL", () => {
    expect(grpcCodeOf(A2AError.methodNotFound("Nope").reason)).toBe("UNIMPLEMENTED");
    expect(grpcCodeOf(A2AError.invalidParams("x").reason)).toBe("INVALID_ARGUMENT");
    expect(grpcCodeOf("SOMETHING_NEW")).toBe("INTERNAL");
  });
});

describe("trailers", () => {
  const err = A2AError.taskNotFound("task-123");

  it("carry grpc-status, the escaped message and a google.rpc.Status with ErrorInfo", () => {
    const t = errorTrailers(err);
    expect(t["grpc-status"]).toBe(String(GrpcCode.NOT_FOUND));
    expect(t["grpc-message"]).toBe("Task not found: task-123");
    expect(t["grpc-status-details-bin"]).not.toMatch(/=$/);
    expect(readStatus(t)).toEqual({
      code: 5,
      message: "Task not found: task-123",
      errorInfo: { reason: "TASK_NOT_FOUND", domain: "a2a-protocol.org", metadata: { taskId: "task-123" } },
    });
  });

  it("are read by @a2a-js/sdk's decoder, and theirs by ours", () => {
    const bin = Buffer.from(base64Decode(errorTrailers(err)["grpc-status-details-bin"]));
    const status = decodeStatus(bin);
    expect(status.code).toBe(5);
    expect(status.message).toBe("Task not found: task-123");
    expect(status.details.map((d) => d.typeUrl)).toEqual(["type.googleapis.com/google.rpc.ErrorInfo"]);
    const info = decodeErrorInfo(status.details[0].value);
    expect({ reason: info.reason, domain: info.domain, metadata: info.metadata }).toEqual({
      reason: "TASK_NOT_FOUND",
      domain: "a2a-protocol.org",
      metadata: { taskId: "task-123" },
    });
    const theirs = encodeGrpcStatusDetails(9, "cannot cancel", "TASK_NOT_CANCELABLE", { taskId: "t" });
    expect(readStatus({ "grpc-status": "9", "grpc-status-details-bin": theirs.toString("base64") })).toEqual({
      code: 9,
      message: "cannot cancel",
      errorInfo: { reason: "TASK_NOT_CANCELABLE", domain: "a2a-protocol.org", metadata: { taskId: "t" } },
    });
  });

  it("with field violations for INVALID_ARGUMENT (google.rpc.BadRequest)", () => {
    const t = errorTrailers(A2AError.invalidParams("message.parts is required"), [
      { field: "message.parts", description: "at least one part" },
    ]);
    expect(readStatus(t).fieldViolations).toEqual([{ field: "message.parts", description: "at least one part" }]);
  });

  it("for the transport's own statuses have no details; garbage details leave code and message", () => {
    expect(readStatus(plainTrailers("UNIMPLEMENTED", "no such method"))).toEqual({
      code: 12,
      message: "no such method",
    });
    expect(readStatus({ "grpc-status": "13", "grpc-message": "x", "grpc-status-details-bin": "////" })).toEqual({
      code: 13,
      message: "x",
    });
    expect(readStatus({})).toEqual({ code: GrpcCode.UNKNOWN, message: "" });
  });
});

describe("grpc-message escaping", () => {
  it("percent-encodes what is not printable ASCII, and % itself", () => {
    expect(encodeGrpcMessage("ok 100%")).toBe("ok 100%25");
    expect(encodeGrpcMessage("café\n")).toBe("caf%C3%A9%0A");
    for (const s of ["ok 100%", "café\n", "日本語 😀", "%zz", ""]) {
      expect(decodeGrpcMessage(encodeGrpcMessage(s))).toBe(s);
    }
    // A stray "%" not followed by two hex digits is taken literally (gRPC: decode leniently).
    expect(decodeGrpcMessage("50%off")).toBe("50%off");
  });
});
