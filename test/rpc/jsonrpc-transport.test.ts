import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EchoExecutor } from "../../src/executors/echo-executor";
import { JsonRpcTransport } from "../../src/rpc/jsonrpc-transport";
import { v1Methods } from "../../src/rpc/v1-methods";
import { taskFixture, type TaskFixture } from "../helpers/task-fixture";

let fixture: TaskFixture;
let transport: JsonRpcTransport;
const ctx = { caller: { name: "alpha", fingerprint: "AA" } };

beforeAll(() => {
  fixture = taskFixture({
    executor: new EchoExecutor(),
    runnerOptions: { maxConcurrent: 2, maxQueued: 10, historyMessages: 5 },
    prefix: "a2a-rpc-",
  });
  transport = new JsonRpcTransport({ v1: v1Methods(fixture.handler) });
});
afterAll(() => {
  fixture.close();
});

const call = async (body: unknown, version: string | null = "1.0") => {
  const out = await transport.handle(typeof body === "string" ? body : JSON.stringify(body), version, ctx);
  if (out.kind !== "json") throw new Error("expected a JSON answer");
  return JSON.parse(out.body);
};
const req = (method: string, params?: unknown, id: unknown = 1) => ({ jsonrpc: "2.0", id, method, params });
const message = (extra: Record<string, unknown> = {}) => ({
  messageId: crypto.randomUUID(),
  role: "ROLE_USER",
  parts: [{ text: "hi" }],
  ...extra,
});

function expectError(res: any, code: number, id: unknown, fragment?: string) {
  expect(res.jsonrpc).toBe("2.0");
  expect(res.id).toEqual(id);
  expect(res.result).toBeUndefined();
  expect(res.error.code).toBe(code);
  if (fragment) expect(res.error.message).toContain(fragment);
  expect(res.error.data).toEqual([
    expect.objectContaining({
      "@type": "type.googleapis.com/google.rpc.ErrorInfo",
      domain: "a2a-protocol.org",
      reason: expect.any(String),
    }),
  ]);
}

