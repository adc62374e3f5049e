/**
 * Interop over gRPC, our side calling: a2a-node's gRPC client (src/client/grpc-client.ts over mtlsSession)
 * and its terminal client against the official @a2a-js/sdk 1.3.0 gRPC server (`@a2a-js/sdk/server/grpc` on
 * @grpc/grpc-js: DefaultRequestHandler + InMemoryTaskStore + InMemoryPushNotificationStore), TLS with client
 * certificates of our fleet CA on both sides. The SDK agent's card (served over HTTPS by the SDK's express
 * card handler, as an SDK agent publishes it) lists GRPC first, so `send`, `status`, `tasks list` and
 * `cancel` speak gRPC to it; its JSON-RPC interface is there too, and must not be called.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createServer, type Server } from "node:https";
import type { AddressInfo } from "node:net";
import express from "express";
import * as grpc from "@grpc/grpc-js";
import { AGENT_CARD_PATH, TaskState, type AgentCard, type Message as SdkMessage } from "@a2a-js/sdk";
import {
  AgentEvent,
  DefaultRequestHandler,
  InMemoryPushNotificationStore,
  InMemoryTaskStore,
  type AgentExecutor,
  type ExecutionEventBus,
  type RequestContext,
} from "@a2a-js/sdk/server";
import { agentCardHandler, jsonRpcHandler, UserBuilder as ExpressUsers } from "@a2a-js/sdk/server/express";
import { A2AService, grpcService, type UserBuilder } from "@a2a-js/sdk/server/grpc";
import { GrpcPeerClient } from "../../src/client/grpc-client";
import { mtlsSession } from "../../src/client/mtls-session";
import { PeerIdentityError } from "../../src/client/mtls-fetch";
import { ProtocolError, RemoteError } from "../../src/client/peer-client";
import { bufferIo } from "../../src/cli/io";
import { runCli } from "../../src/cli/registry";
import type { Message, StreamResponse, Task } from "../../src/protocol/types";
import { makeFleet, type Fleet } from "../helpers/fleet";

/**
 * Echo, reported as the SDK expects (the Task, its artifact, the terminal status); a message whose text holds
 * "[hold]" stays WORKING until it is canceled.
 */
class EchoExecutor implements AgentExecutor {
  readonly seen: string[] = [];
  private readonly held = new Map<string, () => void>();

  async execute(ctx: RequestContext, bus: ExecutionEventBus): Promise<void> {
    const { taskId, contextId, userMessage } = ctx;
    const part = userMessage.parts[0]?.content;
    const text = part?.$case === "text" ? part.value : "";
    this.seen.push(text);
    const now = () => new Date().toISOString();
    const message: SdkMessage = { ...userMessage, taskId, contextId };
    bus.publish(
      AgentEvent.task({
        id: taskId,
        contextId,
        status: { state: TaskState.TASK_STATE_SUBMITTED, message: undefined, timestamp: now() },
        artifacts: [],
        history: [message],
        metadata: undefined,
      }),
    );
    if (text.includes("[hold]")) {
      bus.publish(
        AgentEvent.statusUpdate({
          taskId,
          contextId,
          status: { state: TaskState.TASK_STATE_WORKING, message: undefined, timestamp: now() },
          metadata: undefined,
        }),
      );
      await new Promise<void>((resolve) => this.held.set(taskId, resolve));
      bus.publish(
        AgentEvent.statusUpdate({
          taskId,
          contextId,
          status: { state: TaskState.TASK_STATE_CANCELED, message: undefined, timestamp: now() },
          metadata: undefined,
        }),
      );
      bus.finished();
      return;
    }
    bus.publish(
      AgentEvent.artifactUpdate({
        taskId,
        contextId,
        artifact: {
          artifactId: `${taskId}-echo`,
          name: "echo",
          description: "",
          parts: [
            {
              content: { $case: "text", value: `sdk echo: ${text}` },
              metadata: undefined,
              filename: "",
              mediaType: "",
            },
          ],
          metadata: undefined,
          extensions: [],
        },
        append: false,
        lastChunk: true,
        metadata: undefined,
      }),
    );
    bus.publish(
      AgentEvent.statusUpdate({
        taskId,
        contextId,
        status: { state: TaskState.TASK_STATE_COMPLETED, message: undefined, timestamp: now() },
        metadata: undefined,
      }),
    );
    bus.finished();
  }

