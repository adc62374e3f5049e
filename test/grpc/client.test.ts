/**
 * Our gRPC client (src/grpc/client.ts) against @a2a-js/sdk 1.3.0's gRPC server (grpc-js on Bun) over TLS,
 * each side presenting a certificate of our fleet CA: the other direction of the interop the issue asks for.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import http2 from "node:http2";
import net, { type AddressInfo } from "node:net";
import * as grpc from "@grpc/grpc-js";
import { TaskState, type AgentCard as SdkAgentCard, type Message as SdkMessage } from "@a2a-js/sdk";
import {
  AgentEvent,
  DefaultRequestHandler,
  InMemoryTaskStore,
  type AgentExecutor,
  type ExecutionEventBus,
  type RequestContext,
} from "@a2a-js/sdk/server";
import { A2AService, grpcService, UserBuilder } from "@a2a-js/sdk/server/grpc";
import { GrpcCallError, GrpcClient } from "../../src/grpc/client";
import { createGrpcServer, tagCaller } from "../../src/grpc/server";
import type { Message, SendMessageResult, StreamItem, StreamResponse, Task } from "../../src/protocol/types";
import { makeFleet, type Fleet } from "../helpers/fleet";

class Echo implements AgentExecutor {
  async execute(ctx: RequestContext, bus: ExecutionEventBus): Promise<void> {
    const part = ctx.userMessage.parts[0]?.content;
    const text = part?.$case === "text" ? part.value : "";
    const reply: SdkMessage = {
      ...ctx.userMessage,
      messageId: `${ctx.taskId}-reply`,
      taskId: ctx.taskId,
      contextId: ctx.contextId,
      role: 2,
      parts: [
        { content: { $case: "text", value: `sdk echo: ${text}` }, metadata: undefined, filename: "", mediaType: "" },
      ],
    };
    const working = { state: TaskState.TASK_STATE_WORKING, message: undefined, timestamp: new Date().toISOString() };
    bus.publish(
      AgentEvent.task({
        id: ctx.taskId,
        contextId: ctx.contextId,
        status: working,
        artifacts: [],
        history: [ctx.userMessage],
        metadata: undefined,
      }),
    );
    const done = { state: TaskState.TASK_STATE_COMPLETED, message: reply, timestamp: new Date().toISOString() };
    bus.publish(
      AgentEvent.statusUpdate({ taskId: ctx.taskId, contextId: ctx.contextId, status: done, metadata: undefined }),
    );
    bus.finished();
  }
  async cancelTask(): Promise<void> {}
}

let fleet: Fleet;
let server: grpc.Server;
let session: http2.ClientHttp2Session;
let client: GrpcClient;
let seenUser = "";

beforeAll(async () => {
  fleet = await makeFleet(["sdk", "us"]);
  const sdk = fleet.identity("sdk");
  server = new grpc.Server();
  const creds = grpc.ServerCredentials.createSsl(
    Buffer.from(sdk.ca),
    [{ cert_chain: Buffer.from(sdk.cert), private_key: Buffer.from(sdk.key) }],
    true,
  );
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync("127.0.0.1:0", creds, (e, p) => (e ? reject(e) : resolve(p))),
  );
  const card = {
    name: "sdk",
    description: "the SDK's gRPC server",
    version: "1",
    supportedInterfaces: [{ url: `localhost:${port}`, protocolBinding: "GRPC", tenant: "", protocolVersion: "1.0" }],
    capabilities: { streaming: true, pushNotifications: false, extensions: [], extendedAgentCard: false },
    securitySchemes: {},
    securityRequirements: [],
    defaultInputModes: ["text/plain"],
    defaultOutputModes: ["text/plain"],
    skills: [],
    signatures: [],
  } as unknown as SdkAgentCard;
  const userBuilder: UserBuilder = async (call: unknown) => {
    seenUser = String(
      (call as grpc.ServerUnaryCall<unknown, unknown>).getAuthContext?.()?.sslPeerCertificate?.subject?.CN,
    );
    return { isAuthenticated: true, userName: seenUser };
  };
  server.addService(
    A2AService,
    grpcService({ requestHandler: new DefaultRequestHandler(card, new InMemoryTaskStore(), new Echo()), userBuilder }),
  );
  const us = fleet.identity("us");
  session = http2.connect(`https://localhost:${port}`, { ca: us.ca, cert: us.cert, key: us.key });
  client = new GrpcClient(session);
});

afterAll(() => {
  session?.close();
  server?.forceShutdown();
  fleet?.cleanup();
});

const message = (text: string): Message => ({ messageId: crypto.randomUUID(), role: "ROLE_USER", parts: [{ text }] });
const opts = { timeoutMs: 10_000, version: "1.0" };

describe("our gRPC client against the SDK's gRPC server, mutual TLS", () => {
  let taskId = "";

  it("SendMessage answers the finished task; the SDK saw our certificate", async () => {
    const r = (await client.call("SendMessage", { message: message("hi") }, opts)) as SendMessageResult;
    expect("task" in r).toBe(true);
    const task = (r as { task: Task }).task;
    taskId = task.id;
    expect(task.status.state).toBe("TASK_STATE_COMPLETED");
    expect(task.status.message?.parts).toEqual([{ text: "sdk echo: hi" }]);
    expect(seenUser).toBe("us");
  });

  it("GetTask reads it back in our JSON type", async () => {
    const task = (await client.call("GetTask", { id: taskId }, opts)) as Task;
    expect(task).toMatchObject({ id: taskId, status: { state: "TASK_STATE_COMPLETED" } });
    expect(typeof task.contextId).toBe("string");
  });

  it("an unknown task is a GrpcCallError with the SDK's ErrorInfo", async () => {
    const err = await client.call("GetTask", { id: "no-such-task" }, opts).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(GrpcCallError);
    expect((err as GrpcCallError).status.code).toBe(5);
    expect((err as GrpcCallError).reason).toBe("TASK_NOT_FOUND");
  });

  it("SendStreamingMessage yields the task, then its status updates, then ends", async () => {
    const items: StreamResponse[] = [];
    const stream = client.stream("SendStreamingMessage", { message: message("stream") }, opts);
    for await (const item of stream) items.push(item);
    expect(items.map((i) => Object.keys(i)[0])).toEqual(["task", "statusUpdate"]);
    expect(items.at(-1)).toMatchObject({ statusUpdate: { status: { state: "TASK_STATE_COMPLETED" } } });
  });
});

describe("bounds", () => {
  it("a server that never answers is cut at the deadline", async () => {
    const h2 = createGrpcServer<string>({ handler: () => new Promise(() => {}) });
    const plain = net.createServer((s) => {
      tagCaller(s, "@local");
      h2.emit("connection", s);
    });
    await new Promise<void>((r) => plain.listen(0, "127.0.0.1", r));
    const s = http2.connect(`http://127.0.0.1:${(plain.address() as AddressInfo).port}`);
    const err = await new GrpcClient(s).call("GetTask", { id: "x" }, { timeoutMs: 300 }).catch((e: unknown) => e);
    s.close();
    plain.close();
    expect((err as GrpcCallError).status.code).toBe(4);
  });

  /** A plain gRPC server behind a TCP relay that can be frozen (a connection gone dead without a close). */
  async function relayed(handler: Parameters<typeof createGrpcServer<string>>[0]["handler"]) {
    const h2 = createGrpcServer<string>({ handler });
    const plain = net.createServer((s) => {
      tagCaller(s, "@local");
      h2.emit("connection", s);
    });
    await new Promise<void>((r) => plain.listen(0, "127.0.0.1", r));
    const pairs: net.Socket[] = [];
    const relay = net.createServer((inbound) => {
      const outbound = net.connect((plain.address() as AddressInfo).port, "127.0.0.1");
      inbound.pipe(outbound).pipe(inbound);
      pairs.push(inbound, outbound);
    });
    await new Promise<void>((r) => relay.listen(0, "127.0.0.1", r));
    const session = http2.connect(`http://127.0.0.1:${(relay.address() as AddressInfo).port}`);
    return {
      session,
      freeze: () => pairs.forEach((p) => (p.unpipe(), p.pause())),
      close: () => {
        session.destroy();
        pairs.forEach((p) => p.destroy());
        relay.close();
        plain.close();
      },
    };
  }

  const waiting = (id: string): StreamItem => ({
    response: { task: { id, contextId: "c", status: { state: "TASK_STATE_WORKING" } } },
  });

  it("a stream quiet longer than idleMs on a live connection is not cut: the connection answers PINGs", async () => {
    // The server is quiet four times the bound between the task and its end, as a task at work is.
    const r = await relayed(async () =>
      (async function* () {
        yield waiting("t1");
        await new Promise((resolve) => setTimeout(resolve, 600));
        yield {
          response: { statusUpdate: { taskId: "t1", contextId: "c", status: { state: "TASK_STATE_COMPLETED" } } },
        };
      })(),
    );
    const items: StreamResponse[] = [];
    for await (const item of new GrpcClient(r.session).stream("SubscribeToTask", { id: "t1" }, { idleMs: 150 }))
      items.push(item);
    expect(items.map((i) => Object.keys(i)[0])).toEqual(["task", "statusUpdate"]);
    r.close();
  });

  it("a stream whose connection went dead (no message, no PING answer) is cut after idleMs, as such", async () => {
    const r = await relayed(async () =>
      (async function* () {
        yield waiting("t2");
        await new Promise(() => {});
      })(),
    );
    let opened!: () => void;
    const open = new Promise<void>((resolve) => (opened = resolve));
    const reading = (async () => {
      for await (const _ of new GrpcClient(r.session).stream(
        "SubscribeToTask",
        { id: "t2" },
        { idleMs: 200, onOpen: opened },
      ));
    })().catch((e: unknown) => e);
    await open;
    r.freeze();
    const err = await reading;
    expect(err).toBeInstanceOf(GrpcCallError);
    expect((err as GrpcCallError).status.code).toBe(4);
    expect((err as GrpcCallError).bound).toBe("idle");
    expect((err as GrpcCallError).message).toBe("nothing heard for 200 ms");
    r.close();
  });

  it("a connection closed before any answer is UNAVAILABLE, not a status the server gave", async () => {
    const slammed = net.createServer((s) => s.destroy());
    await new Promise<void>((r) => slammed.listen(0, "127.0.0.1", r));
    const s = http2.connect(`http://127.0.0.1:${(slammed.address() as AddressInfo).port}`);
    s.on("error", () => {}); // the call reports it
    const err = await new GrpcClient(s).call("GetTask", { id: "x" }, { timeoutMs: 5000 }).catch((e: unknown) => e);
    s.destroy();
    slammed.close();
    expect(err).toBeInstanceOf(GrpcCallError);
    expect((err as GrpcCallError).status).toEqual({ code: 14, message: "the connection closed before any answer" });
  });
});