describe("JsonRpcTransport", () => {
  it("answers a notification (no id member) with nothing at all, still doing what it asks; an id of null is a request", async () => {
    const text = `notified ${crypto.randomUUID()}`;
    const sent = await transport.handle(
      JSON.stringify({ jsonrpc: "2.0", method: "SendMessage", params: { message: message({ parts: [{ text }] }) } }),
      "1.0",
      ctx,
    );
    expect(sent).toEqual({ kind: "none", method: "SendMessage" });
    const listed = await call(req("ListTasks", {}));
    const task = listed.result.tasks.find(
      (t: { history?: { parts: { text?: string }[] }[] }) => t.history?.[0]?.parts[0]?.text === text,
    );
    expect(task).toBeDefined();
    // Nothing is answered; what happened is still told to the transport's caller (for the metrics).
    const outcomes = [
      [{ jsonrpc: "2.0", method: "NoSuchMethod" }, { kind: "none" }],
      [
        { jsonrpc: "2.0", method: "GetTask", params: { id: "nope" } },
        { kind: "none", method: "GetTask", error: -32001 },
      ],
      [
        { jsonrpc: "2.0", method: "SendMessage", params: 5 },
        { kind: "none", method: "SendMessage", error: -32602 },
      ],
    ] as const;
    for (const [bad, outcome] of outcomes)
      expect(await transport.handle(JSON.stringify(bad), "1.0", ctx)).toStrictEqual(outcome);
    expectError(await call({ jsonrpc: "2.0", id: null, method: "NoSuchMethod" }), -32601, null);
  });

  it("refuses a request nested deeper than 64 levels with -32602 before parsing it, and answers the next one", async () => {
    const deep = `{"jsonrpc":"2.0","id":7,"method":"SendMessage","params":{"metadata":${"[".repeat(45_000)}${"]".repeat(45_000)}}}`;
    expectError(await call(deep), -32602, null, "nested deeper than 64 levels");
    const atLimit = JSON.stringify(
      req("SendMessage", { message: message(), metadata: { deep: JSON.parse("[".repeat(60) + "]".repeat(60)) } }),
    );
    expect((await call(atLimit)).result.task.status.state).toBe("TASK_STATE_COMPLETED");
  });

  it("answers SendMessage with {task} and echoes the request id (string or number)", async () => {
    const a = await call(req("SendMessage", { message: message() }, "abc"));
    expect(a.id).toBe("abc");
    expect(a.result.task.status.state).toBe("TASK_STATE_COMPLETED");
    const b = await call(req("GetTask", { id: a.result.task.id }, 7));
    expect(b.id).toBe(7);
    expect(b.result.id).toBe(a.result.task.id);
  });

  it("answers ListTasks and CancelTask", async () => {
    const list = await call(req("ListTasks", { pageSize: 1 }));
    expect(list.result).toMatchObject({
      pageSize: 1,
      totalSize: expect.any(Number),
      nextPageToken: expect.any(String),
    });
    expect(list.result.tasks).toHaveLength(1);
    expectError(await call(req("CancelTask", { id: list.result.tasks[0].id })), -32002, 1, "cannot be canceled");
  });

  it("treats ListTasks status TASK_STATE_UNSPECIFIED (the proto default) as no filter", async () => {
    const all = await call(req("ListTasks", {}));
    const unspecified = await call(req("ListTasks", { status: "TASK_STATE_UNSPECIFIED" }));
    expect(unspecified.result.totalSize).toBe(all.result.totalSize);
  });

  it("accepts A2A-Version 1.0 (and 1), refuses a missing one as 0.3 and others with -32009", async () => {
    expect((await call(req("ListTasks", {}), "1")).result).toBeDefined();
    expectError(await call(req("ListTasks", {}), null), -32009, 1, "'0.3'");
    expectError(await call(req("ListTasks", {}), ""), -32009, 1, "'0.3'");
    expectError(await call(req("ListTasks", {}), "2.0"), -32009, 1, "'2.0'");
  });

  it.each([
    ["{not json", -32700, null],
    ["[]", -32600, null],
    ["42", -32600, null],
    ['"text"', -32600, null],
    [JSON.stringify({ id: 1, method: "GetTask" }), -32600, 1],
    [JSON.stringify({ jsonrpc: "1.0", id: 1, method: "GetTask" }), -32600, 1],
    [JSON.stringify({ jsonrpc: "2.0", id: {}, method: "GetTask" }), -32600, null],
    [JSON.stringify({ jsonrpc: "2.0", id: 1, method: 5 }), -32600, 1],
    [JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tasks/frobnicate" }), -32601, 1],
    [JSON.stringify({ jsonrpc: "2.0", id: 1, method: "toString" }), -32601, 1],
    [JSON.stringify({ jsonrpc: "2.0", id: 1, method: "__proto__" }), -32601, 1],
  ])("%s → %i", async (body, code, id) => {
    expectError(await call(body), code as number, id);
  });

  it.each([
    ["SendMessage", undefined, "params must be an object"],
    ["SendMessage", {}, "params.message is required"],
    ["SendMessage", { message: message({ parts: [] }) }, "params.message.parts must be a non-empty array"],
    [
      "SendMessage",
      { message: message({ parts: [{ text: "a", data: {} }] }) },
      "params.message.parts[0] must have exactly one of",
    ],
    ["SendMessage", { message: message({ parts: [{}] }) }, "params.message.parts[0] must have exactly one of"],
    ["SendMessage", { message: message({ parts: [{ text: 5 }] }) }, "params.message.parts[0].text must be a string"],
    ["SendMessage", { message: message({ role: "user" }) }, "params.message.role must be ROLE_USER or ROLE_AGENT"],
    ["SendMessage", { message: message({ messageId: 5 }) }, "params.message.messageId must be a non-empty string"],
    ["SendMessage", { message: message({ contextId: 5 }) }, "params.message.contextId must be a string"],
    ["SendMessage", { message: message(), configuration: { historyLength: -1 } }, "params.configuration.historyLength"],
    [
      "SendMessage",
      { message: message(), configuration: { returnImmediately: "yes" } },
      "params.configuration.returnImmediately",
    ],
    ["SendMessage", { message: message(), metadata: [] }, "params.metadata must be an object"],
    ["GetTask", {}, "params.id must be a non-empty task id"],
    ["GetTask", { id: "x", historyLength: 1.5 }, "params.historyLength"],
    ["CancelTask", { id: 3 }, "params.id must be a non-empty task id"],
    ["ListTasks", { pageSize: 0 }, "params.pageSize must be a whole number from 1 to 100"],
    ["ListTasks", { pageSize: 101 }, "params.pageSize must be a whole number from 1 to 100"],
    ["ListTasks", { status: "done" }, "params.status must be one of"],
    ["ListTasks", { statusTimestampAfter: "yesterday" }, "params.statusTimestampAfter"],
    ["ListTasks", { includeArtifacts: 1 }, "params.includeArtifacts must be true or false"],
    ["ListTasks", [], "params must be an object"],
  ])("%s %j → -32602 naming the field", async (method, params, fragment) => {
    expectError(await call(req(method as string, params)), -32602, 1, fragment as string);
  });
});