  async cancelTask(taskId: string): Promise<void> {
    this.held.get(taskId)?.();
    this.held.delete(taskId);
  }
}

let fleet: Fleet;
let grpcServer: grpc.Server;
let cardServer: Server;
let base: string;
let grpcOrigin: string;
const executor = new EchoExecutor();
/** Every gRPC call the SDK server took (its path), and every HTTPS request (method and path). */
const grpcCalls: string[] = [];
const httpsHits: string[] = [];
/** The certificate name the SDK server read from each gRPC call's TLS session. */
const callers: string[] = [];

const card: AgentCard = {
  name: "sdk-grpc-echo",
  description: "@a2a-js/sdk echo agent over gRPC",
  version: "1.0.0",
  supportedInterfaces: [],
  provider: undefined,
  capabilities: { streaming: true, pushNotifications: true, extensions: [], extendedAgentCard: true },
  securitySchemes: {
    mtls: { scheme: { $case: "mtlsSecurityScheme", value: { description: "fleet CA client certificate" } } },
  },
  securityRequirements: [{ schemes: { mtls: { list: [] } } }],
  defaultInputModes: ["text/plain"],
  defaultOutputModes: ["text/plain"],
  skills: [
    {
      id: "echo",
      name: "Echo",
      description: "Answers with the message's own text.",
      tags: ["echo"],
      examples: [],
      inputModes: [],
      outputModes: [],
      securityRequirements: [],
    },
  ],
  signatures: [],
};

beforeAll(async () => {
  fleet = await makeFleet(["alpha", "sdkpeer"]);
  const id = fleet.identity("sdkpeer");
  const extended: AgentCard = {
    ...card,
    description: "for the fleet",
    skills: [...card.skills, { ...card.skills[0]!, id: "fleet-echo" }],
  };
  const handler = new DefaultRequestHandler(
    card,
    new InMemoryTaskStore(),
    executor,
    undefined,
    new InMemoryPushNotificationStore(),
    undefined,
    extended,
  );
  const userBuilder: UserBuilder = async (call: unknown) => {
    const c = call as grpc.ServerUnaryCall<unknown, unknown>;
    grpcCalls.push(c.getPath());
    const name = String(c.getAuthContext?.()?.sslPeerCertificate?.subject?.CN);
    callers.push(name);
    return { isAuthenticated: true, userName: name };
  };
  grpcServer = new grpc.Server();
  grpcServer.addService(A2AService, grpcService({ requestHandler: handler, userBuilder }));
  const creds = grpc.ServerCredentials.createSsl(
    Buffer.from(id.ca),
    [{ cert_chain: Buffer.from(id.cert), private_key: Buffer.from(id.key) }],
    true,
  );
  const grpcPort = await new Promise<number>((resolve, reject) =>
    grpcServer.bindAsync("127.0.0.1:0", creds, (e, p) => (e ? reject(e) : resolve(p))),
  );
  grpcOrigin = `https://127.0.0.1:${grpcPort}`;

  const app = express();
  app.use((req, _res, next) => {
    httpsHits.push(`${req.method} ${req.originalUrl}`);
    next();
  });
  app.use(`/${AGENT_CARD_PATH}`, agentCardHandler({ agentCardProvider: handler }));
  app.use("/", jsonRpcHandler({ requestHandler: handler, userBuilder: ExpressUsers.noAuthentication }));
  cardServer = createServer(
    { cert: id.cert, key: id.key, ca: id.ca, requestCert: true, rejectUnauthorized: true },
    app,
  );
  await new Promise<void>((resolve, reject) => {
    cardServer.once("error", reject);
    cardServer.listen(0, "127.0.0.1", () => resolve());
  });
  base = `https://127.0.0.1:${(cardServer.address() as AddressInfo).port}`;
  // The spec's form of a gRPC interface URL: host:port, no scheme. gRPC is preferred.
  card.supportedInterfaces.push(
    { url: `127.0.0.1:${grpcPort}`, protocolBinding: "GRPC", protocolVersion: "1.0", tenant: "" },
    { url: `${base}/`, protocolBinding: "JSONRPC", protocolVersion: "1.0", tenant: "" },
  );
});

