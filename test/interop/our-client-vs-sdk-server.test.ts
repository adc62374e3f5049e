/**
 * Interop, the other direction: our own clients (src/client: JSON-RPC and HTTP+JSON, over mtlsFetch) against
 * the official @a2a-js/sdk 1.3.0 server (DefaultRequestHandler + InMemoryTaskStore + an echo AgentExecutor,
 * served with the SDK's express JSON-RPC, REST and agent-card handlers) on node:https demanding a client
 * certificate from our fleet CA, as scripts/bench/sdk-server.ts wires it. The SDK's card lists HTTP+JSON
 * first, so the terminal client (`send`, `status`) speaks HTTP+JSON to it.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createServer, type Server } from "node:https";
import { rmSync, writeFileSync } from "node:fs";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import express from "express";
import { AGENT_CARD_PATH, TaskState, type AgentCard, type Message as SdkMessage } from "@a2a-js/sdk";
import {
  AgentEvent,
  DefaultRequestHandler,
  InMemoryTaskStore,
  type AgentExecutor,
  type ExecutionEventBus,
  type RequestContext,
} from "@a2a-js/sdk/server";
import { agentCardHandler, jsonRpcHandler, restHandler, UserBuilder } from "@a2a-js/sdk/server/express";
import { RemoteError, type PeerClient } from "../../src/client/peer-client";
import { JsonRpcClient } from "../../src/client/jsonrpc-client";
import { HttpJsonClient } from "../../src/client/http-json-client";
import { bufferIo } from "../../src/cli/io";
import { runCli } from "../../src/cli/registry";
import { mtlsFetch, PeerIdentityError } from "../../src/client/mtls-fetch";
import type { Task } from "../../src/protocol/types";
import { makeFleet, type Fleet } from "../helpers/fleet";

/** Echo, reported the way the SDK expects: the Task, its artifact, then the terminal status. */
class EchoExecutor implements AgentExecutor {
  readonly seen: string[] = [];

  async execute(ctx: RequestContext, bus: ExecutionEventBus): Promise<void> {
    const { taskId, contextId, userMessage } = ctx;
    const part = userMessage.parts[0]?.content;
    const text = part?.$case === "text" ? part.value : "";
    this.seen.push(text);
    const message: SdkMessage = { ...userMessage, taskId, contextId };
    bus.publish(
      AgentEvent.task({
        id: taskId,
        contextId,
        status: { state: TaskState.TASK_STATE_SUBMITTED, message: undefined, timestamp: new Date().toISOString() },
        artifacts: [],
        history: [message],
        metadata: undefined,
      }),
    );
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
        status: { state: TaskState.TASK_STATE_COMPLETED, message: undefined, timestamp: new Date().toISOString() },
        metadata: undefined,
      }),
    );
    bus.finished();
  }

  async cancelTask(): Promise<void> {}
}

let fleet: Fleet;
let server: Server;
let base: string;
let client: PeerClient;
/** Every request the SDK server received: method and path. */
const hits: string[] = [];
const executor = new EchoExecutor();

beforeAll(async () => {
  fleet = await makeFleet(["alpha", "sdkpeer"]);
  const serverId = fleet.identity("sdkpeer");
  const card: AgentCard = {
    name: "sdk-echo",
    description: "@a2a-js/sdk echo agent",
    version: "1.0.0",
    supportedInterfaces: [
      { url: "https://127.0.0.1:0/rest", protocolBinding: "HTTP+JSON", protocolVersion: "1.0", tenant: "" },
      { url: "https://127.0.0.1:0/", protocolBinding: "JSONRPC", protocolVersion: "1.0", tenant: "" },
    ],
    provider: undefined,
    capabilities: { streaming: true, pushNotifications: false, extensions: [], extendedAgentCard: false },
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
  const handler = new DefaultRequestHandler(card, new InMemoryTaskStore(), executor);
  const app = express();
  app.use((req, _res, next) => {
    hits.push(`${req.method} ${req.originalUrl}`);
    next();
  });
  app.use(`/${AGENT_CARD_PATH}`, agentCardHandler({ agentCardProvider: handler }));
  app.use("/rest", restHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }));
  app.use("/", jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }));
  server = createServer(
    { cert: serverId.cert, key: serverId.key, ca: serverId.ca, requestCert: true, rejectUnauthorized: true },
    app,
  );
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  base = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
  card.supportedInterfaces[0]!.url = `${base}/rest`;
  card.supportedInterfaces[1]!.url = `${base}/`;
});

afterAll(async () => {
  server?.closeAllConnections();
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  fleet?.cleanup();
});

const userMessage = (text: string, extra: Record<string, unknown> = {}) => ({
  messageId: crypto.randomUUID(),
  role: "ROLE_USER" as const,
  parts: [{ text }],
  ...extra,
});

async function rejection(p: Promise<unknown>): Promise<unknown> {
  return p.then(
    (v) => {
      throw new Error(`expected a rejection, got ${JSON.stringify(v)}`);
    },
    (e: unknown) => e,
  );
}

