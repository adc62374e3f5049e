/**
 * Everything a JSON-RPC client can get wrong, sent over mTLS to one served binary: each gets the right
 * JSON-RPC error (with v1.0 ErrorInfo details), and the node keeps serving.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { once } from "node:events";
import { connect as tlsConnect } from "node:tls";
import { serveBinary, type ServedBinary } from "../helpers/binary";
import { makeFleet, type Fleet, type TlsIdentity } from "../helpers/fleet";
import { post, rpc, userMessage, type RpcReply } from "../helpers/rpc";

const MAX_BODY = 2048;

let fleet: Fleet;
let node: ServedBinary;
let exitCode: number | undefined;
let who: TlsIdentity;

beforeAll(async () => {
  fleet = await makeFleet(["beta", "alpha"]);
  node = await serveBinary(fleet.homes.beta, ["--executor", "echo", "--max-body", String(MAX_BODY)]);
  void node.exited.then((c) => (exitCode = c));
  who = fleet.identity("alpha");
});

afterAll(async () => {
  await node?.stop("SIGKILL");
  fleet?.cleanup();
});

/** A v1.0 JSON-RPC error: HTTP 200, the code, and `data` carrying a google.rpc.ErrorInfo. */
function expectError(r: RpcReply, code: number, id: unknown = expect.anything()) {
  expect(r.status, r.text).toBe(200);
  expect(r.body, r.text).toMatchObject({ jsonrpc: "2.0", error: { code, message: expect.any(String) } });
  expect(r.body).not.toHaveProperty("result");
  expect(r.body.id).toEqual(id);
  expectErrorInfo(r.body.error);
  return r.body.error as { code: number; message: string; data: any[] };
}

function expectErrorInfo(error: { data?: unknown }) {
  expect(Array.isArray(error.data), JSON.stringify(error)).toBe(true);
  expect(error.data).toContainEqual(
    expect.objectContaining({
      "@type": "type.googleapis.com/google.rpc.ErrorInfo",
      reason: expect.stringMatching(/^[A-Z][A-Z0-9_]+$/),
      domain: "a2a-protocol.org",
    }),
  );
}

const envelope = (method: string, params: unknown, id: unknown = 7) =>
  JSON.stringify({ jsonrpc: "2.0", id, method, params });

describe("JSON-RPC notifications", () => {
  it("a request without an id member gets HTTP 204 and no body, valid or not, and the node answers the next call", async () => {
    for (const body of [
      JSON.stringify({ jsonrpc: "2.0", method: "GetTask", params: { id: "nope" } }),
      JSON.stringify({ jsonrpc: "2.0", method: "NoSuchMethod" }),
    ]) {
      const r = await post(node.url, who, body);
      expect(r.status).toBe(204);
      expect(r.text).toBe("");
    }
    expect((await post(node.url, who, envelope("GetTask", { id: "nope" }, 3))).body.error.code).toBe(-32001);
  });
});

describe("malformed JSON-RPC", () => {
  it("answers unparsable JSON with -32700 and id null", async () => {
    const e = expectError(await post(node.url, who, '{"jsonrpc":"2.0","id":1,"method":'), -32700, null);
    expect(e.data[0].reason).toBe("PARSE_ERROR");
  });

  it.each([
    ["a batch (JSON array)", JSON.stringify([{ jsonrpc: "2.0", id: 1, method: "GetTask", params: { id: "x" } }])],
    ["an empty array", "[]"],
    ["a number", "42"],
    ["a string", '"GetTask"'],
    ["null", "null"],
  ])("answers %s with -32600", async (_label, body) => {
    expectError(await post(node.url, who, body), -32600, null);
  });

  it.each([
    ["missing", undefined],
    ['"1.0"', "1.0"],
    ["the number 2", 2],
  ])("answers jsonrpc %s with -32600", async (_label, jsonrpc) => {
    const e = expectError(
      await post(node.url, who, JSON.stringify({ jsonrpc, id: 3, method: "GetTask", params: { id: "x" } })),
      -32600,
      3,
    );
    expect(e.message).toMatch(/jsonrpc/);
  });

  it("answers an unknown method with -32601 naming it", async () => {
    const e = expectError(await rpc(node.url, who, "tasks/send", { task: "x" }), -32601);
    expect(e.message).toContain("tasks/send");
  });
});

