import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EchoExecutor } from "../../src/executors/echo-executor";
import { A2AError } from "../../src/protocol/errors";
import { httpStatusOf, statusBody } from "../../src/rpc/http-json-errors";
import { matchRoute, queryFields } from "../../src/rpc/http-json-routes";
import { HttpJsonTransport, type HttpJsonRequest } from "../../src/rpc/http-json-transport";
import type { MethodTable } from "../../src/rpc/jsonrpc-transport";
import { v1Methods } from "../../src/rpc/v1-methods";
import { taskFixture, type TaskFixture } from "../helpers/task-fixture";

let fixture: TaskFixture;
let transport: HttpJsonTransport;
const ctx = { caller: { name: "alpha", fingerprint: "AA" } };

beforeAll(() => {
  fixture = taskFixture({
    executor: new EchoExecutor(),
    runnerOptions: { maxConcurrent: 2, maxQueued: 10, historyMessages: 5 },
    prefix: "a2a-rest-",
  });
  transport = new HttpJsonTransport(v1Methods(fixture.handler));
});
afterAll(() => {
  fixture.close();
});

/** One request through matchRoute and the transport, as the router does it. */
async function call(
  method: string,
  target: string,
  body: unknown = "",
  extra: Partial<HttpJsonRequest> = {},
  t = transport,
) {
  const q = target.indexOf("?");
  const path = q === -1 ? target : target.slice(0, q);
  const match = matchRoute(path);
  if (match === undefined) throw new Error(`${path} is not an HTTP+JSON route`);
  return t.handle(
    match,
    {
      method,
      path,
      query: q === -1 ? "" : target.slice(q + 1),
      body: typeof body === "string" ? body : JSON.stringify(body),
      contentType: "application/json",
      version: "1.0",
      ...extra,
    },
    ctx,
  );
}
async function json(method: string, target: string, body?: unknown, extra?: Partial<HttpJsonRequest>) {
  const out = await call(method, target, body, extra);
  if (out.kind !== "json") throw new Error("expected a JSON answer");
  return { status: out.status, body: JSON.parse(out.body), allow: out.allow };
}
const message = (extra: Record<string, unknown> = {}) => ({
  messageId: crypto.randomUUID(),
  role: "ROLE_USER",
  parts: [{ text: "hi" }],
  ...extra,
});

function expectStatus(r: { status: number; body: any }, status: number, reason: string, fragment?: string) {
  expect(r.status).toBe(status);
  expect(r.body.error.code).toBe(status);
  expect(typeof r.body.error.status).toBe("string");
  if (fragment) expect(r.body.error.message).toContain(fragment);
  expect(r.body.error.details).toEqual([
    expect.objectContaining({
      "@type": "type.googleapis.com/google.rpc.ErrorInfo",
      domain: "a2a-protocol.org",
      reason,
    }),
  ]);
}

