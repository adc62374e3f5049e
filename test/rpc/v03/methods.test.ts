import { describe, expect, it } from "vitest";
import { LegacyJsonRpcTransport } from "@a2a-js/sdk/compat/v0_3/client";
import type { CallContext } from "../../../src/rpc/caller";
import { A2AError } from "../../../src/protocol/errors";
import type { MethodTable, StreamEvent } from "../../../src/rpc/jsonrpc-transport";
import type { A2ARequestHandler, StreamItem } from "../../../src/rpc/request-handler";
import type {
  AgentCard,
  GetTaskParams,
  SendMessageParams,
  SendMessageResult,
  Task,
  TaskPushNotificationConfig,
} from "../../../src/protocol/types";
import { LEGACY_METADATA_KEY } from "../../../src/protocol/v03/convert";
import { v03Methods } from "../../../src/rpc/v03/methods";

const ctx: CallContext = { caller: { name: "alpha", fingerprint: "AA" } };
const NOW = "2026-03-01T10:00:00.000Z";

interface Call {
  method: keyof A2ARequestHandler;
  params?: unknown;
  ctx: CallContext;
  afterSeq?: number;
}

const card: AgentCard = {
  name: "alpha",
  description: "test agent",
  version: "1.0.0",
  supportedInterfaces: [{ url: "https://alpha:9443/a2a/jsonrpc", protocolBinding: "JSONRPC", protocolVersion: "1.0" }],
  capabilities: { streaming: true, pushNotifications: true, extendedAgentCard: true },
  securitySchemes: { mtls: { mtlsSecurityScheme: { description: "fleet cert" } } },
  securityRequirements: [{ schemes: { mtls: { list: [] } } }],
  defaultInputModes: ["text/plain"],
  defaultOutputModes: ["text/plain"],
  skills: [{ id: "echo", name: "Echo", description: "echoes", tags: ["test"] }],
};

/**
 * A stand-in for the request handler: it keeps tasks in a map (so send-then-get works), answers with canned
 * data, and records every call. Tests override single operations through `over`.
 */
