/**
 * One scenario list, run through both A2A bindings (JSON-RPC and HTTP+JSON) against the compiled node over
 * mutual TLS: each scenario is written once against a driver (test/helpers/bindings.ts) and must come out
 * the same through either binding, apart from how the binding spells it on the wire (a JSON-RPC code in an
 * HTTP 200 body, or an HTTP status with a google.rpc.Status). Identity, caller scoping, idempotency,
 * durability across kill -9 and stream replay with Last-Event-ID are among the scenarios. The only fake is
 * the model (a chat-completions server that holds the requests whose text contains "[hold]").
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { httpJsonDriver, jsonRpcDriver, type BindingDriver, type BindingName, type Outcome } from "../helpers/bindings";
import { serveBinary, type ServedBinary } from "../helpers/binary";
import { makeFleet, type Fleet, type TlsIdentity } from "../helpers/fleet";
import { startGatedModel, type GatedModel } from "../fakes/gated-model";
import { get, userMessage } from "../helpers/rpc";
import { Receiver } from "../fakes/webhook-receiver";

let fleet: Fleet;
let alpha: TlsIdentity;
let gamma: TlsIdentity;
let m: GatedModel;
const nodes: Partial<Record<BindingName, ServedBinary>> = {};
const started: ServedBinary[] = [];

/** Each binding's scenarios run on a node of their own (the durability scenario restarts it). */
const BINDINGS: { name: BindingName; home: string; args: string[] }[] = [
  { name: "JSONRPC", home: "beta", args: [] },
  { name: "HTTP+JSON", home: "delta", args: ["--preferred-binding", "HTTP+JSON"] },
];
const MAX_BODY = 65_536;

/** How each binding spells a refusal: JSON-RPC's code (in an HTTP 200), or the HTTP status. */
const CODES: Record<string, Record<BindingName, number>> = {
  TASK_NOT_FOUND: { JSONRPC: -32001, "HTTP+JSON": 404 },
  TASK_NOT_CANCELABLE: { JSONRPC: -32002, "HTTP+JSON": 400 },
  UNSUPPORTED_OPERATION: { JSONRPC: -32004, "HTTP+JSON": 400 },
  INVALID_PARAMS: { JSONRPC: -32602, "HTTP+JSON": 400 },
  VERSION_NOT_SUPPORTED: { JSONRPC: -32009, "HTTP+JSON": 400 },
  METHOD_NOT_FOUND: { JSONRPC: -32601, "HTTP+JSON": 404 },
  RESOURCE_EXHAUSTED: { JSONRPC: -32603, "HTTP+JSON": 429 },
};

function refused(o: Outcome | undefined, reason: string, binding: BindingName, fragment?: string): void {
  expect(o, "a refusal").toBeDefined();
  expect(o!.ok, o!.reply.text).toBe(false);
  expect(o!.reason, o!.reply.text).toBe(reason);
  expect(o!.code).toBe(CODES[reason][binding]);
  expect(o!.status).toBe(binding === "JSONRPC" ? 200 : CODES[reason][binding]);
  if (fragment) expect(o!.message).toContain(fragment);
}

function ok(o: Outcome): any {
  expect(o.ok, o.reply.text).toBe(true);
  expect(o.status).toBe(200);
  return o.result;
}

async function serve(home: string, args: string[]): Promise<ServedBinary> {
  const node = await serveBinary(home, [
    ...["--executor", "openai", "--model-url", m.url, "--model", "test-model"],
    ...[
      "--max-concurrent",
      "2",
      "--max-queued",
      "0",
      "--caller-share",
      "1",
      "--max-body",
      String(MAX_BODY),
      "--push-allow",
      "127.0.0.1",
    ],
    ...args,
  ]);
  started.push(node);
  return node;
}

beforeAll(async () => {
  fleet = await makeFleet(["beta", "delta", "alpha", "gamma"]);
  alpha = fleet.identity("alpha");
  gamma = fleet.identity("gamma");
  m = startGatedModel();
  for (const b of BINDINGS) nodes[b.name] = await serve(fleet.homes[b.home], b.args);
});

