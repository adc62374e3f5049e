/**
 * The twin of Hermes's own A2A plugin (test/fakes/hermes-a2a) says on the wire what its source says: the
 * stdlib server of plugins/platforms/a2a/adapter.py and the client of tools.py, quirks and refusals included.
 * The mixed-fleet tests (hermes-a2a-*.test.ts) rely on these facts; if the twin drifted kinder than the real
 * plugin, they would pass for the wrong reasons. Real Hermes with this plugin cannot run here (the real server
 * the tests run, A2A_REAL_HERMES, is 0.18.2, without it).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHmac } from "node:crypto";
import { createServer, type IncomingMessage, type Server } from "node:http";
import { connect, type AddressInfo } from "node:net";
import {
  HermesA2AClient,
  isSafeCallbackUrl,
  pyDumps,
  SecurityContext,
  startHermesA2AServer,
  type HermesA2AServer,
} from "../fakes/hermes-a2a";

const TOKEN = `tok-${crypto.randomUUID()}`;
let hermes: HermesA2AServer;

async function rpc(method: string, params: unknown, headers: Record<string, string> = {}, base = hermes.url) {
  const res = await fetch(`${base}/`, {
    method: "POST",
    headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json", ...headers },
    body: JSON.stringify({ jsonrpc: "2.0", id: 7, method, params }),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, text, body: JSON.parse(text) };
}

const msg = (text: string, extra: Record<string, unknown> = {}) => ({
  message: { role: "ROLE_USER", parts: [{ text }], messageId: crypto.randomUUID(), ...extra },
});

/** The `data:` frames of an SSE body, parsed, and the whole text. */
async function stream(method: string, params: unknown, base = hermes.url) {
  const res = await fetch(`${base}/`, {
    method: "POST",
    headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json", accept: "text/event-stream" },
    body: JSON.stringify({ jsonrpc: "2.0", id: "s1", method, params }),
  });
  const text = await res.text();
  const frames = text
    .split("\n")
    .filter((l) => l.startsWith("data: "))
    .map((l) => JSON.parse(l.slice(6)));
  return { res, text, frames };
}

beforeAll(async () => {
  hermes = await startHermesA2AServer({ port: 0, peerTokens: { alpha: TOKEN }, rateLimit: 1000 });
});
afterAll(async () => {
  await hermes?.stop();
});