function fake(over: Partial<A2ARequestHandler> = {}) {
  const calls: Call[] = [];
  const tasks = new Map<string, Task>();
  const configs: TaskPushNotificationConfig[] = [];
  let seq = 0;
  const record = (method: keyof A2ARequestHandler, params: unknown, c: CallContext, afterSeq?: number) =>
    calls.push({ method, params, ctx: c, ...(afterSeq !== undefined ? { afterSeq } : {}) });
  const find = (id: string) => {
    const t = tasks.get(id);
    if (!t) throw A2AError.taskNotFound(id);
    return t;
  };
  async function* stream(items: StreamItem[]) {
    for (const i of items) yield i;
  }

  const base: A2ARequestHandler = {
    async sendMessage(params: SendMessageParams, c) {
      record("sendMessage", params, c);
      const id = `task-${++seq}`;
      const returnNow = params.configuration?.returnImmediately === true;
      const task: Task = {
        id,
        contextId: params.message.contextId ?? "ctx-1",
        status: returnNow
          ? { state: "TASK_STATE_SUBMITTED", timestamp: NOW }
          : { state: "TASK_STATE_COMPLETED", timestamp: NOW },
        history: [{ ...params.message, taskId: id, contextId: "ctx-1" }],
        ...(returnNow ? {} : { artifacts: [{ artifactId: "a1", parts: [{ text: "echo: done" }] }] }),
        ...(params.metadata ? { metadata: params.metadata } : {}),
      };
      tasks.set(id, task);
      return { task };
    },
    async sendStreamingMessage(params, c) {
      record("sendStreamingMessage", params, c);
      const t: Task = { id: "task-s", contextId: "ctx-s", status: { state: "TASK_STATE_SUBMITTED" } };
      return stream([
        { response: { task: t } },
        {
          seq: 1,
          response: { statusUpdate: { taskId: "task-s", contextId: "ctx-s", status: { state: "TASK_STATE_WORKING" } } },
        },
        {
          seq: 2,
          response: {
            artifactUpdate: {
              taskId: "task-s",
              contextId: "ctx-s",
              artifact: { artifactId: "a", parts: [{ text: "chunk" }] },
              lastChunk: true,
            },
          },
        },
        {
          seq: 3,
          response: {
            statusUpdate: { taskId: "task-s", contextId: "ctx-s", status: { state: "TASK_STATE_COMPLETED" } },
          },
        },
      ]);
    },
    async getTask(params: GetTaskParams, c) {
      record("getTask", params, c);
      return find(params.id);
    },
    async listTasks(params, c) {
      record("listTasks", params, c);
      return { tasks: [], nextPageToken: "", pageSize: 50, totalSize: 0 };
    },
    async cancelTask(params, c) {
      record("cancelTask", params, c);
      const t = find(params.id);
      t.status = { state: "TASK_STATE_CANCELED", timestamp: NOW };
      return t;
    },
    async subscribeToTask(params, c, afterSeq) {
      record("subscribeToTask", params, c, afterSeq);
      return stream([
        {
          seq: 8,
          response: {
            statusUpdate: { taskId: params.id, contextId: "ctx-1", status: { state: "TASK_STATE_INPUT_REQUIRED" } },
          },
        },
      ]);
    },
    async createTaskPushNotificationConfig(params, c) {
      record("createTaskPushNotificationConfig", params, c);
      const saved = { ...params, id: params.id || `cfg-${configs.length + 1}` };
      configs.push(saved);
      return saved;
    },
    async getTaskPushNotificationConfig(params, c) {
      record("getTaskPushNotificationConfig", params, c);
      const found = configs.find((x) => x.taskId === params.taskId && x.id === params.id);
      if (!found) throw A2AError.taskNotFound(params.taskId);
      return found;
    },
    async listTaskPushNotificationConfigs(params, c) {
      record("listTaskPushNotificationConfigs", params, c);
      return { configs: configs.filter((x) => x.taskId === params.taskId), nextPageToken: "" };
    },
    async deleteTaskPushNotificationConfig(params, c) {
      record("deleteTaskPushNotificationConfig", params, c);
      const i = configs.findIndex((x) => x.taskId === params.taskId && x.id === params.id);
      if (i < 0) throw A2AError.taskNotFound(params.taskId);
      configs.splice(i, 1);
    },
    async getExtendedAgentCard(c) {
      record("getExtendedAgentCard", undefined, c);
      return card;
    },
  };
  return { handler: { ...base, ...over } as A2ARequestHandler, calls, tasks, configs };
}

async function collect(events: AsyncIterable<StreamEvent>): Promise<StreamEvent[]> {
  const out: StreamEvent[] = [];
  for await (const e of events) out.push(e);
  return out;
}

async function rejection(p: Promise<unknown>, code: number, fragment?: string): Promise<A2AError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(A2AError);
  expect((err as A2AError).code).toBe(code);
  if (fragment) expect((err as A2AError).message).toContain(fragment);
  return err as A2AError;
}

const userMessage = { kind: "message", messageId: "m-1", role: "user", parts: [{ kind: "text", text: "hello" }] };

describe("v03Methods: the method table", () => {
  it("offers exactly the v0.3 and Hermes method names", () => {
    const t = v03Methods(fake().handler);
    expect(Object.keys(t.unary).sort()).toEqual([
      "agent/getAuthenticatedExtendedCard",
      "message/send",
      "tasks/cancel",
      "tasks/get",
      "tasks/pushNotificationConfig/delete",
      "tasks/pushNotificationConfig/get",
      "tasks/pushNotificationConfig/list",
      "tasks/pushNotificationConfig/set",
      "tasks/send",
    ]);
    expect(Object.keys(t.stream).sort()).toEqual(["message/stream", "tasks/resubscribe"]);
  });

  it("writes errors as plain {code, message, data?} without an ErrorInfo array", () => {
    const t = v03Methods(fake().handler);
    expect(t.error(A2AError.taskNotFound("t-1"))).toEqual({
      code: -32001,
      message: "Task not found: t-1",
      data: { taskId: "t-1" },
    });
    expect(t.error(A2AError.invalidParams("params.id must be a non-empty task id"))).toEqual({
      code: -32602,
      message: "params.id must be a non-empty task id",
    });
    expect(JSON.stringify(t.error(A2AError.taskNotCancelable("t", "TASK_STATE_COMPLETED")))).not.toContain("ErrorInfo");
  });
});

