import { describe, expect, it } from "vitest";
import { ProtocolError } from "../../src/client/peer-client";
import { JsonRpcClient } from "../../src/client/jsonrpc-client";
import { HttpJsonClient } from "../../src/client/http-json-client";
import { chooseInterface, clientForCard, grpcPortOf } from "../../src/client/peer-interface";
import { GrpcPeerClient } from "../../src/client/grpc-client";
import { DEFAULT_PEER_TIMEOUTS } from "../../src/client/deadlines";

describe("chooseInterface (what a peer's card says to speak, spec §8.3.2)", () => {
  const jsonrpc = { url: "https://b/", protocolBinding: "JSONRPC", protocolVersion: "1.0" };
  const rest = { url: "https://b", protocolBinding: "HTTP+JSON", protocolVersion: "1.0" };
  it("takes the first interface it speaks, in the card's order", () => {
    expect(chooseInterface({ supportedInterfaces: [jsonrpc, rest] })).toEqual({
      binding: "JSONRPC",
      protocol: "1.0",
      url: "https://b/",
    });
    expect(chooseInterface({ supportedInterfaces: [rest, jsonrpc] })).toEqual({
      binding: "HTTP+JSON",
      protocol: "1.0",
      url: "https://b",
    });
    // gRPC is spoken when the session can (a fleet peer's); v0.3 interfaces are passed over; a tenant is kept.
    const grpc = { url: "b:443", protocolBinding: "GRPC", protocolVersion: "1.0" };
    const old = { ...rest, protocolVersion: "0.3" };
    expect(chooseInterface({ supportedInterfaces: [old, grpc, rest] })).toEqual({
      binding: "GRPC",
      protocol: "1.0",
      url: "b:443",
    });
    expect(
      chooseInterface({ supportedInterfaces: [grpc, old, { ...rest, tenant: "t1" }] }, ["JSONRPC", "HTTP+JSON"]),
    ).toEqual({
      binding: "HTTP+JSON",
      protocol: "1.0",
      url: "https://b",
      tenant: "t1",
    });
  });
  it("reads a v0.3 card (protocolVersion 0.3.x, no supportedInterfaces) as JSON-RPC 0.3", () => {
    expect(chooseInterface({ protocolVersion: "0.3.0", url: "https://b/", preferredTransport: "JSONRPC" })).toEqual({
      binding: "JSONRPC",
      protocol: "0.3",
    });
  });
  it("takes anything unknown as JSON-RPC 1.0", () => {
    expect(chooseInterface(undefined)).toEqual({ binding: "JSONRPC", protocol: "1.0" });
    expect(chooseInterface({ name: "x" })).toEqual({ binding: "JSONRPC", protocol: "1.0" });
    expect(
      chooseInterface({
        supportedInterfaces: [{ protocolBinding: "SOAP", protocolVersion: "1.0" }],
        protocolVersion: "0.3.0",
      }),
    ).toEqual({ binding: "JSONRPC", protocol: "1.0" });
    expect(chooseInterface({ supportedInterfaces: [null, 5, { protocolBinding: "HTTP+JSON" }] })).toEqual({
      binding: "JSONRPC",
      protocol: "1.0",
    });
  });
});

