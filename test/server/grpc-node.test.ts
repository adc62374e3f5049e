/**
 * The gRPC binding wired into a real node (in-process: real mutual TLS on loopback with certificates from our
 * PKI, real SQLite): the mTLS port serves HTTP/1.1 and HTTP/2 by ALPN, the plain loopback port h2c beside
 * HTTP/1.1, and a gRPC call goes through the same method table, authorization, scoping, audit line and rate
 * limit as the other two bindings. The bad inputs of the binding (unknown method, oversized or undecodable
 * message, no client certificate, a content type that is not gRPC) are tried on the real sockets. Calls are
 * made with our own gRPC client module (src/grpc/client.ts) and raw node:http2; @a2a-js/sdk's gRPC client
 * against the compiled binary is in test/interop/sdk-grpc-client.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import http2 from "node:http2";
import tls from "node:tls";
import net from "node:net";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { DEFAULTS, type ServeConfig } from "../../src/config";
import { createLogger } from "../../src/log";
import { startNode, type RunningNode } from "../../src/node";
import { GrpcClient, GrpcCallError } from "../../src/grpc/client";
import { a2aCodec } from "../../src/grpc/a2a-service";
import { frame } from "../../src/grpc/framing";
import { readStatus } from "../../src/grpc/status";
import { makeFleet, type Fleet, type TlsIdentity } from "../helpers/fleet";
import { post, rpc, userMessage } from "../helpers/rpc";

let fleet: Fleet;
let node: RunningNode;
let limited: RunningNode;
let auditPath: string;
const who: Record<string, TlsIdentity> = {};
const quiet = createLogger(() => {}, "error");
const MAX_BODY = 65_536;
const codec = a2aCodec();
const sessions: http2.ClientHttp2Session[] = [];

beforeAll(async () => {
  fleet = await makeFleet(["alpha", "beta", "gamma", "delta"]);
  for (const n of ["beta", "gamma", "delta"]) who[n] = fleet.identity(n);
  auditPath = join(fleet.root, "audit", "calls.jsonl");
  const config: ServeConfig = {
    ...DEFAULTS,
    host: "127.0.0.1",
    port: 0,
    plainHttpPort: 0,
    executor: "echo",
    auditLog: auditPath,
    maxBodyBytes: MAX_BODY,
    authorize: [
      { peers: ["beta", "delta"], methods: ["*"] },
      { peers: ["gamma"], methods: ["GetTask", "ListTasks"] },
    ],
  };
  node = await startNode(fleet.homes.alpha, config, quiet);
  // A node of its own for the rate limit: two calls at once, then one an hour.
  limited = await startNode(
    fleet.homes.delta,
    { ...DEFAULTS, host: "127.0.0.1", port: 0, executor: "echo", rateLimitBurst: 2, rateLimitPerSecond: 0.0003 },
    quiet,
  );
});

afterAll(async () => {
  for (const s of sessions) s.destroy();
  await node?.stop().catch(() => {});
  await limited?.stop().catch(() => {});
  fleet?.cleanup();
});

const hostPort = (url: string) => new URL(url).host;

function connect(id: TlsIdentity | undefined, url = node.url): http2.ClientHttp2Session {
  const u = new URL(url);
  const s =
    u.protocol === "http:"
      ? http2.connect(url)
      : http2.connect(
          `https://localhost:${u.port}`,
          id ? { ca: id.ca, cert: id.cert, key: id.key } : { ca: who.beta.ca },
        );
  s.on("error", () => {});
  sessions.push(s);
  return s;
}

const client = (id: TlsIdentity | undefined, url?: string) => new GrpcClient(connect(id, url));
const T = { timeoutMs: 10_000, version: "1.0" };

async function refusal(p: Promise<unknown>): Promise<GrpcCallError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(GrpcCallError);
  return err as GrpcCallError;
}

function auditLines(): Record<string, unknown>[] {
  return readFileSync(auditPath, "utf8")
    .split("\n")
    .filter(Boolean)
    .map((l) => JSON.parse(l));
}

describe("the mutual-TLS port serves gRPC beside HTTP/1.1 (ALPN), as the certificate's caller", () => {
  it("offers h2 and http/1.1 by ALPN; a client offering none gets HTTP/1.1", async () => {
    const alpn = (protocols?: string[]) =>
      new Promise<string | false>((resolve, reject) => {
        const s = tls.connect(
          {
            host: "127.0.0.1",
            port: new URL(node.url).port as unknown as number,
            servername: "localhost",
            ...who.beta,
            ...(protocols ? { ALPNProtocols: protocols } : {}),
          },
          () => {
            resolve(s.alpnProtocol ?? false);
            s.destroy();
          },
        );
        s.on("error", reject);
      });
    expect(await alpn(["h2"])).toBe("h2");
    expect(await alpn(["http/1.1"])).toBe("http/1.1");
    expect(await alpn(["h2", "http/1.1"])).toBe("h2");
    expect(await alpn()).toBe(false);
  });

  it("SendMessage over gRPC makes a task the same caller reads over JSON-RPC, and no other caller sees", async () => {
    const sent = (await client(who.beta).call("SendMessage", { message: userMessage("over grpc") }, T)) as any;
    expect(sent.task.status.state).toBe("TASK_STATE_COMPLETED");
    const id = sent.task.id;
    const viaJson = await rpc(node.url, who.beta, "GetTask", { id });
    expect(viaJson.body.result.id).toBe(id);
    expect(viaJson.body.result.artifacts).toEqual(sent.task.artifacts);
    const got = (await client(who.beta).call("GetTask", { id }, T)) as any;
    expect(got.id).toBe(id);
    // Scoping: the task is beta's; delta, allowed everything, does not find it.
    const other = await refusal(client(who.delta).call("GetTask", { id }, T));
    expect(other.status.code).toBe(5);
    expect(other.reason).toBe("TASK_NOT_FOUND");
    const listed = (await client(who.delta).call("ListTasks", {}, T)) as any;
    expect(listed.tasks.map((t: any) => t.id)).not.toContain(id);
  });

  it("a missing a2a-version reads as 1.0; an unknown one is VERSION_NOT_SUPPORTED (FAILED_PRECONDITION)", async () => {
    const sent = (await client(who.beta).call(
      "SendMessage",
      { message: userMessage("no version") },
      { timeoutMs: 10_000 },
    )) as any;
    expect(sent.task.id).toBeTruthy();
    const err = await refusal(client(who.beta).call("ListTasks", {}, { timeoutMs: 10_000, version: "99.0" }));
    expect(err.status.code).toBe(9);
    expect(err.status.errorInfo).toMatchObject({ reason: "VERSION_NOT_SUPPORTED", domain: "a2a-protocol.org" });
  });

  it("the authorization policy refuses over gRPC as over the others (PERMISSION_DENIED), and the audit log says so", async () => {
    const err = await refusal(client(who.gamma).call("SendMessage", { message: userMessage("not allowed") }, T));
    expect(err.status.code).toBe(7);
    expect(err.reason).toBe("PERMISSION_DENIED");
    expect(err.message).toContain("peer 'gamma' may not call SendMessage");
  });

  it("SendStreamingMessage streams the task's events from the same event log, in order, to the final state", async () => {
    const items: any[] = [];
    for await (const item of client(who.beta).stream("SendStreamingMessage", { message: userMessage("stream") }, T))
      items.push(item);
    expect(Object.keys(items[0])).toEqual(["task"]);
    const id = items[0].task.id;
    const last = items.at(-1);
    expect(last.statusUpdate ?? last.task).toBeDefined();
    const state = last.statusUpdate?.status.state ?? last.task?.status.state;
    expect(state).toBe("TASK_STATE_COMPLETED");
    // The events are the task's own: the same task, through JSON-RPC, ended the same way.
    const viaJson = await rpc(node.url, who.beta, "GetTask", { id });
    expect(viaJson.body.result.status.state).toBe("TASK_STATE_COMPLETED");
    // SubscribeToTask on a finished task is refused as on the other bindings.
    const sub = client(who.beta).stream("SubscribeToTask", { id }, T);
    const err = await refusal(
      (async () => {
        for await (const _ of sub) void _;
      })(),
    );
    expect(err.reason).toBe("UNSUPPORTED_OPERATION");
    expect(err.status.code).toBe(9);
  });

  it("the rate limit holds for gRPC calls: RESOURCE_EXHAUSTED naming the wait", async () => {
    const c = client(who.beta, limited.url);
    await c.call("ListTasks", {}, T);
    await c.call("ListTasks", {}, T);
    const err = await refusal(c.call("ListTasks", {}, T));
    expect(err.status.code).toBe(8);
    expect(err.reason).toBe("RESOURCE_EXHAUSTED");
    expect(err.message).toMatch(/^rate limit: retry after \d+ s/);
    // One bucket for every binding: JSON-RPC is refused too.
    const viaJson = await rpc(limited.url, who.beta, "ListTasks", {});
    expect(viaJson.status).toBe(429);
  });
});

describe("the plain loopback port: h2c beside HTTP/1.1", () => {
  it("serves gRPC by prior knowledge, as the loopback caller, and its card lists GRPC at host:port", async () => {
    const sent = (await client(undefined, node.plainUrl).call(
      "SendMessage",
      { message: userMessage("h2c") },
      T,
    )) as any;
    expect(sent.task.status.state).toBe("TASK_STATE_COMPLETED");
    const viaJson = await post(
      node.plainUrl!,
      undefined,
      JSON.stringify({ jsonrpc: "2.0", id: 1, method: "GetTask", params: { id: sent.task.id } }),
    );
    expect(viaJson.body.result.id).toBe(sent.task.id);
    // A fleet caller does not see the loopback caller's task.
    expect((await refusal(client(who.beta).call("GetTask", { id: sent.task.id }, T))).status.code).toBe(5);
    const card = (await (await fetch(`${node.plainUrl}/.well-known/agent-card.json`)).json()) as any;
    expect(card.supportedInterfaces).toEqual([
      { url: `${node.plainUrl}/`, protocolBinding: "JSONRPC", protocolVersion: "1.0" },
      { url: node.plainUrl, protocolBinding: "HTTP+JSON", protocolVersion: "1.0" },
      { url: hostPort(node.plainUrl!), protocolBinding: "GRPC", protocolVersion: "1.0" },
    ]);
  });

  it("HTTP/1.1 that merely starts like the preface stays HTTP/1.1", async () => {
    const answer = await new Promise<string>((resolve, reject) => {
      const port = Number(new URL(node.plainUrl!).port);
      const c = net.connect(port, "127.0.0.1", () =>
        c.write("PRI /x HTTP/1.1\r\nhost: a\r\nconnection: close\r\n\r\n"),
      );
      let text = "";
      c.on("data", (d) => (text += d.toString("latin1")));
      c.on("end", () => resolve(text));
      c.on("error", reject);
    });
    expect(answer).toMatch(/^HTTP\/1\.1 \d{3} /);
  });
});

describe("bad input over the real TLS port gets the binding's precise answer, and the node stays up", () => {
  type Answer = { status?: number; headers: http2.IncomingHttpHeaders; trailers: http2.IncomingHttpHeaders };
  const raw = (session: http2.ClientHttp2Session, headers: http2.OutgoingHttpHeaders, body?: Uint8Array) =>
    new Promise<Answer>((resolve, reject) => {
      const req = session.request({
        ":method": "POST",
        "content-type": "application/grpc",
        te: "trailers",
        ...headers,
      });
      const a: Answer = { headers: {}, trailers: {} };
      req.on("response", (h) => {
        a.headers = h;
        a.status = Number(h[":status"]);
      });
      req.on("trailers", (t) => (a.trailers = t));
      req.on("data", () => {});
      req.on("end", () => resolve(a));
      req.on("close", () => resolve(a));
      req.on("error", reject);
      req.end(body);
    });
  const statusOf = (a: Answer) => readStatus({ ...a.headers, ...a.trailers } as Record<string, string>);
  const list = frame(codec.encode("lf.a2a.v1.ListTasksRequest", {}));

  it("unknown method: UNIMPLEMENTED; not gRPC: HTTP 415; oversized: RESOURCE_EXHAUSTED; bad protobuf: INVALID_ARGUMENT", async () => {
    const s = connect(who.beta);
    const big = frame(codec.encode("lf.a2a.v1.GetTaskRequest", { id: "x".repeat(MAX_BODY + 10) }));
    const [unknown, json, oversized, garbage, invalid] = await Promise.all([
      raw(s, { ":path": "/lf.a2a.v1.A2AService/DropAllTables" }, list),
      raw(s, { ":path": "/lf.a2a.v1.A2AService/ListTasks", "content-type": "application/json" }, list),
      raw(s, { ":path": "/lf.a2a.v1.A2AService/GetTask" }, big),
      raw(s, { ":path": "/lf.a2a.v1.A2AService/GetTask" }, frame(new Uint8Array([0x0a, 0xff, 0x01]))),
      // Decodes, but is not a valid request: the one validator's INVALID_PARAMS, as INVALID_ARGUMENT.
      raw(s, { ":path": "/lf.a2a.v1.A2AService/SendMessage" }, frame(codec.encode("lf.a2a.v1.SendMessageRequest", {}))),
    ]);
    expect(statusOf(unknown)).toMatchObject({
      code: 12,
      message: "unknown method /lf.a2a.v1.A2AService/DropAllTables",
    });
    expect(json.status).toBe(415);
    expect(statusOf(oversized).code).toBe(8);
    expect(statusOf(oversized).message).toContain(`over the limit of ${MAX_BODY}`);
    expect(statusOf(garbage).code).toBe(3);
    expect(statusOf(garbage).message).toMatch(/^the lf\.a2a\.v1\.GetTaskRequest does not decode/);
    expect(statusOf(invalid)).toMatchObject({ code: 3, errorInfo: { reason: "INVALID_PARAMS" } });
    // The node still answers on the same session.
    expect(((await client(who.beta).call("ListTasks", {}, T)) as any).tasks).toBeDefined();
  });

  it("no client certificate: refused in the handshake, never reaches a handler; a foreign CA's likewise", async () => {
    const bare = connect(undefined);
    await expect(client(undefined).call("ListTasks", {}, T)).rejects.toThrow();
    bare.destroy();
    const foreign = await fleet.foreign("beta");
    await expect(client(foreign).call("ListTasks", {}, T)).rejects.toThrow();
  });
});

describe("the audit log (read once the node has stopped, which flushes it)", () => {
  it("has one line per gRPC call that reached the method table, as for the other bindings, and none for the rest", async () => {
    await node.stop();
    const lines = auditLines().filter((l) => l.binding === "grpc");
    expect(lines).toContainEqual(
      expect.objectContaining({ peer: "gamma", method: "SendMessage", outcome: "denied", binding: "grpc" }),
    );
    expect(lines).toContainEqual(
      expect.objectContaining({ peer: "beta", method: "SendMessage", outcome: "ok", binding: "grpc" }),
    );
    expect(lines).toContainEqual(
      expect.objectContaining({ peer: "@local", method: "SendMessage", outcome: "ok", binding: "grpc" }),
    );
    // The refused SendMessage without a message (INVALID_PARAMS) is the call's line; the transport's own
    // refusals (unknown method, 415, oversized, undecodable) never reached a method: no line, no method undefined.
    expect(lines).toContainEqual(
      expect.objectContaining({ peer: "beta", method: "SendMessage", outcome: "error", code: -32602 }),
    );
    expect(lines.every((l) => typeof l.method === "string")).toBe(true);
    expect(lines.map((l) => l.method)).not.toContain("DropAllTables");
    // Neither a client without a certificate nor one of a foreign CA reached a handler.
    expect(new Set(lines.map((l) => l.peer))).toEqual(new Set(["beta", "gamma", "delta", "@local"]));
  });
});