describe("the twin's server, as adapter.py serves", () => {
  it("answers in HTTP/1.0 as Python's http.server does, and closes the connection after one answer", async () => {
    const raw = await new Promise<string>((resolve, reject) => {
      const s = connect(Number(new URL(hermes.url).port), "127.0.0.1", () =>
        s.write("GET /health HTTP/1.1\r\nHost: example\r\nConnection: keep-alive\r\n\r\n"),
      );
      let got = "";
      s.on("data", (d) => (got += d));
      s.on("end", () => resolve(got));
      s.on("error", reject);
    });
    expect(raw).toMatch(/^HTTP\/1\.0 200 OK\r\nServer: BaseHTTP\/0\.6 Python\/3\.\d+\.\d+\r\nDate: /);
    expect(raw).toContain('\r\n\r\n{"status": "ok", "agent": "hermes-twin"');
    const put = await fetch(`${hermes.url}/`, { method: "PUT" });
    expect([put.status, await put.text()]).toEqual([501, expect.stringContaining("Unsupported method ('PUT')")]);
  });

  it("serves a v1.0 card with v0.3 fields mixed in, its URL from the request's Host", async () => {
    const card = (await (await fetch(`${hermes.url}/.well-known/agent-card.json`)).json()) as Record<string, any>;
    const url = `${hermes.url}/`;
    expect(card).toMatchObject({
      url,
      version: "1.0.0",
      supportedInterfaces: [{ url, protocolBinding: "JSONRPC", protocolVersion: "1.0" }],
      capabilities: {
        streaming: true,
        pushNotifications: true,
        stateTransitionHistory: false,
        extendedAgentCard: false,
      },
      securitySchemes: { bearer: { type: "http", scheme: "bearer" } },
      security: [{ bearer: [] }],
      skills: [{ id: "general" }],
    });
    expect(card.securityRequirements).toBeUndefined();
    expect(await (await fetch(`${hermes.url}/.well-known/agent.json`)).json()).toEqual(card);
    const open = await startHermesA2AServer({ port: 0 });
    try {
      expect(
        ((await (await fetch(`${open.url}/.well-known/agent-card.json`)).json()) as Record<string, unknown>).security,
      ).toBeUndefined();
    } finally {
      await open.stop();
    }
  });

  it("refuses a missing or wrong token with HTTP 401, JSON-RPC -32050 and no WWW-Authenticate; a peer token names the caller", async () => {
    for (const authorization of ["", "Bearer nope", `Basic ${TOKEN}`]) {
      const r = await rpc("GetTask", { id: "x" }, { authorization });
      expect([r.status, r.body, r.headers.get("www-authenticate")]).toEqual([
        401,
        { jsonrpc: "2.0", id: null, error: { code: -32050, message: "unauthorized" } },
        null,
      ]);
    }
    const turns = hermes.turns.length;
    await rpc("SendMessage", msg("who am I"));
    expect((await hermes.nextTurn(turns)).peer).toBe("alpha");
  });

  it("reads an empty A2A-Version as 1.0, takes 1.0.0, and refuses any other with -32602 in an HTTP 200", async () => {
    expect((await rpc("GetTask", { id: "nope" }, { "a2a-version": "" })).body.error.code).toBe(-32001);
    expect((await rpc("GetTask", { id: "nope" }, { "a2a-version": "1.0.0" })).body.error.code).toBe(-32001);
    const old = await rpc("GetTask", { id: "nope" }, { "a2a-version": "0.3" });
    expect([old.status, old.body.error]).toEqual([200, { code: -32602, message: "unsupported A2A-Version: 0.3" }]);
    expect((await rpc("NoSuchMethod", {})).body.error).toEqual({
      code: -32601,
      message: "method not found: NoSuchMethod",
    });
  });

  it("answers SendMessage at once with the task WORKING, whatever returnImmediately says; a taskId in the message starts another task", async () => {
    const turns = hermes.turns.length;
    const r = await rpc("SendMessage", {
      ...msg("[hold] blocking please"),
      configuration: { returnImmediately: false },
    });
    expect(r.text).toContain('"result": {"task": {"id": "task-');
    const task = r.body.result.task;
    expect([task.id, task.contextId, task.status.state]).toEqual([
      expect.stringMatching(/^task-[0-9a-f]{16}$/),
      expect.stringMatching(/^ctx-[0-9a-f]{16}$/),
      "TASK_STATE_WORKING",
    ]);
    await hermes.nextTurn(turns);
    const answer = await rpc("SendMessage", msg("an answer", { taskId: task.id, contextId: task.contextId }));
    expect(answer.body.result.task.id).not.toBe(task.id);
    expect(answer.body.result.task.contextId).toBe(task.contextId);
    hermes.release(task.id, "done holding");
    const legacy = await rpc("message/send", msg("legacy"));
    expect(legacy.body.result.status.state).toBe("TASK_STATE_WORKING"); // the bare Task, not {task}
  });

  it("streams JSON-RPC responses: the task SUBMITTED, WORKING, the reply as one artifact, COMPLETED, then ': done'", async () => {
    const { res, text, frames } = await stream("SendStreamingMessage", msg("stream me"));
    expect(res.headers.get("content-type")).toBe("text/event-stream");
    expect(res.headers.get("content-length")).toBeNull();
    expect(frames.every((f) => f.jsonrpc === "2.0" && f.id === "s1")).toBe(true);
    const kinds = frames.map(
      (f) => Object.keys(f.result)[0] + (f.result.statusUpdate ? `:${f.result.statusUpdate.status.state}` : ""),
    );
    expect(kinds).toEqual([
      "task",
      "statusUpdate:TASK_STATE_WORKING",
      "artifactUpdate",
      "statusUpdate:TASK_STATE_COMPLETED",
    ]);
    expect(frames[0].result.task.status.state).toBe("TASK_STATE_SUBMITTED");
    expect(frames[2].result.artifactUpdate.artifact.parts).toEqual([
      { text: "Hermes heard: stream me", mediaType: "text/plain" },
    ]);
    expect(text.endsWith(": done\n\n")).toBe(true);
    expect(text).toContain('data: {"jsonrpc": "2.0", "id": "s1", "result": {"task": {');
  });

  it("streams a question as COMPLETED with its [INPUT_REQUIRED] marker, while GetTask says INPUT_REQUIRED", async () => {
    const { frames } = await stream("SendStreamingMessage", msg("[ask] deploy"));
    const id = frames[0].result.task.id;
    expect(frames[2].result.artifactUpdate.artifact.parts[0].text).toBe(
      "[INPUT_REQUIRED] Which environment: staging or production?",
    );
    expect(frames[3].result.statusUpdate.status.state).toBe("TASK_STATE_COMPLETED");
    const got = (await rpc("GetTask", { id })).body.result;
    expect([got.status.state, got.status.message.parts[0].text, got.artifacts]).toEqual([
      "TASK_STATE_INPUT_REQUIRED",
      "Which environment: staging or production?",
      undefined,
    ]);
  });

  it("rejects the sixth message of a context, and streams such a task without a task first", async () => {
    const contextId = `ctx-${crypto.randomUUID()}`;
    for (let i = 0; i < 5; i++)
      expect((await rpc("SendMessage", msg(`turn ${i}`, { contextId }))).body.result.task.status.state).not.toBe(
        "TASK_STATE_REJECTED",
      );
    const { frames, text } = await stream("SendStreamingMessage", msg("turn 6", { contextId }));
    expect(frames.map((f) => Object.keys(f.result))).toEqual([["statusUpdate"]]);
    expect(frames[0].result.statusUpdate.status).toMatchObject({
      state: "TASK_STATE_REJECTED",
      message: {
        parts: [{ text: expect.stringContaining(`Anti-loop protection: context ${contextId} exceeded 5 turns`) }],
      },
    });
    expect(text.endsWith(": done\n\n")).toBe(true);
    const empty = await rpc("SendMessage", msg(" ", {}));
    expect(empty.body.result.task.status).toMatchObject({
      state: "TASK_STATE_REJECTED",
      message: { parts: [{ text: "Empty task — nothing to do." }] },
    });
  });

  it("subscribes without a task first, only the end (at once for a task that has ended); cancels once", async () => {
    const turns = hermes.turns.length;
    const held = (await rpc("SendMessage", msg("[hold] subscribe to me"))).body.result.task;
    await hermes.nextTurn(turns);
    const watching = stream("SubscribeToTask", { id: held.id });
    const canceled = await rpc("CancelTask", { id: held.id });
    expect(canceled.body.result.status.state).toBe("TASK_STATE_CANCELED");
    const { frames } = await watching;
    expect(frames.map((f) => f.result.statusUpdate?.status.state)).toEqual(["TASK_STATE_CANCELED"]);
    expect((await rpc("CancelTask", { id: held.id })).body.error).toEqual({
      code: -32002,
      message: `task ${held.id} already TASK_STATE_CANCELED`,
    });
    expect((await rpc("CancelTask", { id: "task-nope" })).body.error).toEqual({
      code: -32001,
      message: "task not found: task-nope",
    });
    const ended = await stream("SubscribeToTask", { id: held.id });
    expect(ended.frames.map((f) => f.result.statusUpdate?.status.state)).toEqual(["TASK_STATE_CANCELED"]);
    // The agent's late reply is dropped: the task stays canceled.
    hermes.release(held.id, "too late");
    expect((await rpc("GetTask", { id: held.id })).body.result.status.state).toBe("TASK_STATE_CANCELED");
  });

  it("with a token and a bind beyond loopback, refuses every peer until A2A_TRUSTED_PEERS names it", () => {
    const wide = { peerTokens: { alpha: TOKEN }, host: "0.0.0.0" };
    expect(new SecurityContext(wide).isTrustedPeer("alpha")).toBe(false);
    expect(new SecurityContext({ ...wide, trustedPeers: ["alpha"] }).isTrustedPeer("alpha")).toBe(true);
    expect(new SecurityContext({ ...wide, trustedPeers: ["alpha"] }).isTrustedPeer("bob")).toBe(false);
    expect(new SecurityContext({ peerTokens: { alpha: TOKEN } }).isTrustedPeer("anyone")).toBe(true); // loopback bind
    expect(new SecurityContext({ host: "0.0.0.0" }).resolveBindHost()).toBe("127.0.0.1"); // no token: loopback only
  });

  it("answers 429 with -32051 over its per-identity rate limit", async () => {
    const limited = await startHermesA2AServer({ port: 0, peerTokens: { alpha: TOKEN }, rateLimit: 1 });
    try {
      expect((await rpc("GetTask", { id: "x" }, {}, limited.url)).status).toBe(200);
      const r = await rpc("GetTask", { id: "x" }, {}, limited.url);
      expect([r.status, r.body.error]).toEqual([429, { code: -32051, message: "rate limit exceeded" }]);
    } finally {
      await limited.stop();
    }
  });
});

