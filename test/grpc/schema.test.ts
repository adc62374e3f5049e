/**
 * The schema the binary carries is the vendored spec proto's: the generated module is what the parser makes
 * of src/grpc/proto/a2a.proto, every type it names resolves, and the service has the spec's eleven methods.
 */
import { describe, expect, it } from "vitest";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { renderSchemaModule } from "../../src/grpc/schema-module";
import { METHODS, SCHEMA, methodAt } from "../../src/grpc/a2a-service";
import { parseProto, ProtoParseError } from "../../src/grpc/proto-parser";

const ROOT = join(import.meta.dirname, "..", "..");
const proto = readFileSync(join(ROOT, "src/grpc/proto/a2a.proto"), "utf8");

describe("the A2A schema", () => {
  it("a2a-schema.generated.ts is fresh (else: bun scripts/generate-grpc-schema.ts)", () => {
    expect(readFileSync(join(ROOT, "src/grpc/a2a-schema.generated.ts"), "utf8")).toBe(renderSchemaModule(proto));
  });

  it("names the pinned spec version and commit in the vendored file's header", () => {
    expect(proto.split("\n").slice(0, 3).join("\n")).toContain("v1.0.1/specification/a2a.proto");
    expect(proto).toContain("commit 3303592588e388e62e0f69f701af531d2f4e3991");
  });

  it("has the spec's methods (§5.3), the two streaming ones server-streaming", () => {
    expect([...METHODS.keys()].sort()).toEqual(
      [
        "CancelTask",
        "CreateTaskPushNotificationConfig",
        "DeleteTaskPushNotificationConfig",
        "GetExtendedAgentCard",
        "GetTask",
        "GetTaskPushNotificationConfig",
        "ListTaskPushNotificationConfigs",
        "ListTasks",
        "SendMessage",
        "SendStreamingMessage",
        "SubscribeToTask",
      ].map((m) => `/lf.a2a.v1.A2AService/${m}`),
    );
    expect([...METHODS.values()].filter((m) => m.serverStreaming).map((m) => m.name)).toEqual([
      "SendStreamingMessage",
      "SubscribeToTask",
    ]);
    expect(methodAt("/lf.a2a.v1.A2AService/SendMessage")).toMatchObject({
      input: "lf.a2a.v1.SendMessageRequest",
      output: "lf.a2a.v1.SendMessageResponse",
    });
    expect(methodAt("/a2a.v1.A2AService/SendMessage")).toBeUndefined();
  });

  it("every message and enum a field names is in the schema", () => {
    const missing: string[] = [];
    for (const m of Object.values(SCHEMA.messages)) {
      for (const f of m.fields) {
        const kind = f.kind === "map" ? f.mapValueKind : f.kind;
        if (kind === "message" && !SCHEMA.messages[f.type]) missing.push(`${m.name}.${f.name} -> ${f.type}`);
        if (kind === "enum" && !SCHEMA.enums[f.type]) missing.push(`${m.name}.${f.name} -> ${f.type}`);
      }
    }
    expect(missing).toEqual([]);
  });

  it("the parser refuses what it does not understand instead of skipping it", () => {
    expect(() => parseProto('syntax = "proto3"; message A { message B {} }')).toThrow(ProtoParseError);
    expect(() => parseProto('syntax = "proto3"; message A { reserved 2; }')).toThrow(ProtoParseError);
    expect(() => parseProto('syntax = "proto3"; message A { Missing b = 1; }')).toThrow(/unknown type "Missing"/);
    expect(() => parseProto("service S { rpc M(stream A) returns (A); } message A {}")).toThrow(/client streaming/);
  });
});