describe("message/send", () => {
  it("passes a converted v1.0 SendMessage to the handler and answers the bare v0.3 Task", async () => {
    const f = fake();
    const res = await v03Methods(f.handler).unary["message/send"]({ message: userMessage, metadata: { run: 1 } }, ctx);
    expect(f.calls).toHaveLength(1);
    expect(f.calls[0]).toEqual({
      method: "sendMessage",
      params: { message: { messageId: "m-1", role: "ROLE_USER", parts: [{ text: "hello" }] }, metadata: { run: 1 } },
      ctx,
    });
    expect(res).toEqual({
      kind: "task",
      id: "task-1",
      contextId: "ctx-1",
      status: { state: "completed", timestamp: NOW },
      history: [
        {
          kind: "message",
          messageId: "m-1",
          role: "user",
          parts: [{ kind: "text", text: "hello" }],
          contextId: "ctx-1",
          taskId: "task-1",
        },
      ],
      artifacts: [{ artifactId: "a1", parts: [{ kind: "text", text: "echo: done" }] }],
      metadata: { run: 1 },
    });
  });

  it("maps configuration.blocking to returnImmediately (and a configuration without blocking to returnImmediately: true)", async () => {
    const f = fake();
    const send = v03Methods(f.handler).unary["message/send"];
    await send({ message: userMessage }, ctx);
    await send({ message: userMessage, configuration: { blocking: true, historyLength: 2 } }, ctx);
    await send({ message: userMessage, configuration: { blocking: false } }, ctx);
    const r = (await send({ message: userMessage, configuration: { acceptedOutputModes: ["text/plain"] } }, ctx)) as {
      status: { state: string };
    };
    const configs = f.calls.map((c) => (c.params as SendMessageParams).configuration);
    expect(configs).toEqual([
      undefined,
      { returnImmediately: false, historyLength: 2 },
      { returnImmediately: true },
      { returnImmediately: true, acceptedOutputModes: ["text/plain"] },
    ]);
    expect(r.status.state).toBe("submitted");
  });

  it("answers a Message result as the bare v0.3 Message", async () => {
    const f = fake({
      sendMessage: async (): Promise<SendMessageResult> => ({
        message: { messageId: "r-1", role: "ROLE_AGENT", parts: [{ data: { answer: 42 } }] },
      }),
    });
    const res = await v03Methods(f.handler).unary["message/send"]({ message: userMessage }, ctx);
    expect(res).toEqual({
      kind: "message",
      messageId: "r-1",
      role: "agent",
      parts: [{ kind: "data", data: { answer: 42 } }],
    });
  });

  it("refuses bad params with -32602 before reaching the handler", async () => {
    const f = fake();
    const send = v03Methods(f.handler).unary["message/send"];
    await rejection(send(undefined, ctx), -32602, "params must be an object");
    await rejection(
      send({ message: { ...userMessage, role: "ROLE_USER" } }, ctx),
      -32602,
      'params.message.role must be "user" or "agent"',
    );
    await rejection(
      send({ message: { ...userMessage, parts: [{ text: "v1 style" }] } }, ctx),
      -32602,
      'params.message.parts[0].kind must be "text", "file" or "data"',
    );
    await rejection(
      send({ message: userMessage, configuration: { blocking: 1 } }, ctx),
      -32602,
      "params.configuration.blocking must be true or false",
    );
    expect(f.calls).toEqual([]);
  });

  it("lets the handler's A2A errors through unchanged", async () => {
    const f = fake({
      sendMessage: async () => {
        throw A2AError.unsupportedOperation("task t is TASK_STATE_COMPLETED and cannot take more messages");
      },
    });
    const err = await rejection(
      v03Methods(f.handler).unary["message/send"]({ message: { ...userMessage, taskId: "t" } }, ctx),
      -32004,
    );
    expect(err.message).toContain("cannot take more messages");
  });
});