afterAll(async () => {
  await Promise.all(started.map((n) => n.stop("SIGKILL").catch(() => undefined)));
  m?.stop();
  fleet?.cleanup();
});

const driverFor = (name: BindingName, url: string) => (name === "JSONRPC" ? jsonRpcDriver(url) : httpJsonDriver(url));
const artifactText = (task: any): string =>
  (task.artifacts ?? []).flatMap((a: any) => a.parts.map((p: { text?: string }) => p.text ?? "")).join("");
const send = (b: BindingDriver, who: TlsIdentity, text: string, configuration?: Record<string, unknown>) =>
  b.call(who, "SendMessage", { message: userMessage(text), ...(configuration ? { configuration } : {}) });

/** Follows a task to its end (replaying from its first event), and returns its events. */
async function followToEnd(b: BindingDriver, id: string) {
  const s = await b.stream(alpha, "SubscribeToTask", { id }, { "last-event-id": "0" });
  expect(s.ok, JSON.stringify(s.refused?.reply.text)).toBe(true);
  const items = await s.rest();
  expect(items.at(-1)?.item?.statusUpdate?.status.state).toMatch(/COMPLETED|CANCELED|FAILED/);
  return items;
}

describe.each(BINDINGS)("$name binding", ({ name, home, args }) => {
  let b: BindingDriver;
  beforeAll(() => {
    b = driverFor(name, nodes[name]!.url);
  });

  it("answers a blocking SendMessage with the completed task; GetTask and ListTasks show it to its caller only", async () => {
    const text = `hello ${crypto.randomUUID()}`;
    const task = ok(await send(b, alpha, text)).task;
    expect(task.status.state).toBe("TASK_STATE_COMPLETED");
    expect(artifactText(task)).toBe(`echo: ${text}`);
    const got = ok(await b.call(alpha, "GetTask", { id: task.id, historyLength: 0 }));
    expect(got).toMatchObject({
      id: task.id,
      contextId: task.contextId,
      status: task.status,
      artifacts: task.artifacts,
    });
    expect(got.history).toBeUndefined();
    expect(ok(await b.call(alpha, "GetTask", { id: task.id })).history).toEqual(task.history);
    expect(ok(await b.call(alpha, "ListTasks", { contextId: task.contextId, includeArtifacts: true }))).toMatchObject({
      totalSize: 1,
      nextPageToken: "",
      tasks: [{ id: task.id, artifacts: task.artifacts }],
    });
    // Another fleet member: the task does not exist for it.
    refused(await b.call(gamma, "GetTask", { id: task.id }), "TASK_NOT_FOUND", name, task.id);
    expect(ok(await b.call(gamma, "ListTasks", { contextId: task.contextId }))).toMatchObject({
      totalSize: 0,
      tasks: [],
    });
  });

  it("returns the same task for a message repeated by the same peer, and runs another peer's copy as its own", async () => {
    const message = userMessage(`once ${crypto.randomUUID()}`);
    const first = ok(await b.call(alpha, "SendMessage", { message })).task;
    const again = ok(await b.call(alpha, "SendMessage", { message })).task;
    expect(again.id).toBe(first.id);
    const other = ok(await b.call(gamma, "SendMessage", { message })).task;
    expect(other.id).not.toBe(first.id);
    expect(m.requests.filter((r) => r.text === message.parts[0].text)).toHaveLength(2);
  });

  it("cancels a running task for its caller only; a finished task is not cancelable", async () => {
    const text = `[hold] cancel me ${crypto.randomUUID()}`;
    const task = ok(await send(b, alpha, text, { returnImmediately: true })).task;
    const request = await m.arrival(text);
    refused(await b.call(gamma, "CancelTask", { id: task.id }), "TASK_NOT_FOUND", name);
    const canceled = ok(await b.call(alpha, "CancelTask", { id: task.id }));
    expect(canceled).toMatchObject({ id: task.id, status: { state: "TASK_STATE_CANCELED" } });
    await request.aborted; // the model call was stopped, not left to run
    refused(await b.call(alpha, "CancelTask", { id: task.id }), "TASK_NOT_CANCELABLE", name, "cannot be canceled");
    m.release(text);
  });

  it("streams the task, then numbered events to its end; Last-Event-ID replays exactly what came after it", async () => {
    const text = `stream ${crypto.randomUUID()}`;
    const stream = await b.stream(alpha, "SendStreamingMessage", { message: userMessage(text) });
    expect(stream.ok).toBe(true);
    const items = await stream.rest();
    expect(items[0].id).toBeUndefined();
    expect(items[0].item.task.status.state).toBe("TASK_STATE_SUBMITTED");
    const id = items[0].item.task.id;
    const numbered = items.slice(1);
    expect(numbered.map((e) => e.id)).toEqual(numbered.map((_, i) => String(i + 1)));
    expect(numbered.some((e) => e.item.artifactUpdate)).toBe(true);
    expect(numbered.at(-1)!.item.statusUpdate.status.state).toBe("TASK_STATE_COMPLETED");

    const replay = await followToEnd(b, id);
    expect(replay[0].item.task).toMatchObject({ id, status: { state: "TASK_STATE_COMPLETED" } });
    expect(replay.slice(1)).toEqual(numbered);
    const after2 = await (await b.stream(alpha, "SubscribeToTask", { id }, { "last-event-id": "2" })).rest();
    expect(after2.slice(1)).toEqual(numbered.slice(2));

    // Without Last-Event-ID a finished task is not subscribable; another caller's is not found at all.
    const fresh = await b.stream(alpha, "SubscribeToTask", { id });
    expect(fresh.ok).toBe(false);
    refused(fresh.refused, "UNSUPPORTED_OPERATION", name, "read it with GetTask");
    refused(
      (await b.stream(gamma, "SubscribeToTask", { id }, { "last-event-id": "0" })).refused,
      "TASK_NOT_FOUND",
      name,
    );
    refused(
      (await b.stream(alpha, "SubscribeToTask", { id }, { "last-event-id": "later" })).refused,
      "INVALID_PARAMS",
      name,
      "Last-Event-ID",
    );
  });

  it("lets two subscribers follow a running task to its end with the same events (HTTP+JSON: by POST and by GET)", async () => {
    const text = `[hold] followed ${crypto.randomUUID()}`;
    const task = ok(await send(b, alpha, text, { returnImmediately: true })).task;
    await m.arrival(text);
    const one = await b.stream(alpha, "SubscribeToTask", { id: task.id });
    const two = await b.stream(alpha, "SubscribeToTask", { id: task.id }, {}, true);
    expect([one.ok, two.ok]).toEqual([true, true]);
    const [first1, first2] = [await one.next(), await two.next()];
    expect(first1!.item.task.status.state).toBe("TASK_STATE_WORKING");
    expect(first2!.item.task.id).toBe(task.id);
    m.release(text);
    const [rest1, rest2] = await Promise.all([one.rest(), two.rest()]);
    expect(rest1).toEqual(rest2);
    expect(rest1.at(-1)!.item.statusUpdate.status.state).toBe("TASK_STATE_COMPLETED");
    expect(rest1.filter((e) => e.item.artifactUpdate).length).toBeGreaterThan(0);
  });

  it("keeps push notification configs per task and per caller: create, get, list, delete", async () => {
    const task = ok(await send(b, alpha, `with a webhook ${crypto.randomUUID()}`)).task;
    const config = ok(
      await b.call(alpha, "CreateTaskPushNotificationConfig", {
        taskId: task.id,
        url: "http://127.0.0.1:9/hook",
        token: "tok-1",
      }),
    );
    expect(config).toMatchObject({
      id: expect.any(String),
      taskId: task.id,
      url: "http://127.0.0.1:9/hook",
      token: "tok-1",
    });
    expect(ok(await b.call(alpha, "GetTaskPushNotificationConfig", { taskId: task.id, id: config.id }))).toEqual(
      config,
    );
    expect(ok(await b.call(alpha, "ListTaskPushNotificationConfigs", { taskId: task.id })).configs).toEqual([config]);
    refused(await b.call(gamma, "ListTaskPushNotificationConfigs", { taskId: task.id }), "TASK_NOT_FOUND", name);
    refused(
      await b.call(gamma, "GetTaskPushNotificationConfig", { taskId: task.id, id: config.id }),
      "TASK_NOT_FOUND",
      name,
    );
    refused(
      await b.call(gamma, "DeleteTaskPushNotificationConfig", { taskId: task.id, id: config.id }),
      "TASK_NOT_FOUND",
      name,
    );
    ok(await b.call(alpha, "DeleteTaskPushNotificationConfig", { taskId: task.id, id: config.id }));
    refused(
      await b.call(alpha, "GetTaskPushNotificationConfig", { taskId: task.id, id: config.id }),
      "TASK_NOT_FOUND",
      name,
    );
    refused(
      await b.call(alpha, "CreateTaskPushNotificationConfig", { taskId: task.id, url: "ftp://x/" }),
      "INVALID_PARAMS",
      name,
      "url must be an http(s) URL",
    );
    // A page token the node never issued (one of ListTasks' kind) is the store's own refusal, mapped alike.
    const foreign = Buffer.from("2026-01-01T00:00:00.000Z|01ABC").toString("base64url");
    refused(
      await b.call(alpha, "ListTaskPushNotificationConfigs", { taskId: task.id, pageToken: foreign }),
      "INVALID_PARAMS",
      name,
      "pageToken is not one this node issued",
    );
  });

  it("delivers with the config's AuthenticationInfo in Authorization, and never reads the credentials back", async () => {
    const receiver = new Receiver();
    try {
      const secret = `cred-${crypto.randomUUID()}`;
      const push = {
        url: receiver.url("/auth-hook"),
        token: "tok-2",
        authentication: { scheme: "Bearer", credentials: secret },
      };
      const task = ok(
        await send(b, alpha, `pushed with auth ${crypto.randomUUID()}`, { taskPushNotificationConfig: push }),
      ).task;
      const [first] = await receiver.delivered(1);
      expect(first.headers.authorization).toBe(`Bearer ${secret}`);
      expect(first.headers["x-a2a-signature"]).toMatch(/^sha256=[0-9a-f]{64}$/);
      const listed = ok(await b.call(alpha, "ListTaskPushNotificationConfigs", { taskId: task.id }));
      expect(listed.configs).toEqual([
        expect.objectContaining({ url: push.url, token: "tok-2", authentication: { scheme: "Bearer" } }),
      ]);
      const got = ok(
        await b.call(alpha, "GetTaskPushNotificationConfig", { taskId: task.id, id: listed.configs[0].id }),
      );
      expect(got).toEqual(listed.configs[0]);
      const made = ok(
        await b.call(alpha, "CreateTaskPushNotificationConfig", {
          taskId: task.id,
          url: push.url,
          authentication: { scheme: "Basic", credentials: secret },
        }),
      );
      const again = ok(await b.call(alpha, "GetTaskPushNotificationConfig", { taskId: task.id, id: made.id }));
      expect(again.authentication).toEqual({ scheme: "Basic" });
      expect(
        JSON.stringify([
          listed,
          got,
          again,
          ok(await b.call(alpha, "ListTaskPushNotificationConfigs", { taskId: task.id })),
        ]),
      ).not.toContain(secret);
    } finally {
      receiver.stop();
    }
  });

  it("refuses what is not a valid request with the same reason: unknown task, bad params, unsupported version, unknown operation", async () => {
    refused(await b.call(alpha, "GetTask", { id: "no-such-task" }), "TASK_NOT_FOUND", name, "no-such-task");
    refused(
      await b.call(alpha, "SendMessage", { message: { messageId: "m", role: "ROLE_USER", parts: [] } }),
      "INVALID_PARAMS",
      name,
      "message.parts must be a non-empty array",
    );
    refused(
      await b.call(alpha, "SendMessage", { message: { messageId: "m", role: "USER", parts: [{ text: "x" }] } }),
      "INVALID_PARAMS",
      name,
      "role must be ROLE_USER or ROLE_AGENT",
    );
    refused(
      await b.call(alpha, "ListTasks", { pageSize: 1000 }),
      "INVALID_PARAMS",
      name,
      "pageSize must be a whole number from 1 to 100",
    );
    refused(
      await b.call(alpha, "GetTask", { id: "x" }, { "a2a-version": "9.9" }),
      "VERSION_NOT_SUPPORTED",
      name,
      "'9.9' is not supported",
    );
    refused(await b.call(alpha, "Pause", { id: "x" }), "METHOD_NOT_FOUND", name);
    refused(await b.call(alpha, "GetExtendedAgentCard", {}), "UNSUPPORTED_OPERATION", name, "no extended agent card");
  });

  it("refuses work past its capacity as RESOURCE_EXHAUSTED, and takes work again once there is room", async () => {
    const tag = crypto.randomUUID();
    const held = [];
    for (let i = 0; i < 2; i++)
      held.push(ok(await send(b, alpha, `[hold] busy ${i} ${tag}`, { returnImmediately: true })).task);
    await Promise.all(held.map((_, i) => m.arrival(`busy ${i} ${tag}`)));
    refused(await send(b, alpha, `one too many ${tag}`), "RESOURCE_EXHAUSTED", name, "retry later");
    m.release(tag);
    for (const t of held) await followToEnd(b, t.id);
    expect(ok(await send(b, alpha, `room again ${tag}`)).task.status.state).toBe("TASK_STATE_COMPLETED");
  });

  it("answers a body over max_body with HTTP 413 in the binding's error shape, naming the limit", async () => {
    const params = { message: userMessage("x".repeat(MAX_BODY)) };
    const body =
      name === "JSONRPC"
        ? JSON.stringify({ jsonrpc: "2.0", id: 1, method: "SendMessage", params })
        : JSON.stringify(params);
    const o = await b.sendRaw(alpha, body);
    expect(o.status).toBe(413);
    expect(o.reason).toBe("INVALID_REQUEST");
    expect(o.code).toBe(name === "JSONRPC" ? -32600 : 413);
    expect(o.message).toContain(`limit of ${MAX_BODY} bytes`);
    expect(ok(await send(b, alpha, "small again")).task.status.state).toBe("TASK_STATE_COMPLETED");
  });

  it("refuses a client certificate from another CA before any request", async () => {
    const stranger = await fleet.foreign("alpha");
    await expect(b.call(stranger, "GetTask", { id: "x" })).rejects.toThrow();
  });

  it("keeps committed tasks across kill -9, and runs the task that was interrupted to its end", async () => {
    const kept = ok(await send(b, alpha, `kept ${crypto.randomUUID()}`)).task;
    const text = `[hold] crash ${crypto.randomUUID()}`;
    const running = ok(await send(b, alpha, text, { returnImmediately: true })).task;
    await m.arrival(text);
    const asked = m.requests.length;
    await nodes[name]!.stop("SIGKILL");
    nodes[name] = await serve(fleet.homes[home], args);
    b = driverFor(name, nodes[name]!.url);
    await m.received(asked + 1); // the openai executor runs an interrupted task again from its message
    m.release(text);
    const events = await followToEnd(b, running.id);
    expect(events.at(-1)!.item.statusUpdate.status.state).toBe("TASK_STATE_COMPLETED");
    expect(artifactText(ok(await b.call(alpha, "GetTask", { id: running.id })))).toBe(`echo: ${text}`);
    const again = ok(await b.call(alpha, "GetTask", { id: kept.id }));
    expect(again).toMatchObject({ id: kept.id, status: kept.status, artifacts: kept.artifacts, history: kept.history });
  });
});

