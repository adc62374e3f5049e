/**
 * Interop, every method: the official A2A TypeScript SDK (@a2a-js/sdk 1.3.0) as a client of our compiled
 * node over mutual TLS, for each A2A v1.0 operation (send, stream, get, list, cancel, subscribe, push configs
 * with a real webhook receiver, extended card) through each of its v1.0 transports (JSON-RPC, and HTTP+JSON
 * with its RestTransportFactory, and gRPC with its GrpcTransportFactory over TLS with the same client
 * certificate, on the same port), and the SDK's v0.3 compat transport against the same node (no A2A-Version
 * header: v0.3 method names).
 *
 * The node runs `--executor openai` against a fake model that holds only the requests whose text contains
 * "[hold]", so some tasks finish at once while others stay running until the test releases them.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { Message, Role, TaskState, type StreamResponse, type Task } from "@a2a-js/sdk";
import {
  ClientFactory,
  DefaultAgentCardResolver,
  JsonRpcTransportFactory,
  RestTransportFactory,
  type Client,
  type TransportFactory,
} from "@a2a-js/sdk/client";
import { LegacyJsonRpcTransport } from "@a2a-js/sdk/compat/v0_3/client";
import { GrpcTransportFactory } from "@a2a-js/sdk/client/grpc";
import * as grpc from "@grpc/grpc-js";
import { RequestMalformedError, TaskNotCancelableError, TaskNotFoundError } from "@a2a-js/sdk/errors";
import { serveBinary, type ServedBinary } from "../helpers/binary";
import { makeFleet, type Fleet } from "../helpers/fleet";
import { startGatedModel, type GatedModel } from "../fakes/gated-model";
import { Receiver, type ReceivedRequest } from "../fakes/webhook-receiver";
import { verifySignature } from "../../src/push/signature";
import { matchRoute } from "../../src/rpc/http-json-routes";

let fleet: Fleet;
let node: ServedBinary;
let model: GatedModel;
let receiver: Receiver;
let fetchImpl: typeof fetch;
let grpcCredentials: grpc.ChannelCredentials;
let client: Client;
/** Every request the SDK made: URL, A2A-Version header, and the operation (JSON-RPC method, or HTTP+JSON route's). */
const calls: { url: string; version: string | null; method?: string }[] = [];

/** The operation an HTTP+JSON request asked for, read with the node's own route table. */
function restOperation(url: string, method = "GET"): string | undefined {
  const match = matchRoute(new URL(url).pathname);
  return typeof match === "object" ? match.operations[method as "GET"] : undefined;
}

beforeAll(async () => {
  fleet = await makeFleet(["beta", "alpha"]);
  model = startGatedModel();
  receiver = new Receiver();
  // The SSRF guard refuses loopback webhooks unless allow-listed: allow exactly our receiver's host:port.
  // An extended card for fleet members, which the SDK's Client fetches when the public card says there is one.
  writeFileSync(
    join(fleet.homes.beta, "config.toml"),
    `push_allow = ["127.0.0.1:${receiver.port}"]\n\n[extended_card]\ndescription = "beta for the fleet"\n\n` +
      `[[extended_card.skills]]\nid = "fleet-ops"\nname = "Fleet operations"\ndescription = "Maintenance chores."\ntags = ["ops"]\n`,
  );
  node = await serveBinary(fleet.homes.beta, [
    "--executor",
    "openai",
    "--model-url",
    model.url,
    "--model",
    "test-model",
  ]);
  const { cert, key, ca } = fleet.identity("alpha");
  grpcCredentials = grpc.credentials.createSsl(Buffer.from(ca), Buffer.from(key), Buffer.from(cert));
  fetchImpl = ((url: string | URL | Request, init?: RequestInit) => {
    let method = restOperation(String(url), init?.method);
    try {
      method ??= JSON.parse(String(init?.body)).method;
    } catch {
      method = undefined;
    }
    calls.push({ url: String(url), version: new Headers(init?.headers).get("a2a-version"), method });
    return fetch(url, { ...init, tls: { cert, key, ca } } as RequestInit);
  }) as typeof fetch;
});

