import { describe, expect, it } from "vitest";
import { A2AError } from "../../../src/protocol/errors";
import type { AgentCard, Artifact, Message, Part, Task, TaskState } from "../../../src/protocol/types";
import { TASK_STATES } from "../../../src/protocol/types";
import {
  DATA_PART_COMPAT_FLAG,
  LEGACY_METADATA_KEY,
  fromV03Artifact,
  fromV03ArtifactUpdate,
  fromV03Message,
  fromV03Part,
  fromV03PushConfig,
  fromV03SendParams,
  fromV03State,
  fromV03StatusUpdate,
  fromV03Task,
  legacyRecordFromMessage,
  legacySendParams,
  legacyToSendParams,
  toLegacyRecord,
  toV03AgentCard,
  toV03Artifact,
  toV03ArtifactUpdate,
  toV03Event,
  toV03Message,
  toV03Part,
  toV03PushConfig,
  toV03SendResult,
  toV03State,
  toV03StatusUpdate,
  toV03Task,
  v03ReturnImmediately,
} from "../../../src/protocol/v03/convert";

/** Runs fn, expects an A2AError with this code (and message fragment), and returns it. */
function expectA2AError(fn: () => unknown, code: number, fragment?: string): A2AError {
  let err: unknown;
  try {
    fn();
  } catch (e) {
    err = e;
  }
  expect(err).toBeInstanceOf(A2AError);
  expect((err as A2AError).code).toBe(code);
  if (fragment) expect((err as A2AError).message).toContain(fragment);
  return err as A2AError;
}
const expectInvalid = (fn: () => unknown, fragment: string) => expectA2AError(fn, -32602, fragment);

const V03_STATES: Record<TaskState, string> = {
  TASK_STATE_SUBMITTED: "submitted",
  TASK_STATE_WORKING: "working",
  TASK_STATE_INPUT_REQUIRED: "input-required",
  TASK_STATE_AUTH_REQUIRED: "auth-required",
  TASK_STATE_COMPLETED: "completed",
  TASK_STATE_CANCELED: "canceled",
  TASK_STATE_FAILED: "failed",
  TASK_STATE_REJECTED: "rejected",
};

const agentMessage: Message = {
  messageId: "m-agent",
  contextId: "ctx-1",
  taskId: "task-1",
  role: "ROLE_AGENT",
  parts: [{ text: "done", metadata: { tone: "dry" } }],
  metadata: { trace: "t1" },
  extensions: ["https://example.org/ext"],
  referenceTaskIds: ["task-0"],
};

const fullTask: Task = {
  id: "task-1",
  contextId: "ctx-1",
  status: { state: "TASK_STATE_COMPLETED", message: agentMessage, timestamp: "2026-03-01T10:00:00.000Z" },
  history: [
    { messageId: "m-user", contextId: "ctx-1", taskId: "task-1", role: "ROLE_USER", parts: [{ text: "hi" }] },
    agentMessage,
  ],
  artifacts: [
    {
      artifactId: "a-1",
      name: "report",
      description: "the report",
      parts: [{ text: "body" }, { raw: "aGVsbG8=", filename: "h.txt", mediaType: "text/plain" }, { data: { n: 1 } }],
      metadata: { size: 3 },
      extensions: ["https://example.org/ext"],
    },
  ],
  metadata: { owner: "alpha" },
};

describe("task states", () => {
  it("maps every v1.0 state to its lowercase v0.3 string and back", () => {
    expect(TASK_STATES.length).toBe(8);
    for (const s of TASK_STATES) {
      expect(toV03State(s)).toBe(V03_STATES[s]);
      expect(fromV03State(V03_STATES[s])).toBe(s);
    }
  });

  it("refuses 'unknown', v1.0 names and non-strings from clients with -32602 naming the field", () => {
    for (const bad of ["unknown", "TASK_STATE_COMPLETED", "Completed", 3, undefined]) {
      expectInvalid(
        () => fromV03State(bad, "params.status.state"),
        "params.status.state must be one of submitted, working",
      );
    }
  });
});

