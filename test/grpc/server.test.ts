/**
 * The gRPC server module over a real TLS socket with certificates from our PKI, reached the way the node's
 * mTLS listener will reach it: a node:tls server (ALPN h2) verifies the client certificate, tags the socket
 * with the caller, and hands the connection to the HTTP/2 server. Called by @a2a-js/sdk 1.3.0's gRPC client
 * (TLS + client certificate), by @grpc/grpc-js directly for the transport's edge cases, and by raw node:http2.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import http2 from "node:http2";
import tls, { type TLSSocket } from "node:tls";
import type { AddressInfo } from "node:net";
import * as grpc from "@grpc/grpc-js";
import { ClientFactory, ClientFactoryOptions } from "@a2a-js/sdk/client";
import { GrpcTransportFactory } from "@a2a-js/sdk/client/grpc";
import type { AgentCard as SdkAgentCard, Message as SdkMessage } from "@a2a-js/sdk";
import { createGrpcServer, tagCaller, type GrpcCall } from "../../src/grpc/server";
import { frame } from "../../src/grpc/framing";
import { a2aCodec } from "../../src/grpc/a2a-service";
import { readStatus } from "../../src/grpc/status";
import { A2AError } from "../../src/protocol/errors";
import type { StreamItem, Task } from "../../src/protocol/types";
import { makeFleet, type Fleet } from "../helpers/fleet";
import { card } from "./fixtures";

let fleet: Fleet;
let tlsServer: tls.Server;
let port = 0;
const calls: GrpcCall<string>[] = [];
let released: (() => void) | undefined;
let streamClosed: Promise<void> | undefined;

const task = (id: string, state: Task["status"]["state"]): Task => ({
  id,
  contextId: "ctx",
  status: { state, timestamp: "2026-12-02T16:00:00.000Z" },
});

async function handler(call: GrpcCall<string>): Promise<unknown> {
  calls.push(call);
  switch (call.method.name) {
    case "SendMessage":
      return { task: task("t-1", "TASK_STATE_COMPLETED") };
    case "GetTask":
      throw A2AError.taskNotFound(String(call.request.id));
    case "GetExtendedAgentCard":
      return { ...card, description: `extended card for ${call.caller}` };
    case "SendStreamingMessage":
      return (async function* (): AsyncIterable<StreamItem> {
        yield { response: { task: task("t-2", "TASK_STATE_SUBMITTED") } };
        yield {
          seq: 1,
          response: { statusUpdate: { taskId: "t-2", contextId: "ctx", status: { state: "TASK_STATE_WORKING" } } },
        };
        yield {
          seq: 2,
          response: { statusUpdate: { taskId: "t-2", contextId: "ctx", status: { state: "TASK_STATE_COMPLETED" } } },
        };
      })();
    case "SubscribeToTask":
      // Never ends by itself: a client's cancel must stop it.
      return (async function* (): AsyncIterable<StreamItem> {
        let closed!: () => void;
        streamClosed = new Promise((r) => (closed = r));
        try {
          yield { response: { task: task("t-3", "TASK_STATE_WORKING") } };
          // A stream that waits on its task watches the call's signal, as the node's event log will.
          await new Promise<void>((r) => {
            released = r;
            call.signal.addEventListener("abort", () => r(), { once: true });
          });
        } finally {
          closed();
        }
      })();
    case "ListTasks":
      throw new Error("a bug with a secret in it");
    default:
      throw A2AError.unsupportedOperation(call.method.name);
  }
}

beforeAll(async () => {
  fleet = await makeFleet(["server", "caller"]);
  const me = fleet.identity("server");
  const h2 = createGrpcServer<string>({ handler, maxMessageBytes: 64 * 1024 });
  tlsServer = tls.createServer({
    cert: me.cert,
    key: me.key,
    ca: me.ca,
    requestCert: true,
    rejectUnauthorized: true,
    ALPNProtocols: ["h2"],
  });
  tlsServer.on("secureConnection", (socket: TLSSocket) => {
    tagCaller(socket, String(socket.getPeerCertificate().subject?.CN));
    h2.emit("connection", socket);
  });
  await new Promise<void>((r) => tlsServer.listen(0, "127.0.0.1", r));
  port = (tlsServer.address() as AddressInfo).port;
});

afterAll(() => {
  tlsServer?.close();
  fleet?.cleanup();
});

function sdkClient() {
  const id = fleet.identity("caller");
  const creds = grpc.credentials.createSsl(Buffer.from(id.ca), Buffer.from(id.key), Buffer.from(id.cert));
  const sdkCard = {
    ...card,
    supportedInterfaces: [{ url: `localhost:${port}`, protocolBinding: "GRPC", tenant: "", protocolVersion: "1.0" }],
  } as unknown as SdkAgentCard;
  const factory = new ClientFactory(
    ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
      transports: [new GrpcTransportFactory({ grpcChannelCredentials: creds })],
    }),
  );
  return factory.createFromAgentCard(sdkCard);
}

const sdkMessage = (text: string): SdkMessage => ({
  messageId: crypto.randomUUID(),
  contextId: "",
  taskId: "",
  role: 1,
  parts: [{ content: { $case: "text", value: text }, metadata: undefined, filename: "", mediaType: "" }],
  metadata: undefined,
  extensions: [],
  referenceTaskIds: [],
});

describe("@a2a-js/sdk's gRPC client against our server, TLS with a fleet client certificate", () => {
  it("SendMessage: the handler gets the JSON-RPC-shaped request and the certificate's caller", async () => {
    const client = await sdkClient();
    const request = { tenant: "", message: sdkMessage("hi"), configuration: undefined, metadata: undefined };
    const result = (await client.sendMessage(request)) as unknown as { id: string; status: { state: number } };
    expect(result.id).toBe("t-1");
    expect(result.status.state).toBe(3);
    const call = calls.at(-1)!;
    expect(call.caller).toBe("caller");
    expect(call.request).toMatchObject({ message: { role: "ROLE_USER", parts: [{ text: "hi" }] } });
  });

  it("SendStreamingMessage: every item, in order", async () => {
    const client = await sdkClient();
    const seen: string[] = [];
    const request = { tenant: "", message: sdkMessage("stream"), configuration: undefined, metadata: undefined };
    for await (const ev of client.sendMessageStream(request)) {
      const e = ev as unknown as { payload?: { $case: string; value: { status?: { state: number } } } };
      seen.push(`${e.payload?.$case}:${e.payload?.value.status?.state}`);
    }
    expect(seen).toEqual(["task:1", "statusUpdate:2", "statusUpdate:3"]);
  });

  it("an A2A error arrives as the SDK's typed error (google.rpc.Status + ErrorInfo read by the SDK)", async () => {
    const client = await sdkClient();
    await expect(client.getTask({ tenant: "", id: "nope", historyLength: undefined })).rejects.toMatchObject({
      name: expect.stringMatching(/TaskNotFound/),
      message: "Task not found: nope",
    });
  });

  it("GetExtendedAgentCard is answered for the verified caller", async () => {
    const client = await sdkClient();
    // The card says extendedAgentCard: true, so the SDK asks for the extended one over gRPC.
    const extended = await client.getAgentCard();
    expect(extended.description).toBe("extended card for caller");
    expect(extended.supportedInterfaces[0].protocolBinding).toBe("GRPC");
  });
});

describe("the transport's own answers (raw node:http2 with the fleet certificate)", () => {
  const codec = a2aCodec();
  const connect = () => {
    const id = fleet.identity("caller");
    return http2.connect(`https://localhost:${port}`, { ca: id.ca, cert: id.cert, key: id.key });
  };
  type Answer = {
    status?: number;
    headers: http2.IncomingHttpHeaders;
    trailers: http2.IncomingHttpHeaders;
    body: Buffer;
  };
  const request = (session: http2.ClientHttp2Session, headers: http2.OutgoingHttpHeaders, body?: Uint8Array) =>
    new Promise<Answer>((resolve, reject) => {
      const req = session.request({
        ":method": "POST",
        "content-type": "application/grpc",
        te: "trailers",
        ...headers,
      });
      const a: Answer = { headers: {}, trailers: {}, body: Buffer.alloc(0) };
      req.on("response", (h) => {
        a.headers = h;
        a.status = Number(h[":status"]);
      });
      req.on("trailers", (t) => (a.trailers = t));
      req.on("data", (c: Buffer) => (a.body = Buffer.concat([a.body, c])));
      req.on("end", () => resolve(a));
      req.on("error", reject);
      req.end(body);
    });
  const statusOf = (a: Answer) => readStatus({ ...a.headers, ...a.trailers } as Record<string, string>);
  const getTask = frame(codec.encode("lf.a2a.v1.GetTaskRequest", { id: "x" }));

  it("an unknown method is UNIMPLEMENTED, without reaching the handler", async () => {
    const s = connect();
    const before = calls.length;
    const a = await request(s, { ":path": "/lf.a2a.v1.A2AService/Nope" }, getTask);
    s.close();
    expect(statusOf(a)).toMatchObject({ code: 12, message: "unknown method /lf.a2a.v1.A2AService/Nope" });
    expect(calls.length).toBe(before);
  });

  it("a body that is not gRPC gets HTTP 415; a GET gets 405", async () => {
    const s = connect();
    const a = await request(
      s,
      { ":path": "/lf.a2a.v1.A2AService/GetTask", "content-type": "application/json" },
      getTask,
    );
    const b = await request(s, { ":path": "/lf.a2a.v1.A2AService/GetTask", ":method": "GET" });
    s.close();
    expect([a.status, b.status]).toEqual([415, 405]);
  });

  it("oversized: RESOURCE_EXHAUSTED; compressed: UNIMPLEMENTED; garbage or no message: INVALID_ARGUMENT", async () => {
    const s = connect();
    const big = frame(codec.encode("lf.a2a.v1.GetTaskRequest", { id: "x".repeat(70 * 1024) }));
    const compressed = new Uint8Array([1, 0, 0, 0, 0]);
    const garbage = frame(new Uint8Array([0x0a, 0xff]));
    const answers = await Promise.all([
      request(s, { ":path": "/lf.a2a.v1.A2AService/GetTask" }, big),
      request(s, { ":path": "/lf.a2a.v1.A2AService/GetTask" }, compressed),
      request(s, { ":path": "/lf.a2a.v1.A2AService/GetTask" }, garbage),
      request(s, { ":path": "/lf.a2a.v1.A2AService/GetTask" }),
    ]);
    s.close();
    expect(answers.map((a) => statusOf(a).code)).toEqual([8, 12, 3, 3]);
    expect(statusOf(answers[3]).message).toBe("GetTask takes one request message; got 0 request messages");
  });

  it("A2A errors carry ErrorInfo; a bug is INTERNAL, saying nothing of it; metadata reaches the handler", async () => {
    const s = connect();
    const notFound = await request(
      s,
      { ":path": "/lf.a2a.v1.A2AService/GetTask", "a2a-version": "1.0", "a2a-extensions": "urn:x,urn:y" },
      getTask,
    );
    const bug = await request(s, { ":path": "/lf.a2a.v1.A2AService/ListTasks" }, frame(new Uint8Array()));
    s.close();
    expect(statusOf(notFound)).toEqual({
      code: 5,
      message: "Task not found: x",
      errorInfo: { reason: "TASK_NOT_FOUND", domain: "a2a-protocol.org", metadata: { taskId: "x" } },
    });
    expect(calls.find((c) => c.method.name === "GetTask" && c.request.id === "x")?.params).toEqual({
      version: "1.0",
      extensions: ["urn:x", "urn:y"],
    });
    expect(statusOf(bug)).toEqual({ code: 13, message: "internal error" });
  });

  it("a client's cancel ends the handler's stream", async () => {
    const s = connect();
    const req = s.request({
      ":method": "POST",
      ":path": "/lf.a2a.v1.A2AService/SubscribeToTask",
      "content-type": "application/grpc",
      te: "trailers",
    });
    req.end(frame(codec.encode("lf.a2a.v1.SubscribeToTaskRequest", { id: "t-3" })));
    await new Promise<void>((r) => req.once("data", () => r()));
    req.close(http2.constants.NGHTTP2_CANCEL);
    await streamClosed;
    expect(calls.at(-1)?.signal.aborted).toBe(true);
    released?.();
    s.close();
  });

  it("a client without a certificate never reaches the handler", async () => {
    const before = calls.length;
    const id = fleet.identity("caller");
    const s = http2.connect(`https://localhost:${port}`, { ca: id.ca });
    s.on("error", () => {});
    await expect(request(s, { ":path": "/lf.a2a.v1.A2AService/GetTask" }, getTask)).rejects.toThrow();
    s.destroy();
    expect(calls.length).toBe(before);
  });
});