afterAll(async () => {
  await node?.stop("SIGKILL");
  model?.stop();
  receiver?.stop();
  fleet?.cleanup();
});

/**
 * The card as fetched, its GRPC interface dialled by name: grpc-js sets the TLS server name to the host it
 * dials, and Bun's node:tls refuses an IP address there (ERR_INVALID_ARG_VALUE; on Node the same channel
 * works). The certificate names localhost too, so the channel verifies it as it would any name.
 */
const byName = (async (url: string | URL | Request, init?: RequestInit) => {
  const res = await fetchImpl(url, init);
  const text = (await res.text()).replaceAll('"url":"127.0.0.1:', '"url":"localhost:');
  return new Response(text, { status: res.status, headers: res.headers });
}) as typeof fetch;

type SendParams = Parameters<Client["sendMessage"]>[0];

function sdkMessage(text: string, extra: Record<string, unknown> = {}): Message {
  return Message.fromJSON({ messageId: crypto.randomUUID(), role: "ROLE_USER", parts: [{ text }], ...extra });
}

function send(
  text: string,
  options: { contextId?: string; returnImmediately?: boolean; push?: Record<string, unknown> } = {},
) {
  return client.sendMessage({
    tenant: "",
    message: sdkMessage(text, options.contextId ? { contextId: options.contextId } : {}),
    configuration: {
      acceptedOutputModes: [],
      returnImmediately: options.returnImmediately ?? false,
      taskPushNotificationConfig: options.push as never,
    },
    metadata: undefined,
  } as SendParams) as Promise<Task>;
}

const partText = (p: { content?: { $case: string; value?: unknown } } | undefined) =>
  p?.content?.$case === "text" ? (p.content.value as string) : undefined;
const textOf = (task: Task) => partText(task.artifacts[0]?.parts[0]);
const caseOf = (e: StreamResponse) => e.payload?.$case;
const terminal = new Set([
  TaskState.TASK_STATE_COMPLETED,
  TaskState.TASK_STATE_CANCELED,
  TaskState.TASK_STATE_FAILED,
  TaskState.TASK_STATE_REJECTED,
]);

async function rejection(p: Promise<unknown>): Promise<unknown> {
  return p.then(
    (v) => {
      throw new Error(`expected a rejection, got ${JSON.stringify(v)}`);
    },
    (e: unknown) => e,
  );
}

/**
 * The text of the artifact a stream built, applying each artifactUpdate as A2A says: `append` adds its parts to
 * the artifact with that id, otherwise it replaces it. Also checks that the artifact was closed (lastChunk).
 */
function streamedText(events: StreamResponse[]): string {
  const updates = events
    .filter((e) => caseOf(e) === "artifactUpdate")
    .map((e) => e.payload!.value as { artifact: Task["artifacts"][0]; append: boolean; lastChunk: boolean });
  expect(updates.length).toBeGreaterThanOrEqual(1);
  expect(updates[0]!.append).toBe(false);
  expect(updates.at(-1)!.lastChunk).toBe(true);
  const byId = new Map<string, string>();
  for (const u of updates) {
    const text = u.artifact.parts.map((p) => partText(p) ?? "").join("");
    byId.set(u.artifact.artifactId, u.append ? (byId.get(u.artifact.artifactId) ?? "") + text : text);
  }
  expect(byId.size).toBe(1);
  return [...byId.values()][0]!;
}

async function collect(stream: AsyncIterable<StreamResponse>): Promise<StreamResponse[]> {
  const out: StreamResponse[] = [];
  for await (const e of stream) out.push(e);
  return out;
}