describe("both bindings on one node", () => {
  it("lists both interfaces in the card, the preferred first, under one security scheme", async () => {
    for (const { name } of BINDINGS) {
      const url = nodes[name]!.url;
      const card = (await get(`${url}/.well-known/agent-card.json`, alpha)).body;
      const [jsonRpc, httpJson, grpc] = [
        { url: `${url}/`, protocolBinding: "JSONRPC", protocolVersion: "1.0" },
        { url, protocolBinding: "HTTP+JSON", protocolVersion: "1.0" },
        // gRPC on the same port (HTTP/2 by ALPN), as host:port.
        { url: new URL(url).host, protocolBinding: "GRPC", protocolVersion: "1.0" },
      ];
      expect(card.supportedInterfaces).toEqual(
        name === "JSONRPC" ? [jsonRpc, httpJson, grpc] : [httpJson, jsonRpc, grpc],
      );
      expect(Object.keys(card.securitySchemes)).toEqual(["mtls"]);
      expect(card.securityRequirements).toEqual([{ schemes: { mtls: { list: [] } } }]);
    }
  });

  it("serves one set of tasks: what one binding made, the other reads, lists, replays and deduplicates alike", async () => {
    const url = nodes.JSONRPC!.url;
    const rpc = jsonRpcDriver(url);
    const rest = httpJsonDriver(url);
    const message = userMessage(`shared ${crypto.randomUUID()}`);
    const task = ok(await rpc.call(alpha, "SendMessage", { message })).task;
    expect(ok(await rest.call(alpha, "SendMessage", { message })).task.id).toBe(task.id);
    expect(ok(await rest.call(alpha, "GetTask", { id: task.id }))).toEqual(
      ok(await rpc.call(alpha, "GetTask", { id: task.id })),
    );
    expect(ok(await rest.call(alpha, "ListTasks", { pageSize: 3 }))).toEqual(
      ok(await rpc.call(alpha, "ListTasks", { pageSize: 3 })),
    );
    expect(await followToEnd(rest, task.id)).toEqual(await followToEnd(rpc, task.id));
    refused(await rest.call(gamma, "GetTask", { id: task.id }), "TASK_NOT_FOUND", "HTTP+JSON");
  });

  it("answers HTTP+JSON's own cases: 405 with Allow, tenant paths, media types, and describes its routes in /openapi", async () => {
    const url = nodes["HTTP+JSON"]!.url;
    const rest = httpJsonDriver(url);
    const task = ok(await send(rest, alpha, `rest only ${crypto.randomUUID()}`)).task;
    const req = (path: string, init: RequestInit = {}, who = alpha) =>
      fetch(`${url}${path}`, {
        ...init,
        headers: { "a2a-version": "1.0", ...(init.headers ?? {}) },
        tls: { cert: who.cert, key: who.key, ca: who.ca },
      } as RequestInit);

    const wrong = await req("/tasks", { method: "DELETE" });
    expect(wrong.status).toBe(405);
    expect(wrong.headers.get("allow")).toBe("GET");
    expect(((await wrong.json()) as any).error).toMatchObject({ code: 405, details: [{ reason: "METHOD_NOT_FOUND" }] });

    // A tenant segment names this same single agent: the same task, scoped the same way.
    const viaTenant = await req(`/some-tenant/tasks/${task.id}`);
    expect(((await viaTenant.json()) as any).id).toBe(task.id);
    expect((await req(`/t/tasks/${task.id}`, {}, gamma)).status).toBe(404);

    const a2a = await req(`/tasks/${task.id}`, { headers: { accept: "application/a2a+json, application/json" } });
    expect(a2a.headers.get("content-type")).toBe("application/a2a+json");
    const plain = await req(`/tasks/${task.id}`, { headers: { accept: "*/*" } });
    expect(plain.headers.get("content-type")).toBe("application/json");

    const text = await req("/message:send", {
      method: "POST",
      headers: { "content-type": "text/plain" },
      body: "hello",
    });
    expect(text.status).toBe(415);
    expect(((await text.json()) as any).error.details[0].reason).toBe("CONTENT_TYPE_NOT_SUPPORTED");

    const spec = (await get(`${url}/openapi/json`, alpha)).body;
    for (const path of [
      "/",
      "/message:send",
      "/message:stream",
      "/tasks",
      "/tasks/{id}",
      "/tasks/{id}:cancel",
      "/tasks/{id}:subscribe",
      "/tasks/{taskId}/pushNotificationConfigs",
      "/tasks/{taskId}/pushNotificationConfigs/{id}",
      "/extendedAgentCard",
    ])
      expect(Object.keys(spec.paths), path).toContain(path);
  });
});