describe("parts", () => {
  const cases: [string, Part, unknown][] = [
    ["text", { text: "hello", metadata: { lang: "en" } }, { kind: "text", text: "hello", metadata: { lang: "en" } }],
    [
      "raw bytes",
      { raw: "aGVsbG8=", filename: "h.txt", mediaType: "text/plain" },
      { kind: "file", file: { bytes: "aGVsbG8=", name: "h.txt", mimeType: "text/plain" } },
    ],
    [
      "url",
      { url: "https://example.org/f.pdf", mediaType: "application/pdf", metadata: { k: 1 } },
      { kind: "file", file: { uri: "https://example.org/f.pdf", mimeType: "application/pdf" }, metadata: { k: 1 } },
    ],
    ["raw without name or type", { raw: "AA==" }, { kind: "file", file: { bytes: "AA==" } }],
    ["data object", { data: { a: [1, 2], b: { c: true } } }, { kind: "data", data: { a: [1, 2], b: { c: true } } }],
  ];
  for (const [name, v1, v03] of cases) {
    it(`converts a ${name} part both ways`, () => {
      expect(toV03Part(v1)).toEqual(v03);
      expect(fromV03Part(v03, "p")).toEqual(v1);
      expect(fromV03Part(toV03Part(v1), "p")).toEqual(v1);
    });
  }

  it("wraps non-object data as {value} with the compat flag, and unwraps it again", () => {
    for (const value of [[1, "two"], 42, "text", true, null]) {
      const v03 = toV03Part({ data: value, metadata: { keep: "me" } });
      expect(v03).toEqual({ kind: "data", data: { value }, metadata: { keep: "me", [DATA_PART_COMPAT_FLAG]: true } });
      expect(fromV03Part(v03, "p")).toEqual({ data: value, metadata: { keep: "me" } });
    }
    // Without other metadata the flag leaves no empty metadata object behind.
    expect(fromV03Part(toV03Part({ data: 7 }), "p")).toEqual({ data: 7 });
  });

  it("does not change the part it was given", () => {
    const p: Part = { data: 5, metadata: { x: 1 } };
    toV03Part(p);
    expect(p).toEqual({ data: 5, metadata: { x: 1 } });
  });

  it("refuses malformed v0.3 parts with precise -32602 messages", () => {
    expectInvalid(() => fromV03Part("text", "params.message.parts[0]"), "params.message.parts[0] must be an object");
    expectInvalid(() => fromV03Part({ text: "no kind" }, "p"), 'p.kind must be "text", "file" or "data"');
    expectInvalid(() => fromV03Part({ kind: "image", text: "x" }, "p"), 'p.kind must be "text", "file" or "data"');
    expectInvalid(() => fromV03Part({ kind: "text", text: 5 }, "p"), "p.text must be a string");
    expectInvalid(() => fromV03Part({ kind: "text" }, "p"), "p.text must be a string");
    expectInvalid(() => fromV03Part({ kind: "file" }, "p"), "p.file must be an object with bytes or uri");
    expectInvalid(() => fromV03Part({ kind: "file", file: {} }, "p"), "p.file must have exactly one of bytes or uri");
    expectInvalid(
      () => fromV03Part({ kind: "file", file: { bytes: "AA==", uri: "https://x" } }, "p"),
      "p.file must have exactly one of bytes or uri",
    );
    expectInvalid(
      () => fromV03Part({ kind: "file", file: { bytes: "not base64!" } }, "p"),
      "p.file.bytes must be base64 text",
    );
    expectInvalid(() => fromV03Part({ kind: "file", file: { bytes: 12 } }, "p"), "p.file.bytes must be base64 text");
    expectInvalid(() => fromV03Part({ kind: "file", file: { uri: "" } }, "p"), "p.file.uri must be a non-empty string");
    expectInvalid(
      () => fromV03Part({ kind: "file", file: { uri: "https://x", name: 3 } }, "p"),
      "p.file.name must be a string",
    );
    expectInvalid(
      () => fromV03Part({ kind: "file", file: { uri: "https://x", mimeType: [] } }, "p"),
      "p.file.mimeType must be a string",
    );
    expectInvalid(() => fromV03Part({ kind: "data", data: [1, 2] }, "p"), "p.data must be an object");
    expectInvalid(() => fromV03Part({ kind: "data", data: "s" }, "p"), "p.data must be an object");
    expectInvalid(() => fromV03Part({ kind: "data" }, "p"), "p.data must be an object");
    expectInvalid(() => fromV03Part({ kind: "text", text: "x", metadata: "m" }, "p"), "p.metadata must be an object");
  });

  it("reports a v1.0 part without content as an internal error (it can only come from our own data)", () => {
    expectA2AError(() => toV03Part({ filename: "orphan" }), -32603, "cannot express a part");
  });
});

