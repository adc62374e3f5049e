/** Service parameters and call headers of the gRPC binding (spec §10.2). */
import { describe, expect, it } from "vitest";
import { deadlineMs, isProtobufGrpc, serviceMetadata, serviceParameters, timeoutHeader } from "../../src/grpc/metadata";

describe("service parameters", () => {
  it("reads a2a-version and every a2a-extensions entry, comma-separated or repeated", () => {
    expect(
      serviceParameters({
        "a2a-version": " 1.0 ",
        "a2a-extensions": ["https://a/1, https://b/2", "https://a/1,https://c/3"],
      }),
    ).toEqual({
      version: "1.0",
      extensions: ["https://a/1", "https://b/2", "https://c/3"],
    });
    expect(serviceParameters({})).toEqual({ version: null, extensions: [] });
    expect(serviceParameters({ "a2a-version": "", "a2a-extensions": " , " })).toEqual({
      version: null,
      extensions: [],
    });
  });

  it("writes them lowercase, extensions joined by commas", () => {
    expect(serviceMetadata({ version: "1.0", extensions: ["https://a/1", "https://b/2"] })).toEqual({
      "a2a-version": "1.0",
      "a2a-extensions": "https://a/1,https://b/2",
    });
    expect(serviceMetadata({})).toEqual({});
  });
});

describe("grpc-timeout", () => {
  it("reads each unit, and a malformed value as no deadline", () => {
    expect(deadlineMs({ "grpc-timeout": "5S" })).toBe(5000);
    expect(deadlineMs({ "grpc-timeout": "2M" })).toBe(120_000);
    expect(deadlineMs({ "grpc-timeout": "1H" })).toBe(3_600_000);
    expect(deadlineMs({ "grpc-timeout": "250m" })).toBe(250);
    expect(deadlineMs({ "grpc-timeout": "1500u" })).toBe(2);
    expect(deadlineMs({ "grpc-timeout": "7n" })).toBe(1);
    for (const bad of ["", "5", "S", "123456789S", "-1S", "1.5S"]) {
      expect(deadlineMs({ "grpc-timeout": bad })).toBeUndefined();
    }
    expect(deadlineMs({})).toBeUndefined();
  });

  it("writes at most 8 digits", () => {
    expect(timeoutHeader(30_000)).toBe("30000m");
    expect(timeoutHeader(10 ** 9)).toBe("1000000S");
    expect(deadlineMs({ "grpc-timeout": timeoutHeader(12_345) })).toBe(12_345);
  });
});

describe("content-type", () => {
  it("application/grpc and application/grpc+proto are protobuf calls; others are not", () => {
    for (const ok of ["application/grpc", "application/grpc+proto", "Application/GRPC; charset=x"]) {
      expect(isProtobufGrpc(ok)).toBe(true);
    }
    for (const no of [undefined, "application/json", "application/grpc+json", "application/grpc-web"]) {
      expect(isProtobufGrpc(no)).toBe(false);
    }
  });
});