describe("clientForCard", () => {
  const target = { baseUrl: "https://10.0.0.7:9443", rpcUrl: "https://10.0.0.7:9443/" };
  const fetchFn = async () => new Response("{}");
  it("speaks HTTP+JSON to a peer that prefers it, at the card's path on the host the peer was reached at", async () => {
    const seen: string[] = [];
    const client = clientForCard(
      {
        supportedInterfaces: [
          {
            url: "https://beta.internal:9443/a2a/",
            protocolBinding: "HTTP+JSON",
            protocolVersion: "1.0",
            tenant: "x y",
          },
        ],
      },
      target,
      async (url) => {
        seen.push(url);
        return new Response(JSON.stringify({ id: "t", contextId: "c", status: { state: "TASK_STATE_WORKING" } }));
      },
    );
    expect(client.binding).toBe("HTTP+JSON");
    await client.getTask({ id: "t/1" });
    expect(seen).toEqual(["https://10.0.0.7:9443/a2a/x%20y/tasks/t%2F1"]);
  });
  it("speaks gRPC to a fleet peer that prefers it: the host the peer was reached at, the card's port", async () => {
    const card = {
      supportedInterfaces: [
        { url: "beta.internal:50051", protocolBinding: "GRPC", protocolVersion: "1.0", tenant: "t1" },
        { url: "https://beta.internal:9443/", protocolBinding: "JSONRPC", protocolVersion: "1.0" },
      ],
    };
    const opened: string[] = [];
    const open = async (origin: string) => {
      opened.push(origin);
      throw Object.assign(new Error("no connection in this test"), { code: "ECONNREFUSED" });
    };
    const client = clientForCard(card, target, fetchFn, { open, timeouts: DEFAULT_PEER_TIMEOUTS });
    expect(client).toBeInstanceOf(GrpcPeerClient);
    expect(client.binding).toBe("GRPC");
    expect((client as GrpcPeerClient).origin).toBe("https://10.0.0.7:50051");
    await expect(client.getTask({ id: "t" })).rejects.toMatchObject({ code: "ECONNREFUSED" });
    expect(opened).toEqual(["https://10.0.0.7:50051"]);
    // A card's gRPC URL without a port (or a scheme's default) is the port the peer was reached at.
    const samePort = { supportedInterfaces: [{ url: "beta", protocolBinding: "GRPC", protocolVersion: "1.0" }] };
    const same = clientForCard(samePort, target, fetchFn, { open, timeouts: DEFAULT_PEER_TIMEOUTS });
    expect((same as GrpcPeerClient).origin).toBe("https://10.0.0.7:9443");
    // Without a gRPC transport (a peer outside the fleet) the next interface the card lists is taken.
    expect(clientForCard(card, target, fetchFn)).toBeInstanceOf(JsonRpcClient);
  });
  it("speaks JSON-RPC otherwise, at the peer's URL", () => {
    expect(
      clientForCard(
        { supportedInterfaces: [{ url: "https://b/", protocolBinding: "JSONRPC", protocolVersion: "1.0" }] },
        target,
        fetchFn,
      ).binding,
    ).toBe("JSONRPC");
    expect(clientForCard(undefined, target, fetchFn)).toBeInstanceOf(JsonRpcClient);
  });
});

describe("grpcPortOf (a card's gRPC URL: host:port, as spec v1.0.1 writes it)", () => {
  it("reads the port of host:port, [v6]:port and a URL with a scheme; none is empty", () => {
    expect(grpcPortOf("beta:50051")).toBe("50051");
    expect(grpcPortOf("[::1]:9443")).toBe("9443");
    expect(grpcPortOf("grpc://beta:7000")).toBe("7000");
    expect(grpcPortOf("https://beta:443")).toBe("");
    expect(grpcPortOf("beta")).toBe("");
    expect(grpcPortOf("not a url:x")).toBe("");
  });
});