describe("messages", () => {
  it("converts every field both ways, with role user/agent and kind 'message'", () => {
    const v03 = toV03Message(agentMessage);
    expect(v03).toEqual({
      kind: "message",
      messageId: "m-agent",
      contextId: "ctx-1",
      taskId: "task-1",
      role: "agent",
      parts: [{ kind: "text", text: "done", metadata: { tone: "dry" } }],
      metadata: { trace: "t1" },
      extensions: ["https://example.org/ext"],
      referenceTaskIds: ["task-0"],
    });
    expect(fromV03Message(v03)).toEqual(agentMessage);
    const user = fromV03Message({
      kind: "message",
      messageId: "u1",
      role: "user",
      parts: [{ kind: "text", text: "hi" }],
    });
    expect(user).toEqual({ messageId: "u1", role: "ROLE_USER", parts: [{ text: "hi" }] });
    expect(toV03Message(user).role).toBe("user");
  });

  it("drops empty ids and lists, and accepts a message without kind", () => {
    const m = fromV03Message({
      messageId: "u1",
      role: "user",
      contextId: "",
      taskId: "",
      extensions: [],
      parts: [{ kind: "data", data: { x: 1 } }],
    });
    expect(m).toEqual({ messageId: "u1", role: "ROLE_USER", parts: [{ data: { x: 1 } }] });
    expect(toV03Message({ ...m, contextId: "", referenceTaskIds: [] })).toEqual({
      kind: "message",
      messageId: "u1",
      role: "user",
      parts: [{ kind: "data", data: { x: 1 } }],
    });
  });

  it("refuses malformed messages with -32602 naming the field", () => {
    const ok = { kind: "message", messageId: "m", role: "user", parts: [{ kind: "text", text: "x" }] };
    expectInvalid(() => fromV03Message(undefined), "params.message is required and must be an object");
    expectInvalid(() => fromV03Message({ ...ok, kind: "task" }), 'params.message.kind must be "message"');
    expectInvalid(
      () => fromV03Message({ ...ok, messageId: "" }),
      "params.message.messageId must be a non-empty string",
    );
    expectInvalid(
      () => fromV03Message({ ...ok, messageId: "x".repeat(201) }),
      "params.message.messageId is longer than 200 characters",
    );
    expectInvalid(() => fromV03Message({ ...ok, role: "ROLE_USER" }), 'params.message.role must be "user" or "agent"');
    expectInvalid(() => fromV03Message({ ...ok, parts: [] }), "params.message.parts must be a non-empty array");
    expectInvalid(
      () => fromV03Message({ ...ok, parts: { kind: "text" } }),
      "params.message.parts must be a non-empty array",
    );
    expectInvalid(
      () => fromV03Message({ ...ok, parts: [ok.parts[0], { kind: "text", text: 1 }] }),
      "params.message.parts[1].text must be a string",
    );
    expectInvalid(() => fromV03Message({ ...ok, contextId: 9 }), "params.message.contextId must be a string");
    expectInvalid(() => fromV03Message({ ...ok, metadata: [] }), "params.message.metadata must be an object");
    expectInvalid(
      () => fromV03Message({ ...ok, referenceTaskIds: "t" }),
      "params.message.referenceTaskIds must be an array of strings",
    );
  });
});