describe("invalid params (-32602, naming the field)", () => {
  it.each([
    ["SendMessage without message", "SendMessage", {}, /message/],
    ["SendMessage with empty parts", "SendMessage", { message: userMessage("x", { parts: [] }) }, /parts/],
    [
      "a part with two kinds",
      "SendMessage",
      { message: userMessage("x", { parts: [{ text: "a", url: "https://example.com/a" }] }) },
      /parts\[0\]/,
    ],
    [
      "a part with no kind",
      "SendMessage",
      { message: userMessage("x", { parts: [{ mediaType: "text/plain" }] }) },
      /parts\[0\]/,
    ],
    ['role "user" (v0.3 spelling)', "SendMessage", { message: userMessage("x", { role: "user" }) }, /role/],
    ["messageId not a string", "SendMessage", { message: userMessage("x", { messageId: 42 }) }, /messageId/],
    [
      "configuration.historyLength -1",
      "SendMessage",
      { message: userMessage("x"), configuration: { historyLength: -1 } },
      /historyLength/,
    ],
    ["params not an object", "SendMessage", "hello", /params/],
    ["GetTask without id", "GetTask", {}, /\bid\b/],
    ["GetTask historyLength -1", "GetTask", { id: "x", historyLength: -1 }, /historyLength/],
    ["ListTasks pageSize 0", "ListTasks", { pageSize: 0 }, /pageSize/],
    ["ListTasks pageSize 101", "ListTasks", { pageSize: 101 }, /pageSize/],
    ["ListTasks bad status", "ListTasks", { status: "done" }, /status/],
    ["ListTasks historyLength -1", "ListTasks", { historyLength: -1 }, /historyLength/],
    [
      "ListTasks pageToken it never issued",
      "ListTasks",
      { pageToken: "garbage" },
      /pageToken is not one this node issued/,
    ],
    ["CancelTask without id", "CancelTask", {}, /\bid\b/],
  ])("%s", async (_label, method, params, field) => {
    const e = expectError(await post(node.url, who, envelope(method, params, 11)), -32602, 11);
    expect(e.message).toMatch(field);
    expect(e.data[0].reason).toBe("INVALID_PARAMS");
  });
});

describe("protocol version", () => {
  it("reads a missing A2A-Version as 0.3: v1.0 method names are unknown there, v0.3 ones answer in v0.3 shape", async () => {
    const unknown = await post(node.url, who, envelope("GetTask", { id: "x" }), {});
    // v0.3 errors carry no ErrorInfo array: just code, message and data.
    expect(unknown.body.error).toEqual({
      code: -32601,
      message: "Method not found: GetTask",
      data: { method: "GetTask" },
    });
    const r = await post(
      node.url,
      who,
      envelope("message/send", {
        message: {
          kind: "message",
          messageId: `v03-${Date.now()}`,
          role: "user",
          parts: [{ kind: "text", text: "old client" }],
        },
      }),
      {},
    );
    expect(r.body.error).toBeUndefined();
    expect(r.body.result.kind).toBe("task");
    expect(r.body.result.status.state).toBe("completed");
    expect(r.body.result.artifacts[0].parts[0]).toEqual({ kind: "text", text: "old client" });
  });

  it("refuses A2A-Version: 2.0 with -32009", async () => {
    const e = expectError(
      await post(node.url, who, envelope("GetTask", { id: "x" }), { "a2a-version": "2.0" }),
      -32009,
      7,
    );
    expect(e.message).toContain("2.0");
  });

  it("accepts ?A2A-Version=1.0 as a query parameter instead of the header", async () => {
    const r = await post(
      `${node.url}/?A2A-Version=1.0`,
      who,
      envelope("SendMessage", { message: userMessage("via query") }),
      {},
    );
    expect(r.status).toBe(200);
    expect(r.body.error).toBeUndefined();
    expect(r.body.result.task.status.state).toBe("TASK_STATE_COMPLETED");
    expect(r.body.result.task.artifacts[0].parts[0].text).toBe("via query");
  });
});

describe("body size limit", () => {
  const big = () => envelope("SendMessage", { message: userMessage("x".repeat(4096)) });

  it("answers a 4 KiB body (limit 2048) with HTTP 413 and a -32600 error naming the limit", async () => {
    const r = await post(node.url, who, big());
    expect(r.status).toBe(413);
    expect(r.body?.error?.code, r.text).toBe(-32600);
    expect(r.body.error.message).toContain(String(MAX_BODY));
    expectErrorInfo(r.body.error);
  });

  it("does the same for a streamed body with no Content-Length", async () => {
    const bytes = new TextEncoder().encode(big());
    const res = await fetch(node.url, {
      method: "POST",
      headers: { "content-type": "application/json", "a2a-version": "1.0" },
      body: new ReadableStream({
        start(c) {
          c.enqueue(bytes);
          c.close();
        },
      }),
      tls: who,
    } as RequestInit);
    expect(res.status).toBe(413);
    const body = JSON.parse(await res.text());
    expect(body.error.code).toBe(-32600);
    expect(body.error.message).toContain(String(MAX_BODY));
  });
});