describe("tasks/get and tasks/cancel", () => {
  it("gets a task by {id, historyLength} and answers it in v0.3 form", async () => {
    const f = fake();
    const m = v03Methods(f.handler);
    await m.unary["message/send"]({ message: userMessage }, ctx);
    const res = (await m.unary["tasks/get"]({ id: "task-1", historyLength: 0 }, ctx)) as {
      kind: string;
      status: { state: string };
    };
    expect(f.calls[1]).toEqual({ method: "getTask", params: { id: "task-1", historyLength: 0 }, ctx });
    expect(res.kind).toBe("task");
    expect(res.status.state).toBe("completed");
  });

  it("refuses a tasks/get without id or taskId, and passes not-found through", async () => {
    const m = v03Methods(fake().handler);
    await rejection(m.unary["tasks/get"]({}, ctx), -32602, "params.id must be a non-empty task id");
    await rejection(
      m.unary["tasks/get"]({ id: "t", historyLength: -2 }, ctx),
      -32602,
      "params.historyLength must be a whole number",
    );
    await rejection(m.unary["tasks/get"]("t", ctx), -32602, "params must be an object");
    await rejection(m.unary["tasks/get"]({ id: "nope" }, ctx), -32001);
  });

  it("cancels by {id} and answers the canceled v0.3 task", async () => {
    const f = fake();
    const m = v03Methods(f.handler);
    await m.unary["message/send"]({ message: userMessage, configuration: { blocking: false } }, ctx);
    const res = (await m.unary["tasks/cancel"]({ id: "task-1", metadata: { why: "test" } }, ctx)) as {
      kind: string;
      status: { state: string };
    };
    expect(f.calls.at(-1)).toEqual({ method: "cancelTask", params: { id: "task-1" }, ctx });
    expect(res).toMatchObject({ kind: "task", id: "task-1", status: { state: "canceled" } });
    await rejection(m.unary["tasks/cancel"]({ taskId: "task-1" }, ctx), -32602, "params.id");
  });
});

describe("push notification configs", () => {
  const set = {
    taskId: "task-1",
    pushNotificationConfig: {
      id: "cfg-a",
      url: "https://hooks.example/a2a",
      token: "tok",
      authentication: { schemes: ["Bearer"], credentials: "s3cret" },
    },
  };

  it("set converts to the v1.0 config and answers the v0.3 {taskId, pushNotificationConfig}", async () => {
    const f = fake();
    const res = await v03Methods(f.handler).unary["tasks/pushNotificationConfig/set"](set, ctx);
    expect(f.calls[0].params).toEqual({
      id: "cfg-a",
      taskId: "task-1",
      url: "https://hooks.example/a2a",
      token: "tok",
      authentication: { scheme: "Bearer", credentials: "s3cret" },
    });
    expect(res).toEqual(set);
  });

  it("get by {id, pushNotificationConfigId}, or the first config of the task without one", async () => {
    const f = fake();
    const m = v03Methods(f.handler);
    await m.unary["tasks/pushNotificationConfig/set"](set, ctx);
    await m.unary["tasks/pushNotificationConfig/set"](
      { taskId: "task-1", pushNotificationConfig: { url: "https://hooks.example/b" } },
      ctx,
    );
    expect(
      await m.unary["tasks/pushNotificationConfig/get"]({ id: "task-1", pushNotificationConfigId: "cfg-2" }, ctx),
    ).toEqual({
      taskId: "task-1",
      pushNotificationConfig: { id: "cfg-2", url: "https://hooks.example/b" },
    });
    expect(f.calls.at(-1)).toMatchObject({
      method: "getTaskPushNotificationConfig",
      params: { taskId: "task-1", id: "cfg-2" },
    });
    expect(await m.unary["tasks/pushNotificationConfig/get"]({ id: "task-1" }, ctx)).toEqual(set);
    expect(f.calls.at(-1)?.method).toBe("listTaskPushNotificationConfigs");
    await rejection(
      m.unary["tasks/pushNotificationConfig/get"]({ id: "task-2" }, ctx),
      -32001,
      "No push notification config",
    );
    await rejection(
      m.unary["tasks/pushNotificationConfig/get"]({ taskId: "task-1" }, ctx),
      -32602,
      "params.id must be a non-empty string",
    );
    await rejection(
      m.unary["tasks/pushNotificationConfig/get"]({ id: "task-1", pushNotificationConfigId: 3 }, ctx),
      -32602,
      "params.pushNotificationConfigId",
    );
  });

  it("list answers a plain array and walks every page of the handler", async () => {
    const pages: Record<string, { configs: TaskPushNotificationConfig[]; nextPageToken: string }> = {
      "": { configs: [{ id: "c1", taskId: "t", url: "https://h/1" }], nextPageToken: "p2" },
      p2: { configs: [{ id: "c2", taskId: "t", url: "https://h/2" }], nextPageToken: "" },
    };
    const seen: (string | undefined)[] = [];
    const f = fake({
      listTaskPushNotificationConfigs: async (p) => {
        seen.push(p.pageToken);
        return pages[p.pageToken ?? ""];
      },
    });
    const res = await v03Methods(f.handler).unary["tasks/pushNotificationConfig/list"]({ id: "t" }, ctx);
    expect(seen).toEqual([undefined, "p2"]);
    expect(res).toEqual([
      { taskId: "t", pushNotificationConfig: { id: "c1", url: "https://h/1" } },
      { taskId: "t", pushNotificationConfig: { id: "c2", url: "https://h/2" } },
    ]);
  });

  it("delete takes {id, pushNotificationConfigId} and answers null", async () => {
    const f = fake();
    const m = v03Methods(f.handler);
    await m.unary["tasks/pushNotificationConfig/set"](set, ctx);
    expect(
      await m.unary["tasks/pushNotificationConfig/delete"]({ id: "task-1", pushNotificationConfigId: "cfg-a" }, ctx),
    ).toBeNull();
    expect(f.configs).toEqual([]);
    await rejection(
      m.unary["tasks/pushNotificationConfig/delete"]({ id: "task-1" }, ctx),
      -32602,
      "params.pushNotificationConfigId must be a non-empty string",
    );
  });

  it("refuses a set with a bad url before reaching the handler", async () => {
    const f = fake();
    await rejection(
      v03Methods(f.handler).unary["tasks/pushNotificationConfig/set"](
        { taskId: "t", pushNotificationConfig: { url: "file:///etc/passwd" } },
        ctx,
      ),
      -32602,
      "params.pushNotificationConfig.url must be an http(s) URL",
    );
    expect(f.calls).toEqual([]);
  });
});