describe("artifacts and tasks", () => {
  it("round-trips an artifact with every part kind", () => {
    const a: Artifact = fullTask.artifacts![0];
    const v03 = toV03Artifact(a);
    expect(v03.parts.map((p) => p.kind)).toEqual(["text", "file", "data"]);
    expect(v03).toMatchObject({ artifactId: "a-1", name: "report", description: "the report", metadata: { size: 3 } });
    expect(fromV03Artifact(v03)).toEqual(a);
  });

  it("round-trips a full task: kind, lowercase state, status message, history, artifacts, metadata", () => {
    const v03 = toV03Task(fullTask);
    expect(v03.kind).toBe("task");
    expect(v03.status).toEqual({
      state: "completed",
      message: toV03Message(agentMessage),
      timestamp: "2026-03-01T10:00:00.000Z",
    });
    expect(v03.history?.map((m) => m.role)).toEqual(["user", "agent"]);
    expect(v03.history?.every((m) => m.kind === "message")).toBe(true);
    expect(v03.metadata).toEqual({ owner: "alpha" });
    expect(fromV03Task(v03)).toEqual(fullTask);
    // And a v0.3 task survives v0.3 -> v1.0 -> v0.3 unchanged.
    expect(toV03Task(fromV03Task(v03))).toEqual(v03);
  });

  it("round-trips a task in every state", () => {
    for (const state of TASK_STATES) {
      const t: Task = { id: "t", contextId: "c", status: { state } };
      const v03 = toV03Task(t);
      expect(v03).toEqual({ kind: "task", id: "t", contextId: "c", status: { state: V03_STATES[state] } });
      expect(fromV03Task(v03)).toEqual(t);
    }
  });

  it("leaves out empty history and artifacts", () => {
    const v03 = toV03Task({
      id: "t",
      contextId: "c",
      status: { state: "TASK_STATE_WORKING" },
      history: [],
      artifacts: [],
    });
    expect(Object.keys(v03).sort()).toEqual(["contextId", "id", "kind", "status"]);
  });

  it("refuses malformed v0.3 tasks and artifacts", () => {
    expectInvalid(
      () => fromV03Task({ kind: "message", id: "t", contextId: "c", status: { state: "working" } }),
      'task.kind must be "task"',
    );
    expectInvalid(
      () => fromV03Task({ id: "t", contextId: "c", status: { state: "unknown" } }),
      "task.status.state must be one of",
    );
    expectInvalid(() => fromV03Task({ id: "t", contextId: "c" }), "task.status must be an object");
    expectInvalid(
      () => fromV03Task({ id: "", contextId: "c", status: { state: "working" } }),
      "task.id must be a non-empty string",
    );
    expectInvalid(
      () => fromV03Task({ id: "t", contextId: "c", status: { state: "working" }, history: {} }),
      "task.history must be an array",
    );
    expectInvalid(() => fromV03Artifact({ artifactId: "a" }), "artifact.parts must be an array");
    expectInvalid(() => fromV03Artifact({ parts: [] }), "artifact.artifactId must be a non-empty string");
  });
});