describe("the twin's push, as adapter.py and security.py send it", () => {
  let receiver: Server;
  let receiverUrl: string;
  const got: { headers: IncomingMessage["headers"]; body: string }[] = [];

  beforeAll(async () => {
    receiver = createServer((req, res) => {
      let body = "";
      req.on("data", (c) => (body += c));
      req.on("end", () => {
        got.push({ headers: req.headers, body });
        res.end();
      });
    });
    await new Promise<void>((r) => receiver.listen(0, "127.0.0.1", () => r()));
    receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
  });
  afterAll(() => new Promise<void>((r) => receiver.close(() => r())));

  it("POSTs the terminal {statusUpdate} once, signed: hex HMAC-SHA256 over the payload re-serialized with sorted keys", async () => {
    const secret = `push-${crypto.randomUUID()}`;
    const open = await startHermesA2AServer({ port: 0, pushSecret: secret });
    try {
      const r = await rpc(
        "SendMessage",
        { ...msg("push me — ünïcode"), configuration: { taskPushNotificationConfig: { url: receiverUrl } } },
        {},
        open.url,
      );
      const pushed = await open.nextPush(0);
      expect(pushed).toEqual({ url: receiverUrl, status: 200 });
      const { headers, body } = got.at(-1)!;
      const payload = JSON.parse(body);
      expect(payload).toMatchObject({
        statusUpdate: {
          taskId: r.body.result.task.id,
          status: { state: "TASK_STATE_COMPLETED", message: { parts: [{ text: "Hermes heard: push me — ünïcode" }] } },
        },
      });
      expect(headers["content-type"]).toBe("application/json");
      expect(body).toContain("\\u00fc"); // the body is json.dumps(payload): ASCII only
      const sorted = pyDumps(payload, { sortKeys: true, ensureAscii: false });
      expect(headers["x-a2a-signature"]).toBe(createHmac("sha256", secret).update(sorted).digest("hex"));
      // Over the bytes as sent, it does not verify: the signature covers another serialization.
      expect(headers["x-a2a-signature"]).not.toBe(createHmac("sha256", secret).update(body).digest("hex"));
      expect(headers["x-a2a-timestamp"]).toBeUndefined();
    } finally {
      await open.stop();
    }
  });

  it("refuses loopback and private callbacks on a node with tokens (no SSRF guard exception there)", async () => {
    const pushes = hermes.pushes.length;
    const r = await rpc("SendMessage", {
      ...msg("push me"),
      configuration: { taskPushNotificationConfig: { url: receiverUrl } },
    });
    expect(await hermes.nextPush(pushes)).toEqual({ url: receiverUrl, error: "blocked: unsafe callback URL" });
    expect(r.body.result.task.status.state).toBe("TASK_STATE_WORKING");
    expect(isSafeCallbackUrl("http://10.1.2.3/h", false)).toBe(false);
    expect(isSafeCallbackUrl("http://10.1.2.3/h", true)).toBe(false);
    expect(isSafeCallbackUrl("http://localhost:9/h", true)).toBe(true);
    expect(isSafeCallbackUrl("https://hooks.example.com/h", false)).toBe(true);
  });
});