describe("HttpJsonClient", () => {
  function recording(answer: (url: string, init: RequestInit) => Response) {
    const seen: { url: string; method?: string; headers: Record<string, string>; body?: string }[] = [];
    const fn = async (url: string, init: RequestInit) => {
      seen.push({
        url,
        method: init.method,
        headers: init.headers as Record<string, string>,
        body: init.body as string | undefined,
      });
      return answer(url, init);
    };
    return { seen, fn };
  }
  const task = { id: "t1", contextId: "c1", status: { state: "TASK_STATE_COMPLETED" } };

  it("sends each operation to its route with A2A-Version 1.0 and application/a2a+json", async () => {
    const { seen, fn } = recording(
      (url) =>
        new Response(
          JSON.stringify(
            url.includes("message:send")
              ? { task }
              : url.includes("?") && url.includes("/tasks?")
                ? { tasks: [task], nextPageToken: "", pageSize: 1, totalSize: 1 }
                : task,
          ),
        ),
    );
    const client = new HttpJsonClient("https://b:9443/", fn);
    const msg = { messageId: "m1", role: "ROLE_USER" as const, parts: [{ text: "hi" }] };
    expect(await client.sendMessage({ message: msg, configuration: { returnImmediately: true } })).toEqual({ task });
    expect(await client.getTask({ id: "t1", historyLength: 0 })).toEqual(task);
    expect((await client.listTasks({ contextId: "c1", pageSize: 1, includeArtifacts: true })).tasks).toEqual([task]);
    expect(await client.cancelTask("t1")).toEqual(task);
    expect(seen.map((s) => `${s.method} ${s.url}`)).toEqual([
      "POST https://b:9443/message:send",
      "GET https://b:9443/tasks/t1?historyLength=0",
      "GET https://b:9443/tasks?contextId=c1&pageSize=1&includeArtifacts=true",
      "POST https://b:9443/tasks/t1:cancel",
    ]);
    for (const s of seen) {
      expect(s.headers["a2a-version"]).toBe("1.0");
      expect(s.headers.accept).toContain("application/a2a+json");
    }
    expect(seen[0].headers["content-type"]).toBe("application/a2a+json");
    expect(JSON.parse(seen[0].body!)).toEqual({ message: msg, configuration: { returnImmediately: true } });
    expect(seen[1].body).toBeUndefined();
  });

  it("turns a google.rpc.Status into the RemoteError JSON-RPC would give (code from the ErrorInfo reason)", async () => {
    const status = (code: number, reason: string, message: string) =>
      new Response(
        JSON.stringify({
          error: {
            code,
            status: "X",
            message,
            details: [{ "@type": "type.googleapis.com/google.rpc.ErrorInfo", reason, domain: "a2a-protocol.org" }],
          },
        }),
        { status: code },
      );
    const client = new HttpJsonClient("https://b", async (url) =>
      url.endsWith(":cancel")
        ? status(400, "TASK_NOT_CANCELABLE", "done already")
        : status(404, "TASK_NOT_FOUND", "Task not found: t9"),
    );
    await expect(client.getTask({ id: "t9" })).rejects.toMatchObject({
      name: "RemoteError",
      code: -32001,
      message: "Task not found: t9",
    });
    await expect(client.cancelTask("t9")).rejects.toMatchObject({ code: -32002, message: "done already" });
    // No A2A error in the answer: the URL is not an A2A endpoint, and the error says so.
    const proxy = new HttpJsonClient("https://b", async () => new Response("<html>nope</html>", { status: 404 }));
    await expect(proxy.getTask({ id: "t" })).rejects.toBeInstanceOf(ProtocolError);
    await expect(proxy.getTask({ id: "t" })).rejects.toThrow(/HTTP 404 with something that is not an A2A error/);
    const bare = new HttpJsonClient(
      "https://b",
      async () => new Response(JSON.stringify({ error: { code: 500, message: "boom" } }), { status: 500 }),
    );
    await expect(bare.getTask({ id: "t" })).rejects.toThrow(/HTTP 500 without an A2A error reason: boom/);
  });

  it("reads a stream's StreamResponse events, and throws an 'error' event as a RemoteError", async () => {
    const sse = (text: string) => new Response(text, { headers: { "content-type": "text/event-stream" } });
    const ok = new HttpJsonClient("https://b", async () =>
      sse(
        `data: {"task":${JSON.stringify(task)}}\n\nid: 1\ndata: {"statusUpdate":{"taskId":"t1","contextId":"c1","status":{"state":"TASK_STATE_COMPLETED"}}}\n\n`,
      ),
    );
    const got = [];
    for await (const e of ok.sendStreamingMessage({
      message: { messageId: "m", role: "ROLE_USER", parts: [{ text: "x" }] },
    }))
      got.push(e);
    expect(got).toEqual([
      { task },
      { statusUpdate: { taskId: "t1", contextId: "c1", status: { state: "TASK_STATE_COMPLETED" } } },
    ]);

    const late = new HttpJsonClient("https://b", async () =>
      sse(
        `data: {"task":${JSON.stringify(task)}}\n\nevent: error\ndata: {"error":{"code":429,"message":"busy","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"RESOURCE_EXHAUSTED"}]}}\n\n`,
      ),
    );
    const seen: unknown[] = [];
    await expect(
      (async () => {
        for await (const e of late.sendStreamingMessage({
          message: { messageId: "m", role: "ROLE_USER", parts: [{ text: "x" }] },
        }))
          seen.push(e);
      })(),
    ).rejects.toMatchObject({ code: -32603, message: "busy" });
    expect(seen).toEqual([{ task }]);

    const refused = new HttpJsonClient(
      "https://b",
      async () =>
        new Response(
          JSON.stringify({
            error: {
              code: 400,
              message: "no",
              details: [{ "@type": "type.googleapis.com/google.rpc.ErrorInfo", reason: "INVALID_PARAMS" }],
            },
          }),
          { status: 400, headers: { "content-type": "application/json" } },
        ),
    );
    await expect(
      (async () => {
        for await (const _ of refused.sendStreamingMessage({
          message: { messageId: "m", role: "ROLE_USER", parts: [{ text: "x" }] },
        }));
      })(),
    ).rejects.toMatchObject({ code: -32602, message: "no" });
  });
});