afterAll(async () => {
  grpcServer?.forceShutdown();
  cardServer?.closeAllConnections();
  await new Promise<void>((resolve) => (cardServer ? cardServer.close(() => resolve()) : resolve()));
  fleet?.cleanup();
});

const userMessage = (text: string, extra: Partial<Message> = {}): Message => ({
  messageId: crypto.randomUUID(),
  role: "ROLE_USER",
  parts: [{ text }],
  ...extra,
});

/** Our gRPC client as alpha, holding the server to the fleet name `name`. */
const clientExpecting = (name: string) =>
  new GrpcPeerClient(grpcOrigin, mtlsSession(fleet.identity("alpha"), { name }));

async function rejection(p: Promise<unknown>): Promise<unknown> {
  return p.then(
    (v) => {
      throw new Error(`expected a rejection, got ${JSON.stringify(v)}`);
    },
    (e: unknown) => e,
  );
}

async function collect(stream: AsyncIterable<StreamResponse>): Promise<StreamResponse[]> {
  const items: StreamResponse[] = [];
  for await (const item of stream) items.push(item);
  return items;
}

describe("GrpcPeerClient against the @a2a-js/sdk gRPC server, mutual TLS", () => {
  let client: GrpcPeerClient;
  let sent: Task;
  const text = `hello over grpc ${crypto.randomUUID()}`;
  beforeAll(() => {
    client = clientExpecting("sdkpeer");
  });
  afterAll(() => client.close());

  it("speaks GRPC at protocol 1.0", () => {
    expect(client.binding).toBe("GRPC");
    expect(client.protocol).toBe("1.0");
  });

  it("sendMessage (blocking) returns the SDK's COMPLETED task with the echo artifact; the SDK saw our certificate", async () => {
    const result = await client.sendMessage({ message: userMessage(text) });
    expect("task" in result, JSON.stringify(result)).toBe(true);
    sent = (result as { task: Task }).task;
    expect(sent.status.state).toBe("TASK_STATE_COMPLETED");
    expect(sent.artifacts?.[0]?.parts[0]?.text).toBe(`sdk echo: ${text}`);
    expect(executor.seen).toContain(text);
    expect(callers.at(-1)).toBe("alpha");
  });

  it("getTask returns the same task, its history trimmed by historyLength", async () => {
    const task = await client.getTask({ id: sent.id });
    expect(task).toMatchObject({ id: sent.id, contextId: sent.contextId, status: { state: "TASK_STATE_COMPLETED" } });
    expect(task.history?.some((m) => m.role === "ROLE_USER" && m.parts[0]?.text === text)).toBe(true);
    expect((await client.getTask({ id: sent.id, historyLength: 0 })).history ?? []).toEqual([]);
  });

  it("listTasks finds the task, and filters by contextId", async () => {
    expect((await client.listTasks({})).tasks.map((t) => t.id)).toContain(sent.id);
    const contextId = crypto.randomUUID();
    const other = (await client.sendMessage({ message: userMessage("second", { contextId }) })) as { task: Task };
    const filtered = await client.listTasks({ contextId });
    expect(filtered.tasks.map((t) => t.id)).toEqual([other.task.id]);
    expect(filtered.totalSize).toBe(1);
  });

  it("sendStreamingMessage yields the Task, the artifact, then the terminal status", async () => {
    const streamed = `streamed ${crypto.randomUUID()}`;
    const items = await collect(client.sendStreamingMessage({ message: userMessage(streamed) }));
    expect(items.map((i) => Object.keys(i)[0])).toEqual(["task", "artifactUpdate", "statusUpdate"]);
    expect(
      (items[1] as { artifactUpdate: { artifact: { parts: { text?: string }[] } } }).artifactUpdate.artifact.parts,
    ).toEqual([{ text: `sdk echo: ${streamed}` }]);
    expect(items.at(-1)).toMatchObject({ statusUpdate: { status: { state: "TASK_STATE_COMPLETED" } } });
  });

  it("subscribeToTask follows a running task; cancelTask ends it CANCELED, and the stream with it", async () => {
    const started = (await client.sendMessage({
      message: userMessage(`[hold] ${crypto.randomUUID()}`),
      configuration: { returnImmediately: true },
    })) as { task: Task };
    const id = started.task.id;
    let opened!: () => void;
    const subscribed = new Promise<void>((resolve) => (opened = resolve));
    const following = collect(client.subscribeToTask(id, undefined, opened));
    await subscribed;
    const canceled = await client.cancelTask(id);
    expect(canceled).toMatchObject({ id, status: { state: "TASK_STATE_CANCELED" } });
    const items = await following;
    expect(items.length).toBeGreaterThan(0);
    expect(items.at(-1)).toMatchObject({ statusUpdate: { status: { state: "TASK_STATE_CANCELED" } } });
  });

  it("an unknown task is RemoteError -32001 (TaskNotFound), as over JSON-RPC", async () => {
    const missing = crypto.randomUUID();
    const err = await rejection(client.getTask({ id: missing }));
    expect(err).toBeInstanceOf(RemoteError);
    expect((err as RemoteError).code).toBe(-32001);
    expect((err as RemoteError).data).toEqual([
      expect.objectContaining({ reason: "TASK_NOT_FOUND", domain: "a2a-protocol.org" }),
    ]);
  });

  it("cancelTask of a completed task is RemoteError -32002 (TaskNotCancelable)", async () => {
    const err = await rejection(client.cancelTask(sent.id));
    expect(err).toBeInstanceOf(RemoteError);
    expect((err as RemoteError).code).toBe(-32002);
  });

  it("push configs: create, get, list and delete, over gRPC", async () => {
    const config = { taskId: sent.id, id: "hook-1", url: "https://127.0.0.1:9/hook", token: "t" };
    const created = await client.createPushConfig(config);
    expect(created).toMatchObject({ taskId: sent.id, id: "hook-1", url: config.url });
    expect(await client.getPushConfig(sent.id, "hook-1")).toMatchObject({ id: "hook-1", url: config.url });
    expect((await client.listPushConfigs(sent.id)).configs.map((c) => c.id)).toEqual(["hook-1"]);
    await client.deletePushConfig(sent.id, "hook-1");
    expect((await client.listPushConfigs(sent.id)).configs).toEqual([]);
  });

  it("getExtendedAgentCard returns the card the SDK keeps for authenticated callers", async () => {
    const extended = await client.getExtendedAgentCard();
    expect(extended.description).toBe("for the fleet");
    expect(extended.skills.map((s) => s.id)).toEqual(["echo", "fleet-echo"]);
  });

  it("refuses the server when it is not the peer we expected (certificate CN), before any call", async () => {
    const before = grpcCalls.length;
    const wrong = clientExpecting("someone-else");
    const err = await rejection(wrong.getTask({ id: sent.id }));
    expect(err).toBeInstanceOf(PeerIdentityError);
    expect((err as PeerIdentityError).actualName).toBe("sdkpeer");
    expect(grpcCalls.length).toBe(before);
  });

  it("a port that speaks HTTP/1.1 only is named as no gRPC server", async () => {
    const err = await rejection(
      new GrpcPeerClient(base, mtlsSession(fleet.identity("alpha"), { name: "sdkpeer" })).getTask({ id: "x" }),
    );
    expect(err).toBeInstanceOf(ProtocolError);
    expect((err as Error).message).toContain("does not speak HTTP/2");
  });
});