describe("matchRoute", () => {
  it("maps every route of spec §11.3 to its operation, with the path's parameters decoded", () => {
    expect(matchRoute("/message:send")).toEqual({ operations: { POST: "SendMessage" }, params: {} });
    expect(matchRoute("/message:stream")).toEqual({ operations: { POST: "SendStreamingMessage" }, params: {} });
    expect(matchRoute("/tasks")).toEqual({ operations: { GET: "ListTasks" }, params: {} });
    expect(matchRoute("/tasks/a%2Fb%3Ac")).toEqual({ operations: { GET: "GetTask" }, params: { id: "a/b:c" } });
    expect(matchRoute("/tasks/t1:cancel")).toEqual({ operations: { POST: "CancelTask" }, params: { id: "t1" } });
    expect(matchRoute("/tasks/t1:subscribe")).toEqual({
      operations: { GET: "SubscribeToTask", POST: "SubscribeToTask" },
      params: { id: "t1" },
    });
    expect(matchRoute("/tasks/t1/pushNotificationConfigs")).toEqual({
      operations: { POST: "CreateTaskPushNotificationConfig", GET: "ListTaskPushNotificationConfigs" },
      params: { taskId: "t1" },
    });
    expect(matchRoute("/tasks/t1/pushNotificationConfigs/c%201")).toEqual({
      operations: { GET: "GetTaskPushNotificationConfig", DELETE: "DeleteTaskPushNotificationConfig" },
      params: { taskId: "t1", id: "c 1" },
    });
    expect(matchRoute("/extendedAgentCard")).toEqual({ operations: { GET: "GetExtendedAgentCard" }, params: {} });
  });

  it("takes a /{tenant}/ prefix on every route, and an empty one (a base URL ending in /) as none", () => {
    expect(matchRoute("/acme/message:send")).toEqual({
      operations: { POST: "SendMessage" },
      params: {},
      tenant: "acme",
    });
    expect(matchRoute("/a%20b/tasks/t1:cancel")).toEqual({
      operations: { POST: "CancelTask" },
      params: { id: "t1" },
      tenant: "a b",
    });
    expect(matchRoute("/acme/extendedAgentCard")).toMatchObject({ tenant: "acme" });
    expect(matchRoute("//message:send")).toEqual({ operations: { POST: "SendMessage" }, params: {} });
  });

  it("leaves paths outside the binding to others, and calls paths inside it that name nothing not-found", () => {
    for (const other of [
      "/",
      "/a2a/rpc",
      "/health",
      "/health/ready",
      "/.well-known/agent-card.json",
      "/openapi",
      "/openapi/json",
      "/a/b/tasks",
    ])
      expect(matchRoute(other), other).toBeUndefined();
    for (const nothing of [
      "/tasks/t1:pause",
      "/tasks/t1/other",
      "/tasks/t1/pushNotificationConfigs/c1/x",
      "/message:send/x",
      "/acme/tasks/t1:x",
      "/message:sendx/x",
    ])
      expect(matchRoute(nothing), nothing).toBe(nothing === "/message:sendx/x" ? undefined : "not-found");
    expect(matchRoute("/tasks/%E0%A4%A")).toBe("bad-path");
  });
});

describe("queryFields", () => {
  it("reads camelCase (and proto) names, numbers and booleans as ProtoJSON writes them, and skips service parameters", () => {
    expect(
      queryFields(
        "contextId=c1&status=TASK_STATE_WORKING&pageSize=5&page_token=x&historyLength=0&includeArtifacts=true&A2A-Version=1.0&tenant=t",
      ),
    ).toEqual({
      fields: {
        contextId: "c1",
        status: "TASK_STATE_WORKING",
        pageSize: 5,
        pageToken: "x",
        historyLength: 0,
        includeArtifacts: true,
      },
    });
    expect(queryFields("statusTimestampAfter=2026-01-01T00%3A00%3A00Z&pageSize=2&pageSize=3")).toEqual({
      fields: { statusTimestampAfter: "2026-01-01T00:00:00Z", pageSize: 2 },
    });
  });

  it("names the first value that is not of its field's type", () => {
    expect(queryFields("pageSize=ten")).toEqual({ bad: "pageSize", value: "ten", expected: "a whole number" });
    expect(queryFields("historyLength=1.5")).toEqual({
      bad: "historyLength",
      value: "1.5",
      expected: "a whole number",
    });
    expect(queryFields("include_artifacts=yes")).toEqual({
      bad: "include_artifacts",
      value: "yes",
      expected: "true or false",
    });
  });
});