describe("stream events", () => {
  it("sets final on terminal and interrupted states only, for every state", () => {
    const finals: Record<TaskState, boolean> = {
      TASK_STATE_SUBMITTED: false,
      TASK_STATE_WORKING: false,
      TASK_STATE_INPUT_REQUIRED: true,
      TASK_STATE_AUTH_REQUIRED: true,
      TASK_STATE_COMPLETED: true,
      TASK_STATE_CANCELED: true,
      TASK_STATE_FAILED: true,
      TASK_STATE_REJECTED: true,
    };
    for (const state of TASK_STATES) {
      const e = toV03StatusUpdate({
        taskId: "t",
        contextId: "c",
        status: { state, timestamp: "2026-01-01T00:00:00.000Z" },
      });
      expect(e).toEqual({
        kind: "status-update",
        taskId: "t",
        contextId: "c",
        status: { state: V03_STATES[state], timestamp: "2026-01-01T00:00:00.000Z" },
        final: finals[state],
      });
      expect(fromV03StatusUpdate(e)).toEqual({
        taskId: "t",
        contextId: "c",
        status: { state, timestamp: "2026-01-01T00:00:00.000Z" },
      });
    }
  });

  it("converts artifact updates with append and lastChunk, and omits them when unset", () => {
    const artifact: Artifact = { artifactId: "a", parts: [{ text: "chunk" }] };
    const e = toV03ArtifactUpdate({
      taskId: "t",
      contextId: "c",
      artifact,
      append: true,
      lastChunk: false,
      metadata: { i: 2 },
    });
    expect(e).toEqual({
      kind: "artifact-update",
      taskId: "t",
      contextId: "c",
      artifact: { artifactId: "a", parts: [{ kind: "text", text: "chunk" }] },
      append: true,
      lastChunk: false,
      metadata: { i: 2 },
    });
    expect(fromV03ArtifactUpdate(e)).toEqual({
      taskId: "t",
      contextId: "c",
      artifact,
      append: true,
      lastChunk: false,
      metadata: { i: 2 },
    });
    const plain = toV03ArtifactUpdate({ taskId: "t", contextId: "c", artifact });
    expect("append" in plain || "lastChunk" in plain).toBe(false);
    expectInvalid(() => fromV03ArtifactUpdate({ ...e, append: "yes" }), "event.append must be true or false");
    expectInvalid(
      () => fromV03StatusUpdate({ kind: "artifact-update", taskId: "t", contextId: "c", status: { state: "working" } }),
      'event.kind must be "status-update"',
    );
  });

  it("maps each v1.0 StreamResponse to the matching v0.3 event object", () => {
    const task: Task = { id: "t", contextId: "c", status: { state: "TASK_STATE_WORKING" } };
    expect(toV03Event({ task })).toEqual(toV03Task(task));
    expect(toV03Event({ message: agentMessage })).toEqual(toV03Message(agentMessage));
    expect(
      toV03Event({ statusUpdate: { taskId: "t", contextId: "c", status: { state: "TASK_STATE_FAILED" } } }),
    ).toMatchObject({ kind: "status-update", final: true, status: { state: "failed" } });
    expect(
      toV03Event({
        artifactUpdate: {
          taskId: "t",
          contextId: "c",
          artifact: { artifactId: "a", parts: [{ url: "https://x/y" }] },
          lastChunk: true,
        },
      }),
    ).toMatchObject({
      kind: "artifact-update",
      lastChunk: true,
      artifact: { parts: [{ kind: "file", file: { uri: "https://x/y" } }] },
    });
    expectA2AError(() => toV03Event({} as never), -32603, "none of task, message");
  });

  it("answers message/send with the bare Task or Message", () => {
    const task: Task = { id: "t", contextId: "c", status: { state: "TASK_STATE_COMPLETED" } };
    expect(toV03SendResult({ task })).toEqual({
      kind: "task",
      id: "t",
      contextId: "c",
      status: { state: "completed" },
    });
    expect(toV03SendResult({ message: agentMessage }).kind).toBe("message");
  });
});

describe("push notification configs", () => {
  const v03 = {
    taskId: "task-1",
    pushNotificationConfig: {
      id: "cfg-1",
      url: "https://hooks.example.org/a2a",
      token: "tok",
      authentication: { schemes: ["Bearer"], credentials: "secret" },
    },
  };
  const v1 = {
    id: "cfg-1",
    taskId: "task-1",
    url: "https://hooks.example.org/a2a",
    token: "tok",
    authentication: { scheme: "Bearer", credentials: "secret" },
  };

  it("round-trips {taskId, pushNotificationConfig} <-> TaskPushNotificationConfig", () => {
    expect(fromV03PushConfig(v03)).toEqual(v1);
    expect(toV03PushConfig(v1)).toEqual(v03);
  });

  it("leaves a missing id empty for the handler to assign, and keeps only the first of several schemes", () => {
    const c = fromV03PushConfig({
      taskId: "t",
      pushNotificationConfig: { url: "http://h/x", authentication: { schemes: ["Basic", "Bearer"] } },
    });
    expect(c).toEqual({ id: "", taskId: "t", url: "http://h/x", authentication: { scheme: "Basic" } });
    expect(toV03PushConfig({ id: "", taskId: "t", url: "http://h/x" })).toEqual({
      taskId: "t",
      pushNotificationConfig: { url: "http://h/x" },
    });
  });

  it("refuses bad push configs with -32602 naming the field", () => {
    expectInvalid(() => fromV03PushConfig(null), "params must be an object");
    expectInvalid(
      () => fromV03PushConfig({ pushNotificationConfig: v03.pushNotificationConfig }),
      "params.taskId must be a non-empty string",
    );
    expectInvalid(
      () => fromV03PushConfig({ taskId: "t" }),
      "params.pushNotificationConfig is required and must be an object",
    );
    expectInvalid(
      () => fromV03PushConfig({ taskId: "t", pushNotificationConfig: { url: "" } }),
      "params.pushNotificationConfig.url must be a non-empty string",
    );
    expectInvalid(
      () => fromV03PushConfig({ taskId: "t", pushNotificationConfig: { url: "ftp://h/x" } }),
      "params.pushNotificationConfig.url must be an http(s) URL",
    );
    expectInvalid(
      () => fromV03PushConfig({ taskId: "t", pushNotificationConfig: { url: "not a url" } }),
      "params.pushNotificationConfig.url must be an http(s) URL",
    );
    expectInvalid(
      () =>
        fromV03PushConfig({
          taskId: "t",
          pushNotificationConfig: { url: "https://h", authentication: { schemes: [] } },
        }),
      "params.pushNotificationConfig.authentication.schemes must be a non-empty array",
    );
    expectInvalid(
      () =>
        fromV03PushConfig({
          taskId: "t",
          pushNotificationConfig: { url: "https://h", authentication: { scheme: "Bearer" } },
        }),
      "params.pushNotificationConfig.authentication.schemes must be a non-empty array",
    );
    expectInvalid(
      () => fromV03PushConfig({ taskId: "t", pushNotificationConfig: { url: "https://h", token: 5 } }),
      "params.pushNotificationConfig.token must be a string",
    );
  });
});