describe("the terminal client and an SDK agent whose card lists GRPC first", () => {
  async function cli(...args: string[]) {
    // The SDK agent's card is not signed (as a peer older than signed cards): accepted by the config.
    const io = bufferIo({ A2A_NODE_UNSIGNED_CARDS: "accept" });
    const code = await runCli(["--home", fleet.homes.alpha, ...args], io);
    return { code, out: io.out(), err: io.err() };
  }

  it("send --wait, status, tasks list and cancel speak gRPC to it; the JSON-RPC interface is never called", async () => {
    expect((await cli("peers", "add", "sdkpeer", base)).code).toBe(0);
    const from = { grpc: grpcCalls.length, https: httpsHits.length };
    const sent = await cli("send", "--agent", "sdkpeer", "--task", "over grpc", "--wait", "--json");
    expect(sent.code, sent.err).toBe(0);
    const task = JSON.parse(sent.out) as Task;
    expect(task).toMatchObject({
      status: { state: "TASK_STATE_COMPLETED" },
      artifacts: [{ parts: [{ text: "sdk echo: over grpc" }] }],
    });
    const status = await cli("status", "--agent", "sdkpeer", "--task-id", task.id);
    expect(status.code, status.err).toBe(0);
    expect(status.out).toBe(`task ${task.id} completed (peer 'sdkpeer')\nsdk echo: over grpc\n`);
    const listed = await cli("tasks", "list", "--agent", "sdkpeer", "--json");
    expect(listed.code, listed.err).toBe(0);
    expect(JSON.parse(listed.out).tasks.map((t: { task: Task }) => t.task.id)).toContain(task.id);

    const calls = grpcCalls.slice(from.grpc).map((p) => p.replace("/lf.a2a.v1.A2AService/", ""));
    expect(calls).toContain("SendMessage");
    expect(calls).toContain("GetTask");
    expect(calls).toContain("ListTasks");
    expect(callers.at(-1)).toBe("alpha");
    // Over HTTPS only the card was read, once per command.
    expect(new Set(httpsHits.slice(from.https))).toEqual(new Set([`GET /${AGENT_CARD_PATH}`]));
  });

  it("send --stream prints the answer from the gRPC stream", async () => {
    const before = grpcCalls.length;
    const streamed = await cli("send", "--agent", "sdkpeer", "--task", "streamed over grpc", "--stream");
    expect(streamed.code, streamed.err).toBe(0);
    expect(streamed.out).toContain("sdk echo: streamed over grpc");
    expect(grpcCalls.slice(before)).toContain("/lf.a2a.v1.A2AService/SendStreamingMessage");
  });

  it("cancel stops a running task over gRPC", async () => {
    const started = await cli("send", "--agent", "sdkpeer", "--task", `[hold] ${crypto.randomUUID()}`, "--json");
    expect(started.code, started.err).toBe(0);
    const id = (JSON.parse(started.out) as Task).id;
    const canceled = await cli("cancel", "--agent", "sdkpeer", "--task-id", id, "--json");
    expect(canceled.code, canceled.err).toBe(0);
    expect(JSON.parse(canceled.out)).toMatchObject({ id, status: { state: "TASK_STATE_CANCELED" } });
    expect(grpcCalls.at(-1)).toBe("/lf.a2a.v1.A2AService/CancelTask");
  });

  it("an unknown task is the CLI's not-found (exit 3), as over the other bindings", async () => {
    const missing = crypto.randomUUID();
    const status = await cli("status", "--agent", "sdkpeer", "--task-id", missing);
    expect(status.code).toBe(3);
    expect(status.err).toContain(`a2a-node: peer 'sdkpeer' answered error -32001:`);
    expect(status.err).toContain(missing);
    const cancel = await cli("cancel", "--agent", "sdkpeer", "--task-id", missing);
    expect(cancel.code).toBe(3);
    expect(cancel.err).toContain("answered error -32001");
  });
});