describe("HTTP+JSON error mapping", () => {
  it("gives each A2A error the spec's HTTP status (v1.0.1 §5.4) and a google.rpc.Status body with its ErrorInfo", () => {
    const table: [A2AError, number, string][] = [
      [A2AError.taskNotFound("t"), 404, "NOT_FOUND"],
      [A2AError.taskNotCancelable("t", "TASK_STATE_COMPLETED"), 400, "FAILED_PRECONDITION"],
      [A2AError.pushNotSupported(), 400, "FAILED_PRECONDITION"],
      [A2AError.unsupportedOperation("x"), 400, "FAILED_PRECONDITION"],
      [A2AError.contentTypeNotSupported("x"), 400, "INVALID_ARGUMENT"],
      [A2AError.invalidAgentResponse("x"), 500, "INTERNAL"],
      [A2AError.extendedCardNotConfigured(), 400, "FAILED_PRECONDITION"],
      [A2AError.versionNotSupported("9"), 400, "FAILED_PRECONDITION"],
      [A2AError.invalidParams("x"), 400, "INVALID_ARGUMENT"],
      [A2AError.parse(), 400, "INVALID_ARGUMENT"],
      [A2AError.busy("full"), 429, "RESOURCE_EXHAUSTED"],
      [A2AError.internal(), 500, "INTERNAL"],
    ];
    for (const [err, status, name] of table) {
      expect(httpStatusOf(err), err.reason).toBe(status);
      expect(JSON.parse(statusBody(err))).toEqual({
        error: { code: status, status: name, message: err.message, details: [err.errorInfo()] },
      });
    }
    // HTTP's own answers keep the ErrorInfo but say their own status.
    expect(JSON.parse(statusBody(A2AError.contentTypeNotSupported("x"), 415)).error).toMatchObject({
      code: 415,
      status: "INVALID_ARGUMENT",
    });
    expect(JSON.parse(statusBody(A2AError.invalidRequest("big"), 413)).error).toMatchObject({
      code: 413,
      status: "INVALID_ARGUMENT",
    });
  });
});

