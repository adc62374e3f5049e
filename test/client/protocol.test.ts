import { describe, expect, it } from "vitest";
import { A2AClient, protocolOf } from "../../src/client/a2a-client";

describe("protocolOf (which generation a peer's card says it speaks)", () => {
  it("reads a v1.0 card with a JSON-RPC 1.x interface as 1.0", () => {
    expect(protocolOf({ supportedInterfaces: [{ url: "https://b/", protocolBinding: "JSONRPC", protocolVersion: "1.0" }] })).toBe("1.0");
  });
  it("reads a v0.3 card (protocolVersion 0.3.x, no supportedInterfaces) as 0.3", () => {
    expect(protocolOf({ protocolVersion: "0.3.0", url: "https://b/", preferredTransport: "JSONRPC" })).toBe("0.3");
  });
  it("takes anything unknown as 1.0", () => {
    expect(protocolOf(undefined)).toBe("1.0");
    expect(protocolOf({ name: "x" })).toBe("1.0");
    expect(protocolOf({ supportedInterfaces: [{ protocolBinding: "GRPC", protocolVersion: "1.0" }], protocolVersion: "0.3.0" })).toBe("1.0");
  });
});

describe("A2AClient against a v0.3 peer", () => {
  it("sends message/send with v0.3 shapes and no A2A-Version, and converts the v0.3 task back", async () => {
    const seen: { headers: Record<string, string>; body: any }[] = [];
    const fetchFn = async (_url: string, init: RequestInit) => {
      seen.push({ headers: init.headers as Record<string, string>, body: JSON.parse(init.body as string) });
      const result = {
        kind: "task",
        id: "t1",
        contextId: "c1",
        status: { state: "completed", timestamp: "2026-01-01T00:00:00.000Z" },
        artifacts: [{ artifactId: "a", parts: [{ kind: "text", text: "done" }] }],
      };
      return new Response(JSON.stringify({ jsonrpc: "2.0", id: 1, result }));
    };
    const client = new A2AClient("https://old/", fetchFn, "0.3");
    const r = await client.sendMessage({ message: { messageId: "m1", role: "ROLE_USER", parts: [{ text: "hi" }] }, configuration: { returnImmediately: true } });
    expect(seen[0].headers["a2a-version"]).toBeUndefined();
    expect(seen[0].body.method).toBe("message/send");
    expect(seen[0].body.params.message).toMatchObject({ kind: "message", role: "user", parts: [{ kind: "text", text: "hi" }] });
    expect(seen[0].body.params.configuration.blocking).toBe(false);
    expect(r).toEqual({
      task: { id: "t1", contextId: "c1", status: { state: "TASK_STATE_COMPLETED", timestamp: "2026-01-01T00:00:00.000Z" }, artifacts: [{ artifactId: "a", parts: [{ text: "done" }] }] },
    });
  });

  it("speaks v1.0 with the A2A-Version header to a v1.0 peer", async () => {
    const seen: RequestInit[] = [];
    const client = new A2AClient("https://new/", async (_u, init) => {
      seen.push(init);
      return new Response(JSON.stringify({ jsonrpc: "2.0", id: 1, result: { id: "t", contextId: "c", status: { state: "TASK_STATE_WORKING" } } }));
    });
    await client.getTask({ id: "t" });
    expect((seen[0].headers as Record<string, string>)["a2a-version"]).toBe("1.0");
    expect(JSON.parse(seen[0].body as string).method).toBe("GetTask");
  });
});