describe("agent/getAuthenticatedExtendedCard", () => {
  it("answers the extended card in v0.3 form", async () => {
    const f = fake();
    const res = await v03Methods(f.handler).unary["agent/getAuthenticatedExtendedCard"](undefined, ctx);
    expect(f.calls).toEqual([{ method: "getExtendedAgentCard", params: undefined, ctx }]);
    expect(res).toMatchObject({
      name: "alpha",
      protocolVersion: "0.3.0",
      url: "https://alpha:9443/a2a/jsonrpc",
      preferredTransport: "JSONRPC",
      supportsAuthenticatedExtendedCard: true,
      securitySchemes: { mtls: { type: "mutualTLS" } },
    });
  });

  it("passes the handler's not-configured error through", async () => {
    const f = fake({
      getExtendedAgentCard: async () => {
        throw A2AError.extendedCardNotConfigured();
      },
    });
    await rejection(v03Methods(f.handler).unary["agent/getAuthenticatedExtendedCard"]({}, ctx), -32007);
  });
});

describe("streams", () => {
  it("message/stream maps every item to the v0.3 event and keeps the sequence number as the event id", async () => {
    const f = fake();
    const events = await collect(
      await v03Methods(f.handler).stream["message/stream"](
        { message: userMessage, configuration: { blocking: false, historyLength: 1 } },
        ctx,
        undefined,
      ),
    );
    // blocking means nothing to a stream: no returnImmediately reaches the handler.
    expect((f.calls[0].params as SendMessageParams).configuration).toEqual({ historyLength: 1 });
    expect(events.map((e) => e.id)).toEqual([undefined, "1", "2", "3"]);
    expect(events.map((e) => (e.result as { kind: string }).kind)).toEqual([
      "task",
      "status-update",
      "artifact-update",
      "status-update",
    ]);
    expect(events[1].result).toEqual({
      kind: "status-update",
      taskId: "task-s",
      contextId: "ctx-s",
      status: { state: "working" },
      final: false,
    });
    expect(events[2].result).toMatchObject({ lastChunk: true, artifact: { parts: [{ kind: "text", text: "chunk" }] } });
    expect(events[3].result).toMatchObject({ status: { state: "completed" }, final: true });
  });

  it("message/stream refuses bad params before the handler", async () => {
    const f = fake();
    await rejection(
      v03Methods(f.handler).stream["message/stream"]({ message: { messageId: "x" } }, ctx, undefined),
      -32602,
      'params.message.role must be "user" or "agent"',
    );
    expect(f.calls).toEqual([]);
  });

  it("tasks/resubscribe passes {id} and the Last-Event-ID as afterSeq; an interrupted state is final", async () => {
    const f = fake();
    const m = v03Methods(f.handler);
    const events = await collect(await m.stream["tasks/resubscribe"]({ id: "task-7" }, ctx, "7"));
    expect(f.calls).toEqual([{ method: "subscribeToTask", params: { id: "task-7" }, ctx, afterSeq: 7 }]);
    expect(events).toEqual([
      {
        id: "8",
        result: {
          kind: "status-update",
          taskId: "task-7",
          contextId: "ctx-1",
          status: { state: "input-required" },
          final: true,
        },
      },
    ]);
    await collect(await m.stream["tasks/resubscribe"]({ id: "task-7" }, ctx, undefined));
    expect(f.calls[1].afterSeq).toBeUndefined();
    await rejection(m.stream["tasks/resubscribe"]({ id: "task-7" }, ctx, "abc"), -32602, "Last-Event-ID");
    await rejection(m.stream["tasks/resubscribe"]({}, ctx, undefined), -32602, "params.id");
  });
});