describe("task errors", () => {
  it("GetTask of an unknown id is -32001 TASK_NOT_FOUND", async () => {
    const e = expectError(await rpc(node.url, who, "GetTask", { id: "01NOSUCHTASK0000000000000" }), -32001);
    expect(e.data[0].reason).toBe("TASK_NOT_FOUND");
  });

  it("CancelTask of a completed task is -32002 TASK_NOT_CANCELABLE, and the task stays completed", async () => {
    const sent = await rpc(node.url, who, "SendMessage", { message: userMessage("done soon") });
    const task = sent.body.result.task;
    expect(task.status.state).toBe("TASK_STATE_COMPLETED");
    const e = expectError(await rpc(node.url, who, "CancelTask", { id: task.id }), -32002);
    expect(e.data[0].reason).toBe("TASK_NOT_CANCELABLE");
    const after = await rpc(node.url, who, "GetTask", { id: task.id });
    expect(after.body.result.status.state).toBe("TASK_STATE_COMPLETED");
  });
});

describe("HTTP bytes no client may send (over mTLS, to the binary)", () => {
  /** Sends raw bytes over a verified mTLS connection and reads everything until the node closes it. */
  async function raw(bytes: string): Promise<{ status: number; text: string }> {
    const socket = tlsConnect({
      host: "127.0.0.1",
      port: node.port,
      cert: who.cert,
      key: who.key,
      ca: who.ca,
      servername: "beta",
    });
    socket.on("error", () => {});
    await once(socket, "secureConnect");
    const chunks: Buffer[] = [];
    socket.on("data", (d: Buffer) => chunks.push(d));
    const closed = once(socket, "close");
    socket.write(Buffer.from(bytes, "latin1"));
    await closed;
    const text = Buffer.concat(chunks).toString("latin1");
    return { status: Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1]), text };
  }
  const body = envelope("SendMessage", { message: userMessage("smuggled?") });
  const head = (lines: string) => `POST / HTTP/1.1\r\n${lines}content-type: application/json\r\na2a-version: 1.0\r\n`;

  it.each([
    [
      "a bare LF in a header value",
      `${head("Host: beta\r\nX-A: a\nContent-Length: 0\r\n")}Content-Length: ${body.length}\r\n\r\n${body}`,
      "control character",
    ],
    [
      "a NUL in a header value",
      `${head("Host: beta\r\nX-A: a\u0000b\r\n")}Content-Length: ${body.length}\r\n\r\n${body}`,
      "control character",
    ],
    [
      "Transfer-Encoding: \\x0bchunked",
      `${head("Host: beta\r\n")}Transfer-Encoding: \u000bchunked\r\n\r\n${body.length.toString(16)}\r\n${body}\r\n0\r\n\r\n`,
      "control character",
    ],
    [
      "an absolute-form target",
      `POST https://beta/ HTTP/1.1\r\nHost: beta\r\ncontent-type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
      "must be a path",
    ],
    ["no Host", `${head("")}Content-Length: ${body.length}\r\n\r\n${body}`, "needs a Host header"],
    [
      "a bad trailer",
      `${head("Host: beta\r\n")}Transfer-Encoding: chunked\r\n\r\n${body.length.toString(16)}\r\n${body}\r\n0\r\nno colon here\r\n\r\n`,
      "malformed trailer line",
    ],
  ])("answers %s with 400 and closes; nothing of it reaches the node", async (_what, bytes, message) => {
    const before = (await rpc(node.url, who, "ListTasks", {})).body.result.tasks.length;
    const r = await raw(bytes);
    expect(r.status, r.text).toBe(400);
    expect(r.text).toContain(message);
    expect(r.text.toLowerCase()).toContain("connection: close");
    const after = (await rpc(node.url, who, "ListTasks", {})).body.result.tasks.length;
    expect(after).toBe(before);
    expect(exitCode).toBeUndefined();
  });
});

describe("after all of that", () => {
  it("the same process still serves a correct SendMessage", async () => {
    const r = await rpc(node.url, who, "SendMessage", { message: userMessage("still fine") });
    expect(r.status).toBe(200);
    expect(r.body.id).toEqual(expect.any(Number));
    expect(r.body.result.task.status.state).toBe("TASK_STATE_COMPLETED");
    expect(r.body.result.task.artifacts[0].parts[0].text).toBe("still fine");
    expect(exitCode).toBeUndefined();
    expect(() => process.kill(node.pid, 0)).not.toThrow();
  });
});