describe("the twin's client, as tools.py calls", () => {
  it("reads the card with the token, streams with Hermes-A2A/1.0 and A2A-Version 1.0, and returns the reply as a2a_call words it", async () => {
    const client = new HermesA2AClient({ agents: { h: { url: hermes.url, auth: { type: "bearer", token: TOKEN } } } });
    const seen = hermes.requests.length;
    const r = await client.a2aCall({ agent: "h", message: "hello twin" });
    expect(r.text).toBe(`[h · context ${r.contextId} · completed]\nHermes heard: hello twin`);
    const [card, post] = hermes.requests.slice(seen);
    expect([card.method, card.path, card.headers.authorization, card.headers["user-agent"]]).toEqual([
      "GET",
      "/.well-known/agent-card.json",
      `Bearer ${TOKEN}`,
      "Hermes-A2A/1.0",
    ]);
    expect(post.rpcMethod).toBe("SendStreamingMessage");
    expect(post.headers).toMatchObject({
      "a2a-version": "1.0",
      accept: "text/event-stream",
      "user-agent": "Hermes-A2A/1.0",
      connection: "close",
    });
    const body = post.body as { id: string; params: { message: Record<string, unknown> } };
    expect(body.id).toMatch(/^task-[0-9a-f]{16}$/);
    expect(body.params).toEqual({
      message: {
        role: "ROLE_USER",
        parts: [{ text: "hello twin", mediaType: "text/plain" }],
        messageId: expect.stringMatching(/^[0-9a-f]{32}$/),
        contextId: r.contextId,
      },
    });
  });

  it("takes a Hermes question over a stream as completed, marker and all (Hermes to Hermes)", async () => {
    const client = new HermesA2AClient({ agents: { h: { url: hermes.url, auth: { type: "bearer", token: TOKEN } } } });
    const r = await client.a2aCall({ agent: "h", message: "[ask] deploy" });
    expect([r.state, r.reply]).toEqual([
      "TASK_STATE_COMPLETED",
      "[INPUT_REQUIRED] Which environment: staging or production?",
    ]);
  });

  it("falls back from a refused stream to SendMessage with the same request: same JSON-RPC id, same messageId", async () => {
    const bodies: Record<string, unknown>[] = [];
    const agent = createServer((req, res) => {
      let body = "";
      req.on("data", (c) => (body += c));
      req.on("end", () => {
        if (req.method === "GET")
          return res
            .setHeader("content-type", "application/json")
            .end(JSON.stringify({ capabilities: { streaming: true } }));
        const parsed = JSON.parse(body);
        bodies.push(parsed);
        if (parsed.method === "SendStreamingMessage") return res.writeHead(405).end();
        res.setHeader("content-type", "application/json").end(
          JSON.stringify({
            jsonrpc: "2.0",
            id: parsed.id,
            result: {
              task: {
                id: "t1",
                contextId: "c1",
                status: { state: "TASK_STATE_COMPLETED" },
                artifacts: [{ artifactId: "a", parts: [{ text: "first" }, { text: "second" }] }],
              },
            },
          }),
        );
      });
    });
    await new Promise<void>((r) => agent.listen(0, "127.0.0.1", () => r()));
    try {
      const url = `http://127.0.0.1:${(agent.address() as AddressInfo).port}`;
      const r = await new HermesA2AClient().a2aCall({ agent: url, message: "fall back" });
      expect(r.fellBack).toBe(true);
      expect(bodies.map((b) => b.method)).toEqual(["SendStreamingMessage", "SendMessage"]);
      expect(bodies[1].id).toBe(bodies[0].id);
      expect((bodies[1].params as { message: unknown }).message).toEqual(
        (bodies[0].params as { message: unknown }).message,
      );
      // The parts of an artifact are joined by newlines.
      expect(r.text).toBe(`[${url} · context c1 · completed]\nfirst\nsecond`);
    } finally {
      await new Promise<void>((r) => agent.close(() => r()));
    }
  });

  it("words refusals as the tools do: 401 'rejected auth', a JSON-RPC error 'returned an error', an unknown peer", async () => {
    const bad = new HermesA2AClient({ agents: { h: { url: hermes.url, auth: { type: "bearer", token: "nope" } } } });
    expect((await bad.a2aCall({ agent: "h", message: "hi" })).text).toBe(
      "Error: peer 'h' rejected auth (HTTP 401). Check the configured token.",
    );
    expect((await bad.a2aCall({ agent: "nobody", message: "hi" })).text).toContain("Error: unknown agent 'nobody'");
    expect((await bad.a2aCall({ agent: "h", message: "" })).text).toBe(
      "Error: both 'agent' and 'message' are required.",
    );
    const discover = await new HermesA2AClient().a2aDiscover({ url: hermes.url });
    expect(discover).toContain("Protocol: JSONRPC v1.0");
    expect(discover).toContain("Streaming: True  Push: True  Auth required: yes");
  });
});