describe("the Hermes legacy calls", () => {
  it("tasks/send creates the task through sendMessage (non-blocking, user text) and answers the Hermes record", async () => {
    const f = fake();
    const m = v03Methods(f.handler, { newId: () => "fresh-1" });
    const rec = await m.unary["tasks/send"](
      { task: "Analyze README.md", requester: "timmy", metadata: { prio: "high" } },
      ctx,
    );
    expect(f.calls).toEqual([
      {
        method: "sendMessage",
        params: {
          message: { messageId: "fresh-1", role: "ROLE_USER", parts: [{ text: "Analyze README.md" }] },
          configuration: { returnImmediately: true },
          metadata: {
            prio: "high",
            peer_cn: "alpha",
            [LEGACY_METADATA_KEY]: { task: "Analyze README.md", requester: "timmy" },
          },
        },
        ctx,
      },
    ]);
    expect(rec).toEqual({
      taskId: "task-1",
      task: "Analyze README.md",
      requester: "timmy",
      metadata: { prio: "high", peer_cn: "alpha" },
      artifacts: [],
      status: { state: "submitted", message: "Task submitted", timestamp: NOW },
    });
  });

  it("tasks/send uses a caller's taskId as the message id, so a retry is the same message", async () => {
    const f = fake();
    const m = v03Methods(f.handler, { newId: () => "should-not-be-used" });
    await m.unary["tasks/send"]({ task: "x", taskId: "hermes-123" }, ctx);
    await m.unary["tasks/send"]({ task: "x", taskId: "hermes-123" }, ctx);
    const ids = f.calls.map((c) => (c.params as SendMessageParams).message.messageId);
    expect(ids).toEqual(["hermes-123", "hermes-123"]);
    // Without one, each send gets a fresh random id.
    const g = fake();
    const real = v03Methods(g.handler);
    await real.unary["tasks/send"]({ task: "x" }, ctx);
    await real.unary["tasks/send"]({ task: "x" }, ctx);
    const [a, b] = g.calls.map((c) => (c.params as SendMessageParams).message.messageId);
    expect(a).toMatch(/^[0-9a-f-]{36}$/);
    expect(a).not.toBe(b);
  });

  it("tasks/get {taskId} answers the Hermes record of the current task, with text artifacts flattened", async () => {
    const f = fake();
    const m = v03Methods(f.handler);
    const sent = (await m.unary["tasks/send"]({ task: "Analyze README.md" }, ctx)) as { taskId: string };
    // The task runs on and completes with an artifact of mixed parts.
    const t = f.tasks.get(sent.taskId)!;
    t.status = { state: "TASK_STATE_COMPLETED", timestamp: "2026-03-01T10:00:05.000Z" };
    t.artifacts = [{ artifactId: "a", parts: [{ text: "analysis:Analyze README.md" }, { data: { skipped: true } }] }];
    const rec = await m.unary["tasks/get"]({ taskId: sent.taskId }, ctx);
    expect(f.calls.at(-1)).toEqual({ method: "getTask", params: { id: sent.taskId }, ctx });
    expect(rec).toEqual({
      taskId: sent.taskId,
      task: "Analyze README.md",
      requester: "alpha",
      metadata: { peer_cn: "alpha" },
      artifacts: [{ text: "analysis:Analyze README.md" }],
      status: { state: "completed", message: "Task completed", timestamp: "2026-03-01T10:00:05.000Z" },
    });
  });

  it("tasks/get {taskId} of a failed task carries the failure text", async () => {
    const f = fake();
    const m = v03Methods(f.handler);
    const sent = (await m.unary["tasks/send"]({ task: "explode" }, ctx)) as { taskId: string };
    f.tasks.get(sent.taskId)!.status = {
      state: "TASK_STATE_FAILED",
      message: { messageId: "e", role: "ROLE_AGENT", parts: [{ text: "boom" }] },
    };
    const rec = (await m.unary["tasks/get"]({ taskId: sent.taskId }, ctx)) as {
      status: { state: string; message: string };
    };
    expect(rec.status.state).toBe("failed");
    expect(rec.status.message).toContain("boom");
  });

  it("refuses bad legacy params and passes not-found through", async () => {
    const f = fake();
    const m = v03Methods(f.handler);
    await rejection(m.unary["tasks/send"]({ task: "" }, ctx), -32602, "params.task is required");
    await rejection(m.unary["tasks/send"]({ requester: "timmy" }, ctx), -32602, "params.task is required");
    await rejection(m.unary["tasks/get"]({ taskId: "" }, ctx), -32602, "params.taskId must be a non-empty string");
    expect(f.calls).toEqual([]);
    await rejection(m.unary["tasks/get"]({ taskId: "missing" }, ctx), -32001);
  });

  it("a tasks/send answered with a Message becomes a completed record", async () => {
    const f = fake({
      sendMessage: async () => ({ message: { messageId: "r", role: "ROLE_AGENT", parts: [{ text: "right away" }] } }),
    });
    const rec = await v03Methods(f.handler).unary["tasks/send"]({ task: "quick", taskId: "h-1" }, ctx);
    expect(rec).toMatchObject({
      taskId: "h-1",
      task: "quick",
      artifacts: [{ text: "right away" }],
      status: { state: "completed", message: "Task completed" },
    });
  });
});