/** Checks a task's event stream: the Task first, then updates of that task only, ending with `final`. */
function expectWellFormedStream(events: StreamResponse[], final: TaskState): Task {
  expect(events.length, JSON.stringify(events)).toBeGreaterThanOrEqual(2);
  expect(caseOf(events[0]!)).toBe("task");
  const task = events[0]!.payload!.value as Task;
  for (const e of events.slice(1)) {
    expect(["statusUpdate", "artifactUpdate"]).toContain(caseOf(e));
    expect((e.payload!.value as { taskId: string }).taskId).toBe(task.id);
    expect((e.payload!.value as { contextId: string }).contextId).toBe(task.contextId);
  }
  const last = events.at(-1)!;
  expect(caseOf(last)).toBe("statusUpdate");
  expect((last.payload!.value as { status: { state: TaskState } }).status.state).toBe(final);
  // Nothing terminal before the end.
  for (const e of events.slice(1, -1))
    if (caseOf(e) === "statusUpdate")
      expect(terminal.has((e.payload!.value as { status: { state: TaskState } }).status.state)).toBe(false);
  return task;
}

const TRANSPORTS: { name: string; factory: () => TransportFactory }[] = [
  { name: "JSONRPC", factory: () => new JsonRpcTransportFactory({ fetchImpl }) },
  { name: "HTTP+JSON", factory: () => new RestTransportFactory({ fetchImpl }) },
  // The card's GRPC interface is host:port on the mutual-TLS port: the channel presents the fleet certificate.
  { name: "GRPC", factory: () => new GrpcTransportFactory({ grpcChannelCredentials: grpcCredentials }) },
];