it("getAgentCard reads the SDK server's v1.0 card", async () => {
  const card = await new JsonRpcClient(
    `${base}/`,
    mtlsFetch(fleet.identity("alpha"), { name: "sdkpeer" }),
  ).getAgentCard(base);
  expect(card.name).toBe("sdk-echo");
  expect(card.supportedInterfaces.map((i) => [i.url, i.protocolBinding, i.protocolVersion])).toEqual([
    [`${base}/rest`, "HTTP+JSON", "1.0"],
    [`${base}/`, "JSONRPC", "1.0"],
  ]);
  expect(card.capabilities.streaming).toBe(true);
  expect(card.skills.map((s) => s.id)).toEqual(["echo"]);
  expect(JSON.stringify(card.securitySchemes)).toContain("mtlsSecurityScheme");
});

/**
 * Our client for each binding; a named peer: the server's certificate must say CN=sdkpeer and chain to our fleet CA.
 */
const CLIENTS: { name: string; make(peerName: string): PeerClient }[] = [
  {
    name: "JsonRpcClient (JSON-RPC)",
    make: (peer) => new JsonRpcClient(`${base}/`, mtlsFetch(fleet.identity("alpha"), { name: peer })),
  },
  {
    name: "HttpJsonClient (HTTP+JSON)",
    make: (peer) => new HttpJsonClient(`${base}/rest`, mtlsFetch(fleet.identity("alpha"), { name: peer })),
  },
];

describe.each(CLIENTS)("our $name against the @a2a-js/sdk server over mutual TLS", ({ make }) => {
  let sent: Task;
  const text = `hello from a2a-node ${crypto.randomUUID()}`;
  beforeAll(() => {
    client = make("sdkpeer");
  });

  it("sendMessage (blocking) returns the SDK's COMPLETED task with the echo artifact", async () => {
    const result = await client.sendMessage({ message: userMessage(text) });
    expect("task" in result, JSON.stringify(result)).toBe(true);
    sent = (result as { task: Task }).task;
    expect(sent.id).toEqual(expect.any(String));
    expect(sent.contextId).toEqual(expect.any(String));
    expect(sent.status.state).toBe("TASK_STATE_COMPLETED");
    expect(sent.artifacts?.[0]?.parts[0]?.text).toBe(`sdk echo: ${text}`);
    expect(executor.seen).toContain(text);
  });

  it("getTask returns the same task, its history trimmed by historyLength", async () => {
    const task = await client.getTask({ id: sent.id });
    expect(task.id).toBe(sent.id);
    expect(task.contextId).toBe(sent.contextId);
    expect(task.status.state).toBe("TASK_STATE_COMPLETED");
    expect(task.artifacts?.[0]?.parts[0]?.text).toBe(`sdk echo: ${text}`);
    expect(task.history?.some((m) => m.role === "ROLE_USER" && m.parts[0]?.text === text)).toBe(true);
    const none = await client.getTask({ id: sent.id, historyLength: 0 });
    expect(none.history ?? []).toEqual([]);
  });

  it("listTasks finds the task, and filters by contextId", async () => {
    const all = await client.listTasks({});
    expect(all.tasks.map((t) => t.id)).toContain(sent.id);
    expect(all.totalSize).toBeGreaterThanOrEqual(1);

    const contextId = crypto.randomUUID();
    const other = await client.sendMessage({ message: userMessage(`second ${crypto.randomUUID()}`, { contextId }) });
    const otherTask = (other as { task: Task }).task;
    expect(otherTask.contextId).toBe(contextId);
    const filtered = await client.listTasks({ contextId });
    expect(filtered.tasks.map((t) => t.id)).toEqual([otherTask.id]);
    expect(filtered.totalSize).toBe(1);
    expect(filtered.nextPageToken ?? "").toBe("");
  });

  it("getTask of an unknown task raises RemoteError -32001 (TaskNotFound)", async () => {
    const err = await rejection(client.getTask({ id: crypto.randomUUID() }));
    expect(err).toBeInstanceOf(RemoteError);
    expect((err as RemoteError).code).toBe(-32001);
  });

  it("cancelTask of a completed task raises RemoteError -32002 (TaskNotCancelable)", async () => {
    const err = await rejection(client.cancelTask(sent.id));
    expect(err).toBeInstanceOf(RemoteError);
    expect((err as RemoteError).code).toBe(-32002);
  });

  it("sendStreamingMessage yields the SDK's Task, then its updates, to the terminal status", async () => {
    const streamed = `streamed ${crypto.randomUUID()}`;
    const events = [];
    for await (const e of client.sendStreamingMessage({ message: userMessage(streamed) })) events.push(e);
    const first = events[0] as { task?: Task };
    expect(first.task?.id, JSON.stringify(events)).toEqual(expect.any(String));
    const artifact = events.find((e) => "artifactUpdate" in e) as {
      artifactUpdate: { artifact: { parts: { text?: string }[] } };
    };
    expect(artifact.artifactUpdate.artifact.parts[0]?.text).toBe(`sdk echo: ${streamed}`);
    expect((events.at(-1) as { statusUpdate?: { status: { state: string } } }).statusUpdate?.status.state).toBe(
      "TASK_STATE_COMPLETED",
    );
  });

  it("refuses the SDK server when it is not the peer we expected (certificate CN)", async () => {
    const wrong = make("someone-else");
    const err = await rejection(wrong.getTask({ id: sent.id }));
    expect(err).toBeInstanceOf(PeerIdentityError);
    expect((err as PeerIdentityError).actualName).toBe("sdkpeer");
  });
});