describe("message/send params", () => {
  const message = { kind: "message", messageId: "m1", role: "user", parts: [{ kind: "text", text: "go" }] };

  it("without configuration keeps the v1.0 default (blocking), like the SDK", () => {
    const p = fromV03SendParams({ message });
    expect(p).toEqual({ message: { messageId: "m1", role: "ROLE_USER", parts: [{ text: "go" }] } });
    expect(p.configuration).toBeUndefined();
  });

  it("maps blocking to returnImmediately = !blocking; a configuration without blocking returns immediately (SDK 1.3.0)", () => {
    expect(v03ReturnImmediately(true)).toBe(false);
    expect(v03ReturnImmediately(false)).toBe(true);
    expect(v03ReturnImmediately(undefined)).toBe(true);
    expect(fromV03SendParams({ message, configuration: { blocking: true } }).configuration).toEqual({
      returnImmediately: false,
    });
    expect(fromV03SendParams({ message, configuration: { blocking: false } }).configuration).toEqual({
      returnImmediately: true,
    });
    expect(fromV03SendParams({ message, configuration: {} }).configuration).toEqual({ returnImmediately: true });
  });

  it("carries historyLength, acceptedOutputModes, pushNotificationConfig and metadata", () => {
    const p = fromV03SendParams({
      message,
      configuration: {
        blocking: true,
        historyLength: 0,
        acceptedOutputModes: ["text/plain"],
        pushNotificationConfig: { url: "https://h/cb", token: "t" },
      },
      metadata: { run: 1 },
    });
    expect(p).toEqual({
      message: { messageId: "m1", role: "ROLE_USER", parts: [{ text: "go" }] },
      configuration: {
        returnImmediately: false,
        historyLength: 0,
        acceptedOutputModes: ["text/plain"],
        taskPushNotificationConfig: { id: "", url: "https://h/cb", token: "t", taskId: "pending" },
      },
      metadata: { run: 1 },
    });
  });

  it("refuses bad params with -32602 naming the field", () => {
    expectInvalid(() => fromV03SendParams("x"), "params must be an object");
    expectInvalid(() => fromV03SendParams({}), "params.message is required and must be an object");
    expectInvalid(() => fromV03SendParams({ message, configuration: [] }), "params.configuration must be an object");
    expectInvalid(
      () => fromV03SendParams({ message, configuration: { blocking: "yes" } }),
      "params.configuration.blocking must be true or false",
    );
    expectInvalid(
      () => fromV03SendParams({ message, configuration: { historyLength: -1 } }),
      "params.configuration.historyLength must be a whole number",
    );
    expectInvalid(
      () => fromV03SendParams({ message, configuration: { historyLength: 1.5 } }),
      "params.configuration.historyLength must be a whole number",
    );
    expectInvalid(
      () => fromV03SendParams({ message, configuration: { acceptedOutputModes: [1] } }),
      "params.configuration.acceptedOutputModes must be an array of strings",
    );
    expectInvalid(
      () => fromV03SendParams({ message, configuration: { pushNotificationConfig: { url: "x" } } }),
      "params.configuration.pushNotificationConfig.url must be an http(s) URL",
    );
    expectInvalid(() => fromV03SendParams({ message, metadata: "m" }), "params.metadata must be an object");
  });
});