describe.each(TRANSPORTS)("@a2a-js/sdk v1.0 client over $name: every method against a2a-node", ({ name, factory }) => {
  let start = 0;
  beforeAll(async () => {
    start = calls.length;
    // Given one transport, the SDK takes the card's first interface of that binding (the card lists both).
    client = await new ClientFactory({
      transports: [factory()],
      cardResolver: new DefaultAgentCardResolver({ fetchImpl: name === "GRPC" ? byName : fetchImpl }),
    }).createFromUrl(node.url);
  });

  it("sendMessage (blocking) returns the COMPLETED task with the model's answer", async () => {
    const text = `blocking ${crypto.randomUUID()}`;
    const task = await send(text);
    expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(textOf(task)).toBe(`echo: ${text}`);
    expect(task.history.some((m) => m.role === Role.ROLE_USER && partText(m.parts[0]) === text)).toBe(true);
    expect(model.requests.find((r) => r.text === text)?.body.model).toBe("test-model");
  });

  it("sendMessageStream yields the Task, then its updates, and ends by itself after the terminal status", async () => {
    const text = `streamed ${crypto.randomUUID()}`;
    const events = await collect(
      client.sendMessageStream({
        tenant: "",
        message: sdkMessage(text),
        configuration: undefined,
        metadata: undefined,
      } as SendParams),
    );
    const task = expectWellFormedStream(events, TaskState.TASK_STATE_COMPLETED);
    expect([TaskState.TASK_STATE_SUBMITTED, TaskState.TASK_STATE_WORKING]).toContain(task.status?.state);
    expect(streamedText(events)).toBe(`echo: ${text}`);
    // The stream's outcome is what the node recorded.
    const stored = await client.getTask({ tenant: "", id: task.id } as Parameters<Client["getTask"]>[0]);
    expect(stored.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(textOf(stored)).toBe(`echo: ${text}`);
  });

  it("listTasks filters by contextId and pages with pageSize + nextPageToken", async () => {
    const contextId = crypto.randomUUID();
    const sent: Task[] = [];
    for (let i = 0; i < 5; i++) sent.push(await send(`listed ${i} ${crypto.randomUUID()}`, { contextId }));
    const other = await send(`another context ${crypto.randomUUID()}`);
    for (const t of sent) expect(t.contextId).toBe(contextId);
    expect(other.contextId).not.toBe(contextId);

    const seen: Task[] = [];
    const pageSizes: number[] = [];
    let pageToken = "";
    for (let page = 0; page < 10; page++) {
      const list = await client.listTasks({
        tenant: "",
        contextId,
        status: TaskState.TASK_STATE_UNSPECIFIED,
        pageSize: 2,
        pageToken,
        statusTimestampAfter: undefined,
        includeArtifacts: true,
      } as Parameters<Client["listTasks"]>[0]);
      expect(list.totalSize).toBe(5);
      pageSizes.push(list.tasks.length);
      seen.push(...list.tasks);
      pageToken = list.nextPageToken;
      if (pageToken === "") break;
    }
    expect(pageSizes).toEqual([2, 2, 1]);
    const ids = seen.map((t) => t.id);
    expect(new Set(ids).size).toBe(ids.length);
    expect(new Set(ids)).toEqual(new Set(sent.map((t) => t.id)));
    expect(ids).not.toContain(other.id);
    for (const t of seen) {
      expect(t.contextId).toBe(contextId);
      expect(t.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
      expect(textOf(t)).toMatch(/^echo: listed \d /);
    }
    // Newest first.
    const stamps = seen.map((t) => Date.parse(t.status!.timestamp!));
    expect([...stamps].sort((a, b) => b - a)).toEqual(stamps);
  });

  let canceled: Task;

  it("cancelTask of a running task aborts the model request and records CANCELED", async () => {
    const marker = `cancel-me ${crypto.randomUUID()}`;
    const started = await send(`${marker} [hold]`, { returnImmediately: true });
    expect([TaskState.TASK_STATE_SUBMITTED, TaskState.TASK_STATE_WORKING]).toContain(started.status?.state);
    const request = await model.arrival(marker);
    canceled = await client.cancelTask({ tenant: "", id: started.id, metadata: undefined } as Parameters<
      Client["cancelTask"]
    >[0]);
    expect(canceled.id).toBe(started.id);
    expect(canceled.status?.state).toBe(TaskState.TASK_STATE_CANCELED);
    await request.aborted; // the node gave up its model request
    expect(request.answered).toBe(false);
    const stored = await client.getTask({ tenant: "", id: started.id } as Parameters<Client["getTask"]>[0]);
    expect(stored.status?.state).toBe(TaskState.TASK_STATE_CANCELED);
    expect(stored.artifacts).toEqual([]);
  });

  it("cancelTask of a completed task raises TaskNotCancelableError and leaves it COMPLETED", async () => {
    const done = await send(`finished ${crypto.randomUUID()}`);
    const err = await rejection(
      client.cancelTask({ tenant: "", id: done.id, metadata: undefined } as Parameters<Client["cancelTask"]>[0]),
    );
    expect(err).toBeInstanceOf(TaskNotCancelableError);
    const stored = await client.getTask({ tenant: "", id: done.id } as Parameters<Client["getTask"]>[0]);
    expect(stored.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
  });

  it("getTask honours historyLength (unset: all, N: the last N, 0: none)", async () => {
    const get = (historyLength?: number) =>
      client.getTask({ tenant: "", id: canceled.id, historyLength } as Parameters<Client["getTask"]>[0]);
    // The canceled task's history: the user's message, then the agent's status message saying why it ended.
    const full = await get();
    expect(full.history.length).toBe(2);
    expect(full.history[0]!.role).toBe(Role.ROLE_USER);
    expect(full.history[1]!.role).toBe(Role.ROLE_AGENT);
    const last = await get(1);
    expect(last.history).toHaveLength(1);
    expect(last.history[0]!.messageId).toBe(full.history[1]!.messageId);
    expect((await get(2)).history.map((m) => m.messageId)).toEqual(full.history.map((m) => m.messageId));
    expect((await get(0)).history).toEqual([]);
  });

  it("resubscribeTask to a running task gets the Task, then the live events up to the terminal one (two subscribers alike)", async () => {
    const marker = `subscribe-me ${crypto.randomUUID()}`;
    const started = await send(`${marker} [hold]`, { returnImmediately: true });
    await model.arrival(marker);
    const subscribe = () =>
      client
        .resubscribeTask({ tenant: "", id: started.id } as Parameters<Client["resubscribeTask"]>[0])
        [Symbol.asyncIterator]();
    const a = subscribe();
    const b = subscribe();
    const [firstA, firstB] = await Promise.all([a.next(), b.next()]);
    for (const first of [firstA, firstB]) {
      expect(first.done).toBe(false);
      expect(caseOf(first.value as StreamResponse)).toBe("task");
      const t = (first.value as StreamResponse).payload!.value as Task;
      expect(t.id).toBe(started.id);
      expect([TaskState.TASK_STATE_SUBMITTED, TaskState.TASK_STATE_WORKING]).toContain(t.status?.state);
    }
    model.release(marker);
    const rest = async (it: AsyncIterator<StreamResponse>, first: StreamResponse) => {
      const out = [first];
      for (let r = await it.next(); !r.done; r = await it.next()) out.push(r.value);
      return out;
    };
    const [eventsA, eventsB] = await Promise.all([
      rest(a, firstA.value as StreamResponse),
      rest(b, firstB.value as StreamResponse),
    ]);
    expectWellFormedStream(eventsA, TaskState.TASK_STATE_COMPLETED);
    expect(streamedText(eventsA)).toBe(`echo: ${marker} [hold]`);
    // Both subscribers saw the same updates in the same order.
    expect(eventsB.slice(1)).toEqual(eventsA.slice(1));
  });

  it("resubscribeTask to a terminal task is refused (UnsupportedOperation)", async () => {
    const done = await send(`over ${crypto.randomUUID()}`);
    const it = client
      .resubscribeTask({ tenant: "", id: done.id } as Parameters<Client["resubscribeTask"]>[0])
      [Symbol.asyncIterator]();
    const err = (await rejection(it.next())) as Error;
    expect(err.message).toMatch(/COMPLETED|terminal|GetTask/i);
  });

  describe("push notification configs, delivered to a real webhook on an allow-listed loopback port", () => {
    const token = `tok-${crypto.randomUUID()}`;
    let taskId: string;
    let marker: string;
    const configRef = (id: string) => ({ tenant: "", taskId, id });

    it("create / get / list / delete on a running task", async () => {
      marker = `pushed ${crypto.randomUUID()}`;
      const started = await send(`${marker} [hold]`, { returnImmediately: true });
      taskId = started.id;
      await model.arrival(marker);

      const created = await client.createTaskPushNotificationConfig({
        tenant: "",
        id: "hook-1",
        taskId,
        url: receiver.url("/hook"),
        token,
        authentication: undefined,
      });
      expect(created).toMatchObject({ id: "hook-1", taskId, url: receiver.url("/hook"), token });
      const second = await client.createTaskPushNotificationConfig({
        tenant: "",
        id: "hook-2",
        taskId,
        url: receiver.url("/hook-2"),
        token: "",
        authentication: undefined,
      });
      expect(second).toMatchObject({ id: "hook-2", taskId, url: receiver.url("/hook-2") });

      const got = await client.getTaskPushNotificationConfig(configRef("hook-1"));
      expect(got).toMatchObject({ id: "hook-1", taskId, url: receiver.url("/hook"), token });

      const listed = await client.listTaskPushNotificationConfig({ tenant: "", taskId, pageSize: 0, pageToken: "" });
      expect(listed.configs.map((c) => c.id).sort()).toEqual(["hook-1", "hook-2"]);
      expect(listed.nextPageToken).toBe("");

      await client.deleteTaskPushNotificationConfig(configRef("hook-2"));
      const after = await client.listTaskPushNotificationConfig({ tenant: "", taskId, pageSize: 0, pageToken: "" });
      expect(after.configs.map((c) => c.id)).toEqual(["hook-1"]);
      expect(await rejection(client.getTaskPushNotificationConfig(configRef("hook-2")))).toBeInstanceOf(
        TaskNotFoundError,
      );

      // A page token the node did not issue (here one of ListTasks' kind) is the store's refusal, mapped to
      // -32602. (The SDK's REST client sends no pageToken for this call: JSON-RPC only.)
      if (name === "JSONRPC") {
        const foreignToken = Buffer.from("2026-01-01T00:00:00.000Z|01ABC").toString("base64url");
        const refused = (await rejection(
          client.listTaskPushNotificationConfig({ tenant: "", taskId, pageSize: 0, pageToken: foreignToken }),
        )) as { message: string };
        expect(refused.message).toContain("pageToken is not one this node issued");
        expect(JSON.stringify(refused)).toContain("-32602");
      }
    });

    it("the receiver gets the task's events POSTed as application/a2a+json with the token", async () => {
      model.release(marker);
      const isFinal = (r: ReceivedRequest) => JSON.parse(r.body).statusUpdate?.status?.state === "TASK_STATE_COMPLETED";
      let got: ReceivedRequest[] = [];
      for (let n = 1; !got.some(isFinal); n++)
        got = (await receiver.received(n)).filter((r) => r.body.includes(taskId));
      expect(got.length).toBeGreaterThanOrEqual(2);
      for (const r of got) {
        expect(r.method).toBe("POST");
        expect(r.path).toBe("/hook"); // never the deleted hook-2
        expect(r.headers["content-type"]).toBe("application/a2a+json");
        expect(r.headers["x-a2a-notification-token"]).toBe(token);
        expect(verifySignature(token, r.headers["x-a2a-timestamp"], r.body, r.headers["x-a2a-signature"])).toBe(true);
        const event = JSON.parse(r.body);
        expect((event.statusUpdate ?? event.artifactUpdate).taskId).toBe(taskId);
      }
      // The webhook heard the answer itself: its artifact chunks, in order, make up the model's text.
      const chunks = got.map((r) => JSON.parse(r.body).artifactUpdate).filter(Boolean);
      expect(chunks.map((a) => a.artifact.parts.map((p: { text?: string }) => p.text ?? "").join("")).join("")).toBe(
        `echo: ${marker} [hold]`,
      );
      expect(isFinal(got.at(-1)!)).toBe(true);
      expect(receiver.requests.some((r) => r.path === "/hook-2")).toBe(false);

      await client.deleteTaskPushNotificationConfig(configRef("hook-1"));
      const listed = await client.listTaskPushNotificationConfig({ tenant: "", taskId, pageSize: 0, pageToken: "" });
      expect(listed.configs).toEqual([]);
    });

    it("a config given with sendMessage hears the task from its first event", async () => {
      const hookToken = `at-send-${crypto.randomUUID()}`;
      const task = await send(`push at send ${crypto.randomUUID()}`, {
        push: {
          tenant: "",
          id: "",
          taskId: "",
          url: receiver.url("/at-send"),
          token: hookToken,
          authentication: undefined,
        },
      });
      expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
      const mine = (rs: ReceivedRequest[]) => rs.filter((r) => r.path === "/at-send" && r.body.includes(task.id));
      let got: ReceivedRequest[] = [];
      // From what has arrived already: every delivery may be in before the blocking call returns.
      for (let n = receiver.requests.length; !got.some((r) => r.body.includes("TASK_STATE_COMPLETED")); n++)
        got = mine(await receiver.received(n));
      const states = got.map((r) => JSON.parse(r.body).statusUpdate?.status?.state).filter(Boolean);
      expect(states[0]).toBe("TASK_STATE_WORKING"); // registered before the task started: it heard the start too
      expect(states.at(-1)).toBe("TASK_STATE_COMPLETED");
      expect(got.some((r) => JSON.parse(r.body).artifactUpdate?.taskId === task.id)).toBe(true);
      for (const r of got) expect(r.headers["x-a2a-notification-token"]).toBe(hookToken);
    });

    it("a loopback webhook that is not on the allowlist is refused, and nothing is registered", async () => {
      const done = await send(`refused hook ${crypto.randomUUID()}`);
      const otherPort = receiver.port === 65535 ? 65534 : receiver.port + 1;
      const err = (await rejection(
        client.createTaskPushNotificationConfig({
          tenant: "",
          id: "sneaky",
          taskId: done.id,
          url: `http://127.0.0.1:${otherPort}/hook`,
          token: "",
          authentication: undefined,
        }),
      )) as Error;
      expect(err).toBeInstanceOf(RequestMalformedError);
      expect(err.message).toMatch(/loopback/);
      const listed = await client.listTaskPushNotificationConfig({
        tenant: "",
        taskId: done.id,
        pageSize: 0,
        pageToken: "",
      });
      expect(listed.configs).toEqual([]);
    });
  });

  it("getAgentCard fetches the extended card the public card advertises (GetExtendedAgentCard), with the fleet-only skill", async () => {
    const card = await client.getAgentCard();
    expect(card.capabilities?.extendedAgentCard).toBe(true);
    expect(card.description).toBe("beta for the fleet");
    expect(card.skills.map((s) => s.id)).toEqual(["delegate", "fleet-ops"]);
    expect(card.supportedInterfaces.map((i) => i.protocolBinding)).toEqual(["JSONRPC", "HTTP+JSON", "GRPC"]);
    const direct = await client.transport.getExtendedAgentCard(
      { tenant: "" },
      { serviceParameters: { "A2A-Version": client.protocolVersion } },
    );
    expect(direct.skills.map((s) => s.id)).toEqual(["delegate", "fleet-ops"]);
  });

  it(`every call it made went over ${name} and named A2A-Version 1.0`, () => {
    const rpcCalls = calls.slice(start).filter((c) => c.method !== undefined);
    // Over gRPC, fetch only read the card: every operation above went over the gRPC channel.
    if (name === "GRPC") return expect(rpcCalls).toEqual([]);
    for (const c of rpcCalls) expect(new URL(c.url).pathname === "/", c.url).toBe(name === "JSONRPC");
    expect(new Set(rpcCalls.map((c) => c.method))).toEqual(
      new Set([
        "SendMessage",
        "SendStreamingMessage",
        "GetTask",
        "ListTasks",
        "CancelTask",
        "SubscribeToTask",
        "CreateTaskPushNotificationConfig",
        "GetTaskPushNotificationConfig",
        "ListTaskPushNotificationConfigs",
        "DeleteTaskPushNotificationConfig",
        "GetExtendedAgentCard",
      ]),
    );
    for (const c of rpcCalls) expect(c.version).toBe("1.0");
  });
});

describe("@a2a-js/sdk's gRPC client: errors, and re-subscribing after a cut stream", () => {
  let grpcClient: Client;
  beforeAll(async () => {
    grpcClient = await new ClientFactory({
      transports: [new GrpcTransportFactory({ grpcChannelCredentials: grpcCredentials })],
      cardResolver: new DefaultAgentCardResolver({ fetchImpl: byName }),
    }).createFromUrl(node.url);
  });

  it("getTask of an unknown id raises TaskNotFoundError (NOT_FOUND with ErrorInfo, read by the SDK)", async () => {
    const err = await rejection(
      grpcClient.getTask({ tenant: "", id: "01NOSUCHTASK0000000000000" } as Parameters<Client["getTask"]>[0]),
    );
    expect(err).toBeInstanceOf(TaskNotFoundError);
  });

  it("a cut SubscribeToTask stream, subscribed again, gets the task as it is now, then every later event", async () => {
    const marker = `cut ${crypto.randomUUID()}`;
    const started = (await grpcClient.sendMessage({
      tenant: "",
      message: sdkMessage(`${marker} [hold]`),
      configuration: { acceptedOutputModes: [], returnImmediately: true, taskPushNotificationConfig: undefined },
      metadata: undefined,
    } as SendParams)) as Task;
    await model.arrival(marker);
    const subscribe = () =>
      grpcClient
        .resubscribeTask({ tenant: "", id: started.id } as Parameters<Client["resubscribeTask"]>[0])
        [Symbol.asyncIterator]();
    const first = subscribe();
    const head = await first.next();
    expect(caseOf(head.value as StreamResponse)).toBe("task");
    // The client goes away (its call is cancelled): gRPC has no Last-Event-ID to resume with.
    await first.return?.();
    const again = subscribe();
    const now = await again.next();
    expect(caseOf(now.value as StreamResponse)).toBe("task");
    expect(((now.value as StreamResponse).payload!.value as Task).id).toBe(started.id);
    model.release(marker);
    const events = [now.value as StreamResponse];
    for (let r = await again.next(); !r.done; r = await again.next()) events.push(r.value);
    expectWellFormedStream(events, TaskState.TASK_STATE_COMPLETED);
    // Nothing of the answer is lost: the stream carried it whole, and the task holds it.
    expect(streamedText(events)).toBe(`echo: ${marker} [hold]`);
    const stored = await grpcClient.getTask({ tenant: "", id: started.id } as Parameters<Client["getTask"]>[0]);
    expect(textOf(stored)).toBe(`echo: ${marker} [hold]`);
  });
});

describe("@a2a-js/sdk v0.3 compat transport (no A2A-Version header) against a2a-node", () => {
  let legacy: LegacyJsonRpcTransport;
  let sent: Task;
  const text = `v0.3 hello ${crypto.randomUUID()}`;
  const from = () => calls.length;

  beforeAll(async () => {
    const card = await new DefaultAgentCardResolver({ fetchImpl }).resolve(node.url);
    legacy = new LegacyJsonRpcTransport({ endpoint: card.supportedInterfaces[0]!.url, fetchImpl });
  });

  it("message/send returns the completed task", async () => {
    const start = from();
    const result = await legacy.sendMessage({
      tenant: "",
      message: sdkMessage(text),
      configuration: undefined,
      metadata: undefined,
    } as SendParams);
    expect("status" in result, JSON.stringify(result)).toBe(true);
    sent = result as Task;
    expect(sent.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(textOf(sent)).toBe(`echo: ${text}`);
    expect(calls.slice(start).map((c) => [c.method, c.version])).toEqual([["message/send", null]]);
  });

  it("tasks/get returns the same task", async () => {
    const start = from();
    const task = await legacy.getTask({ tenant: "", id: sent.id, historyLength: undefined });
    expect(task.id).toBe(sent.id);
    expect(task.contextId).toBe(sent.contextId);
    expect(task.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
    expect(textOf(task)).toBe(`echo: ${text}`);
    expect(task.history.some((m) => m.role === Role.ROLE_USER)).toBe(true);
    expect(calls.slice(start).map((c) => [c.method, c.version])).toEqual([["tasks/get", null]]);
  });

  it("tasks/get of an unknown id raises TaskNotFoundError", async () => {
    expect(
      await rejection(legacy.getTask({ tenant: "", id: "01NOSUCHTASK0000000000000", historyLength: undefined })),
    ).toBeInstanceOf(TaskNotFoundError);
  });

  it("message/stream yields the task, its updates and the final status, then ends", async () => {
    const start = from();
    const streamed = `v0.3 stream ${crypto.randomUUID()}`;
    const events = await collect(
      legacy.sendMessageStream({
        tenant: "",
        message: sdkMessage(streamed),
        configuration: undefined,
        metadata: undefined,
      } as SendParams),
    );
    const task = expectWellFormedStream(events, TaskState.TASK_STATE_COMPLETED);
    expect(streamedText(events)).toBe(`echo: ${streamed}`);
    expect(calls.slice(start).map((c) => [c.method, c.version])).toEqual([["message/stream", null]]);
    const stored = await legacy.getTask({ tenant: "", id: task.id, historyLength: undefined });
    expect(stored.status?.state).toBe(TaskState.TASK_STATE_COMPLETED);
  });

  it("tasks/cancel of a completed task raises TaskNotCancelableError", async () => {
    expect(await rejection(legacy.cancelTask({ tenant: "", id: sent.id, metadata: undefined }))).toBeInstanceOf(
      TaskNotCancelableError,
    );
  });
});