describe("the terminal client and an SDK agent whose card lists HTTP+JSON first", () => {
  // The SDK agent's card is not signed, as a peer older than signed cards: accepted only when the config says so.
  async function cli(...args: string[]) {
    const io = bufferIo({ A2A_NODE_UNSIGNED_CARDS: "accept" });
    const code = await runCli(["--home", fleet.homes.alpha, ...args], io);
    return { code, out: io.out(), err: io.err() };
  }

  it("send --wait and status speak HTTP+JSON to it (the SDK serves JSON-RPC too, at another path)", async () => {
    expect((await cli("peers", "add", "sdkpeer", base)).code).toBe(0);
    const refusing = bufferIo();
    expect(
      await runCli(
        ["--home", fleet.homes.alpha, "send", "--agent", "sdkpeer", "--task", "unsigned", "--wait"],
        refusing,
      ),
    ).toBe(8);
    expect(refusing.err()).toContain(
      `a2a-node: peer 'sdkpeer' at ${base} is not trusted: its agent card is not signed\n`,
    );
    expect(refusing.err()).toContain('unsigned_cards = "accept" in config.toml (or A2A_NODE_UNSIGNED_CARDS=accept)');
    // doctor says the same of it, as a warning.
    const doctor = bufferIo();
    await runCli(["--home", fleet.homes.alpha, "doctor", "--json", "--timeout", "3"], doctor);
    const finding = JSON.parse(doctor.out()).checks.find((c: { check: string }) => c.check === "peer sdkpeer");
    expect(finding).toMatchObject({
      status: "warn",
      detail: expect.stringMatching(/answers over mutual TLS: card "sdk-echo".*, but its agent card is not signed$/),
    });
    expect(finding.fix).toContain('send and status refuse it unless unsigned_cards = "accept"');
    // The same setting from the home's config file.
    writeFileSync(join(fleet.homes.alpha, "config.toml"), 'unsigned_cards = "accept"\n');
    try {
      const viaFile = bufferIo();
      expect(
        await runCli(
          ["--home", fleet.homes.alpha, "send", "--agent", "sdkpeer", "--task", "via file", "--wait"],
          viaFile,
        ),
      ).toBe(0);
      expect(viaFile.err()).toContain("its agent card is not signed; used anyway");
    } finally {
      rmSync(join(fleet.homes.alpha, "config.toml"));
    }
    const before = executor.seen.length;
    const from = hits.length;
    const sent = await cli("send", "--agent", "sdkpeer", "--task", "over rest", "--wait", "--json");
    expect(sent.code, sent.err).toBe(0);
    expect(sent.err).toContain(
      `warning: peer 'sdkpeer' at ${base}: its agent card is not signed; used anyway (unsigned_cards = "accept")`,
    );
    const task = JSON.parse(sent.out);
    expect(task).toMatchObject({
      status: { state: "TASK_STATE_COMPLETED" },
      artifacts: [{ parts: [{ text: "sdk echo: over rest" }] }],
    });
    expect(executor.seen.slice(before)).toEqual(["over rest"]);
    const status = await cli("status", "--agent", "sdkpeer", "--task-id", task.id);
    expect(status.code, status.err).toBe(0);
    expect(status.out).toBe(`task ${task.id} completed (peer 'sdkpeer')\nsdk echo: over rest\n`);
    const missing = await cli("status", "--agent", "sdkpeer", "--task-id", crypto.randomUUID());
    expect(missing.code).toBe(3);
    expect(missing.err).toMatch(/answered error -32001/);
    // After reading the card, every call went to the HTTP+JSON routes: none to JSON-RPC's POST /.
    const calls = hits.slice(from).filter((h) => !h.includes("agent-card.json"));
    const shapes = new Set(calls.map((h) => h.replace(/[0-9a-f-]{36}/g, "ID")));
    expect(shapes.has("POST /rest/message:send")).toBe(true);
    expect(shapes.has("GET /rest/tasks/ID")).toBe(true);
    // send --wait follows the task with SubscribeToTask while it runs (how often it still runs when the answer
    // comes back depends on the SDK's timing); nothing else is asked, and all of it over HTTP+JSON.
    for (const s of shapes)
      expect(["POST /rest/message:send", "GET /rest/tasks/ID", "POST /rest/tasks/ID:subscribe"]).toContain(s);
  });
});