describe("HttpJsonTransport", () => {
  it("sends a message, then gets, lists and cancels through the same handler as JSON-RPC", async () => {
    const sent = await json("POST", "/message:send", { message: message() });
    expect(sent.status).toBe(200);
    const task = sent.body.task;
    expect(task.status.state).toBe("TASK_STATE_COMPLETED");
    const got = await json("GET", `/tasks/${task.id}?historyLength=0`);
    expect(got.body.id).toBe(task.id);
    expect(got.body.history).toBeUndefined();
    const listed = await json("GET", `/tasks?pageSize=1&contextId=${task.contextId}`);
    expect(listed.body).toMatchObject({ pageSize: 1, totalSize: 1, nextPageToken: "", tasks: [{ id: task.id }] });
    // Through a tenant prefix: the same single agent, the same task.
    expect((await json("GET", `/someone/tasks/${task.id}`)).body.id).toBe(task.id);
    expectStatus(await json("POST", `/tasks/${task.id}:cancel`), 400, "TASK_NOT_CANCELABLE", "cannot be canceled");
  });

  it("refuses what is not a request, with the status the spec or HTTP gives it", async () => {
    expectStatus(await json("GET", "/tasks/nope"), 404, "TASK_NOT_FOUND", "Task not found: nope");
    expectStatus(await json("POST", "/tasks/nope:cancel"), 404, "TASK_NOT_FOUND");
    expectStatus(await json("GET", "/tasks/t1:pause"), 404, "METHOD_NOT_FOUND", "/message:send");
    const wrong = await json("DELETE", "/tasks");
    expectStatus(wrong, 405, "METHOD_NOT_FOUND", "DELETE is not allowed on /tasks; use GET");
    expect(wrong.allow).toBe("GET");
    expect((await json("PUT", "/tasks/t1:subscribe")).allow).toBe("GET, POST");
    expectStatus(
      await json("POST", "/message:send", { message: message() }, { version: "0.9" }),
      400,
      "VERSION_NOT_SUPPORTED",
      "'0.9' is not supported",
    );
    expectStatus(
      await json("GET", "/tasks", "", { version: null }),
      400,
      "VERSION_NOT_SUPPORTED",
      "no A2A-Version header",
    );
    expectStatus(
      await json("POST", "/message:send", "hello", { contentType: "text/plain" }),
      415,
      "CONTENT_TYPE_NOT_SUPPORTED",
      "text/plain is not JSON",
    );
    expectStatus(await json("POST", "/message:send", "{nope"), 400, "PARSE_ERROR");
    expectStatus(await json("POST", "/message:send", "[1]"), 400, "INVALID_REQUEST", "must be a JSON object");
    expectStatus(
      await json("POST", "/message:send", `{"metadata":${"[".repeat(100)}${"]".repeat(100)}}`),
      400,
      "INVALID_PARAMS",
      "nested deeper than 64",
    );
    // The checks are JSON-RPC's, worded for a body or a query.
    expectStatus(await json("POST", "/message:send", {}), 400, "INVALID_PARAMS", "message is required");
    expect((await json("POST", "/message:send", {})).body.error.message).not.toContain("params.");
    expectStatus(
      await json("POST", "/message:send", { message: message({ parts: [] }) }),
      400,
      "INVALID_PARAMS",
      "message.parts must be a non-empty array",
    );
    expectStatus(
      await json("GET", "/tasks?pageSize=500"),
      400,
      "INVALID_PARAMS",
      "pageSize must be a whole number from 1 to 100",
    );
    expectStatus(
      await json("GET", "/tasks?pageSize=ten"),
      400,
      "INVALID_PARAMS",
      "query parameter pageSize must be a whole number (got 'ten')",
    );
    expectStatus(await json("GET", "/tasks?status=DONE"), 400, "INVALID_PARAMS", "status must be one of");
    expectStatus(
      await json("POST", "/tasks/t1:cancel", { id: "t2" }),
      400,
      "INVALID_PARAMS",
      "names id 't2' but its path names 't1'",
    );
    expectStatus(await json("GET", "/tasks/%E0%A4%A"), 400, "INVALID_REQUEST", "percent-encoding");
  });

  it("stores push configs under the task of the path, and lists, gets and deletes them", async () => {
    const task = (await json("POST", "/message:send", { message: message() })).body.task;
    const created = await json("POST", `/tasks/${task.id}/pushNotificationConfigs`, {
      url: "https://example.com/hook",
      token: "tok",
    });
    // No push store behind this handler: the spec's error, with its status.
    expectStatus(created, 400, "PUSH_NOTIFICATION_NOT_SUPPORTED");
  });

  it("streams StreamResponse objects as SSE data with event ids, and an error after the start as an 'error' event", async () => {
    const out = await call("POST", "/message:stream", { message: message() });
    if (out.kind !== "stream") throw new Error("expected a stream");
    const events = [];
    for await (const e of out.events) events.push(e);
    expect(JSON.parse(events[0].data).task.status.state).toBe("TASK_STATE_SUBMITTED");
    expect(events[0].id).toBeUndefined();
    expect(events.slice(1).map((e) => e.id)).toEqual(events.slice(1).map((_, i) => String(i + 1)));
    expect(JSON.parse(events.at(-1)!.data).statusUpdate.status.state).toBe("TASK_STATE_COMPLETED");
    expect(events.every((e) => e.event === undefined)).toBe(true);

    // A stream that fails after it started ends with the error, as a google.rpc.Status.
    const failing: MethodTable = {
      unary: {},
      stream: {
        SubscribeToTask: async () => ({
          async *[Symbol.asyncIterator]() {
            yield { result: { task: { id: "t" } } };
            throw A2AError.busy("gone");
          },
        }),
      },
      error: (e) => e.toJsonRpc(),
    };
    const broken = await call("GET", "/tasks/t:subscribe", "", {}, new HttpJsonTransport(failing));
    if (broken.kind !== "stream") throw new Error("expected a stream");
    const got = [];
    for await (const e of broken.events) got.push(e);
    expect(got).toHaveLength(2);
    expect(got[1].event).toBe("error");
    expect(JSON.parse(got[1].data).error).toMatchObject({ code: 429, status: "RESOURCE_EXHAUSTED", message: "gone" });
  });

  it("refuses to subscribe to a finished task before any event (400, UNSUPPORTED_OPERATION), and replays it after Last-Event-ID", async () => {
    const task = (await json("POST", "/message:send", { message: message() })).body.task;
    expectStatus(
      await json("POST", `/tasks/${task.id}:subscribe`),
      400,
      "UNSUPPORTED_OPERATION",
      "read it with GetTask",
    );
    const replay = await call("GET", `/tasks/${task.id}:subscribe`, "", { lastEventId: "0" });
    if (replay.kind !== "stream") throw new Error("expected a stream");
    const events = [];
    for await (const e of replay.events) events.push(JSON.parse(e.data));
    expect(events[0].task.id).toBe(task.id);
    expect(events.at(-1).statusUpdate.status.state).toBe("TASK_STATE_COMPLETED");
    expectStatus(
      await json("GET", `/tasks/${task.id}:subscribe`, "", { lastEventId: "x" }),
      400,
      "INVALID_PARAMS",
      "Last-Event-ID",
    );
  });
});