describe("agent card", () => {
  const card: AgentCard = {
    name: "alpha",
    description: "an agent",
    version: "1.2.3",
    supportedInterfaces: [
      { url: "https://alpha:9443/a2a/jsonrpc", protocolBinding: "JSONRPC", protocolVersion: "1.0" },
    ],
    provider: { organization: "fleet", url: "https://fleet.example" },
    capabilities: { streaming: true, pushNotifications: false, extendedAgentCard: true },
    securitySchemes: { mtls: { mtlsSecurityScheme: { description: "present a fleet cert" } } },
    securityRequirements: [{ schemes: { mtls: { list: [] } } }],
    defaultInputModes: ["text/plain"],
    defaultOutputModes: ["text/plain"],
    skills: [{ id: "echo", name: "Echo", description: "echoes", tags: ["test"], examples: [] }],
  };

  it("converts the v1.0 card to v0.3: url/preferredTransport, mutualTLS scheme, security list", () => {
    expect(toV03AgentCard(card)).toEqual({
      name: "alpha",
      description: "an agent",
      version: "1.2.3",
      protocolVersion: "0.3.0",
      url: "https://alpha:9443/a2a/jsonrpc",
      preferredTransport: "JSONRPC",
      additionalInterfaces: [{ url: "https://alpha:9443/a2a/jsonrpc", transport: "JSONRPC" }],
      provider: { organization: "fleet", url: "https://fleet.example" },
      capabilities: { streaming: true, pushNotifications: false },
      supportsAuthenticatedExtendedCard: true,
      securitySchemes: { mtls: { type: "mutualTLS", description: "present a fleet cert" } },
      security: [{ mtls: [] }],
      defaultInputModes: ["text/plain"],
      defaultOutputModes: ["text/plain"],
      skills: [{ id: "echo", name: "Echo", description: "echoes", tags: ["test"] }],
    });
  });

  it("prefers the JSON-RPC interface as the main url", () => {
    const v03 = toV03AgentCard({
      ...card,
      supportedInterfaces: [
        { url: "https://alpha/rest", protocolBinding: "HTTP+JSON", protocolVersion: "1.0" },
        { url: "https://alpha/rpc", protocolBinding: "JSONRPC", protocolVersion: "1.0" },
      ],
    });
    expect(v03.url).toBe("https://alpha/rpc");
    expect(v03.preferredTransport).toBe("JSONRPC");
    expect(v03.additionalInterfaces).toHaveLength(2);
    expectA2AError(() => toV03AgentCard({ ...card, supportedInterfaces: [] }), -32603, "no interface");
  });
});