/**
 * The official SDK's v0.3 JSON-RPC client against the table: requests it builds must pass our checks, and our
 * answers must parse in it. The fetch stand-in plays the JSON-RPC envelope and SSE framing only.
 */
describe("interop with @a2a-js/sdk's v0.3 JSON-RPC client", () => {
  function sdkClient(table: MethodTable) {
    const fetchImpl = async (_url: string | URL | Request, init?: RequestInit): Promise<Response> => {
      const req = JSON.parse(String(init?.body)) as { id: number; method: string; params: unknown };
      const envelope = (body: object) => ({ jsonrpc: "2.0", id: req.id, ...body });
      try {
        if (Object.hasOwn(table.stream, req.method)) {
          const events = await table.stream[req.method](req.params, ctx, undefined);
          let sse = "";
          for await (const e of events)
            sse += `${e.id ? `id: ${e.id}\n` : ""}data: ${JSON.stringify(envelope({ result: e.result }))}\n\n`;
          return new Response(sse, { headers: { "Content-Type": "text/event-stream" } });
        }
        const result = await table.unary[req.method](req.params, ctx);
        return Response.json(envelope({ result }));
      } catch (err) {
        return Response.json(envelope({ error: table.error(err as A2AError) }));
      }
    };
    return new LegacyJsonRpcTransport({ endpoint: "https://alpha/a2a/jsonrpc", fetchImpl: fetchImpl as typeof fetch });
  }
  const sdkMessage = {
    messageId: "sdk-1",
    contextId: "",
    taskId: "",
    role: 1,
    parts: [
      { content: { $case: "text", value: "hi" }, metadata: undefined, filename: "", mediaType: "" },
      {
        content: { $case: "url", value: "https://x/f.pdf" },
        metadata: undefined,
        filename: "f.pdf",
        mediaType: "application/pdf",
      },
      { content: { $case: "data", value: [1, 2] }, metadata: undefined, filename: "", mediaType: "" },
    ],
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  };

  it("sendMessage and getTask round-trip through the SDK client", async () => {
    const f = fake();
    const client = sdkClient(v03Methods(f.handler));
    const sent = (await client.sendMessage({
      tenant: "",
      message: sdkMessage,
      configuration: { acceptedOutputModes: [], historyLength: 5, returnImmediately: false },
      metadata: undefined,
    } as never)) as any;
    // What reached our handler: every SDK part kind, the array data part unwrapped, blocking honoured.
    expect(f.calls[0].params).toEqual({
      message: {
        messageId: "sdk-1",
        role: "ROLE_USER",
        parts: [
          { text: "hi" },
          { url: "https://x/f.pdf", filename: "f.pdf", mediaType: "application/pdf" },
          { data: [1, 2] },
        ],
      },
      configuration: { returnImmediately: false, historyLength: 5, acceptedOutputModes: [] },
    });
    // What the SDK made of our answer (its core enums: TASK_STATE_COMPLETED = 3, ROLE_USER = 1).
    expect(sent.id).toBe("task-1");
    expect(sent.status.state).toBe(3);
    expect(sent.artifacts[0].parts[0].content).toEqual({ $case: "text", value: "echo: done" });
    expect(sent.history[0].parts[2].content).toEqual({ $case: "data", value: [1, 2] });
    const got = (await client.getTask({ tenant: "", id: "task-1", historyLength: 1 } as never)) as any;
    expect(f.calls[1].params).toEqual({ id: "task-1", historyLength: 1 });
    expect(got.contextId).toBe("ctx-1");
  });

  it("streams parse in the SDK client, in order", async () => {
    const client = sdkClient(v03Methods(fake().handler));
    const seen: string[] = [];
    for await (const r of client.sendMessageStream({ tenant: "", message: sdkMessage } as never) as AsyncIterable<any>)
      seen.push(r.payload.$case);
    expect(seen).toEqual(["task", "statusUpdate", "artifactUpdate", "statusUpdate"]);
  });

  it("push config set/get/list/delete and the extended card parse in the SDK client", async () => {
    const f = fake();
    const client = sdkClient(v03Methods(f.handler));
    const cfg = {
      tenant: "",
      taskId: "task-1",
      id: "cfg-a",
      url: "https://hooks.example/a2a",
      token: "tok",
      authentication: { scheme: "Bearer", credentials: "s" },
    };
    const created = (await client.createTaskPushNotificationConfig(cfg as never)) as any;
    expect(created).toMatchObject({
      taskId: "task-1",
      id: "cfg-a",
      url: "https://hooks.example/a2a",
      token: "tok",
      authentication: { scheme: "Bearer", credentials: "s" },
    });
    expect(
      ((await client.getTaskPushNotificationConfig({ tenant: "", taskId: "task-1", id: "cfg-a" } as never)) as any).url,
    ).toBe("https://hooks.example/a2a");
    expect(
      (
        (await client.listTaskPushNotificationConfig({
          tenant: "",
          taskId: "task-1",
          pageSize: 0,
          pageToken: "",
        } as never)) as any
      ).configs,
    ).toHaveLength(1);
    await client.deleteTaskPushNotificationConfig({ tenant: "", taskId: "task-1", id: "cfg-a" } as never);
    expect(f.configs).toEqual([]);
    const sdkCard = (await client.getExtendedAgentCard({ tenant: "" } as never)) as any;
    expect(sdkCard.supportedInterfaces[0]).toMatchObject({
      url: "https://alpha:9443/a2a/jsonrpc",
      protocolBinding: "JSONRPC",
    });
    expect(sdkCard.securitySchemes.mtls.scheme.$case).toBe("mtlsSecurityScheme");
    expect(sdkCard.capabilities.extendedAgentCard).toBe(true);
  });

  it("our v0.3 errors become the SDK's typed errors", async () => {
    const client = sdkClient(v03Methods(fake().handler));
    const err = await client.getTask({ tenant: "", id: "missing" } as never).then(
      () => undefined,
      (e: unknown) => e as Error,
    );
    expect(err?.name).toBe("TaskNotFoundError");
    expect(err?.message).toContain("missing");
  });
});