describe("JsonRpcClient against a v0.3 peer", () => {
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
    const client = new JsonRpcClient("https://old/", fetchFn, "0.3");
    const r = await client.sendMessage({
      message: { messageId: "m1", role: "ROLE_USER", parts: [{ text: "hi" }] },
      configuration: { returnImmediately: true },
    });
    expect(seen[0].headers["a2a-version"]).toBeUndefined();
    expect(seen[0].body.method).toBe("message/send");
    expect(seen[0].body.params.message).toMatchObject({
      kind: "message",
      role: "user",
      parts: [{ kind: "text", text: "hi" }],
    });
    expect(seen[0].body.params.configuration.blocking).toBe(false);
    expect(r).toEqual({
      task: {
        id: "t1",
        contextId: "c1",
        status: { state: "TASK_STATE_COMPLETED", timestamp: "2026-01-01T00:00:00.000Z" },
        artifacts: [{ artifactId: "a", parts: [{ text: "done" }] }],
      },
    });
  });

  it("speaks v1.0 with the A2A-Version header to a v1.0 peer", async () => {
    const seen: RequestInit[] = [];
    const client = new JsonRpcClient("https://new/", async (_u, init) => {
      seen.push(init);
      return new Response(
        JSON.stringify({
          jsonrpc: "2.0",
          id: 1,
          result: { id: "t", contextId: "c", status: { state: "TASK_STATE_WORKING" } },
        }),
      );
    });
    await client.getTask({ id: "t" });
    expect((seen[0].headers as Record<string, string>)["a2a-version"]).toBe("1.0");
    expect(JSON.parse(seen[0].body as string).method).toBe("GetTask");
  });
});

describe("JsonRpcClient and a card interface with a tenant", () => {
  it("puts the tenant in every v1.0 request's params", async () => {
    const bodies: any[] = [];
    const client = new JsonRpcClient(
      "https://b/",
      async (_u, init) => {
        bodies.push(JSON.parse(init.body as string));
        return new Response(
          JSON.stringify({
            jsonrpc: "2.0",
            id: 1,
            result: { id: "t", contextId: "c", status: { state: "TASK_STATE_WORKING" } },
          }),
        );
      },
      "1.0",
      "acme",
    );
    await client.getTask({ id: "t" });
    await client.cancelTask("t");
    expect(bodies.map((b) => b.params)).toEqual([
      { id: "t", tenant: "acme" },
      { id: "t", tenant: "acme" },
    ]);
  });
});