describe("the Hermes legacy record", () => {
  it("validates tasks/send params", () => {
    expect(
      legacySendParams({ task: "  Analyze README.md  ", requester: "timmy", metadata: { p: 1 }, taskId: "abc" }),
    ).toEqual({ task: "Analyze README.md", requester: "timmy", metadata: { p: 1 }, taskId: "abc" });
    expect(legacySendParams({ task: "x", requester: null, metadata: null })).toEqual({ task: "x", metadata: {} });
    expectInvalid(() => legacySendParams(undefined), "params must be an object");
    expectInvalid(() => legacySendParams({}), "params.task is required and must be a non-empty string");
    expectInvalid(() => legacySendParams({ task: "   " }), "params.task is required and must be a non-empty string");
    expectInvalid(() => legacySendParams({ task: 5 }), "params.task is required and must be a non-empty string");
    expectInvalid(() => legacySendParams({ task: "x", requester: 1 }), "params.requester must be a string");
    expectInvalid(() => legacySendParams({ task: "x", metadata: [1] }), "params.metadata must be an object");
    expectInvalid(() => legacySendParams({ task: "x", taskId: {} }), "params.taskId must be a string");
  });

  it("turns tasks/send into a non-blocking SendMessage with one user text message", () => {
    const p = legacyToSendParams({ task: "do it", metadata: { a: 1 } }, "alpha", () => "fresh-id");
    expect(p).toEqual({
      message: { messageId: "fresh-id", role: "ROLE_USER", parts: [{ text: "do it" }] },
      configuration: { returnImmediately: true },
      metadata: { a: 1, peer_cn: "alpha", [LEGACY_METADATA_KEY]: { task: "do it", requester: "alpha" } },
    });
    // A caller-given taskId is the message id (so retries are idempotent); requester is the caller's word, but
    // peer_cn is always the name its certificate proves: a caller cannot name another peer there.
    const q = legacyToSendParams(
      { task: "x", requester: "timmy", metadata: { peer_cn: "beta" }, taskId: "t-42" },
      "alpha",
      () => "unused",
    );
    expect(q.message.messageId).toBe("t-42");
    expect(q.metadata).toEqual({ peer_cn: "alpha", [LEGACY_METADATA_KEY]: { task: "x", requester: "timmy" } });
  });

  it("builds the record from a task: lowercase state, stock status text, flattened text artifacts", () => {
    const t: Task = {
      id: "task-9",
      contextId: "c",
      status: { state: "TASK_STATE_COMPLETED", timestamp: "2026-01-02T03:04:05.000Z" },
      artifacts: [
        { artifactId: "a1", parts: [{ text: "analysis:Analyze README.md" }, { data: { n: 1 } }] },
        { artifactId: "a2", parts: [{ url: "https://x" }, { text: "second" }] },
      ],
      metadata: { peer_cn: "alpha", [LEGACY_METADATA_KEY]: { task: "Analyze README.md", requester: "timmy" } },
    };
    expect(toLegacyRecord(t, "alpha")).toEqual({
      taskId: "task-9",
      task: "Analyze README.md",
      requester: "timmy",
      metadata: { peer_cn: "alpha" },
      artifacts: [{ text: "analysis:Analyze README.md" }, { text: "second" }],
      status: { state: "completed", message: "Task completed", timestamp: "2026-01-02T03:04:05.000Z" },
    });
  });

  it("gives every state a lowercase name and a status message, preferring the task's own status text", () => {
    for (const state of TASK_STATES) {
      const r = toLegacyRecord({ id: "t", contextId: "c", status: { state } }, "alpha", () => "NOW");
      expect(r.status.state).toBe(V03_STATES[state]);
      expect(r.status.message.length).toBeGreaterThan(0);
      expect(r.status.timestamp).toBe("NOW");
      expect(r.artifacts).toEqual([]);
    }
    const failed = toLegacyRecord(
      {
        id: "t",
        contextId: "c",
        status: {
          state: "TASK_STATE_FAILED",
          message: { messageId: "e", role: "ROLE_AGENT", parts: [{ text: "boom" }] },
        },
      },
      "alpha",
    );
    expect(failed.status.message).toContain("boom");
  });

  it("falls back to the first user message and the caller for tasks not made by tasks/send", () => {
    const r = toLegacyRecord(
      {
        id: "t",
        contextId: "c",
        status: { state: "TASK_STATE_WORKING" },
        history: [{ messageId: "u", role: "ROLE_USER", parts: [{ text: "from v1" }] }],
      },
      "alpha",
    );
    expect(r).toMatchObject({
      task: "from v1",
      requester: "alpha",
      metadata: { peer_cn: "alpha" },
      status: { state: "working", message: "Task is running" },
    });
    // A peer_cn a caller wrote into a v1.0 task's metadata is not shown as the node's.
    const forged = toLegacyRecord(
      { id: "t", contextId: "c", status: { state: "TASK_STATE_WORKING" }, metadata: { peer_cn: "beta", x: 1 } },
      "alpha",
    );
    expect(forged.metadata).toEqual({ peer_cn: "alpha", x: 1 });
  });

  it("reports a direct Message answer as a completed record", () => {
    const r = legacyRecordFromMessage(
      { messageId: "m", role: "ROLE_AGENT", parts: [{ text: "instant" }] },
      { task: "q", metadata: { peer_cn: "beta" }, taskId: "t-1" },
      "alpha",
      () => "NOW",
    );
    expect(r).toEqual({
      taskId: "t-1",
      task: "q",
      requester: "alpha",
      metadata: { peer_cn: "alpha" },
      artifacts: [{ text: "instant" }],
      status: { state: "completed", message: "Task completed", timestamp: "NOW" },
    });
  });
});
