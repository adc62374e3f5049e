/**
 * The plain loopback listener refuses what a web page in a browser on this machine could send it: another
 * origin, a cross-site fetch, a body not declared JSON (a "simple" CORS POST), a rebinding host name. Real
 * listener, raw bytes over a real socket (a browser's headers, which fetch() would not let a test set).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connect } from "node:net";
import { listenPlainLoopback } from "../../src/server/plain-listener";
import type { Listener } from "../../src/server/mtls-listener";

let listener: Listener;
const seen: string[] = [];
beforeAll(async () => {
  listener = await listenPlainLoopback({
    port: 0,
    maxBodyBytes: 4096,
    tooLarge: () => ({ status: 413 }),
    onRequest: async (req, caller) => {
      seen.push(`${req.method} ${req.target} ${caller.name}`);
      return { status: 200, headers: { "content-type": "application/json" }, body: "{}" };
    },
  });
});
afterAll(() => listener.close());

/** Sends one request as raw bytes and resolves with the status code and body. */
function raw(head: string, body = ""): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const socket = connect(listener.port, "127.0.0.1", () => socket.write(`${head}\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`));
    let text = "";
    socket.on("data", (d) => (text += d.toString()));
    socket.on("end", () => resolve({ status: Number(text.slice(9, 12)), body: text.slice(text.indexOf("\r\n\r\n") + 4) }));
    socket.on("error", reject);
  });
}
const host = () => `host: 127.0.0.1:${listener.port}`;
const rpc = '{"jsonrpc":"2.0","id":1,"method":"ListTasks","params":{}}';

describe("the plain loopback listener against browsers", () => {
  it("serves a local tool: JSON body, its own Host, no Origin (or its own)", async () => {
    expect((await raw(`POST / HTTP/1.1\r\n${host()}\r\ncontent-type: application/json`, rpc)).status).toBe(200);
    expect((await raw(`POST / HTTP/1.1\r\nhost: localhost:${listener.port}\r\norigin: http://localhost:${listener.port}\r\ncontent-type: application/a2a+json; charset=utf-8`, rpc)).status).toBe(200);
    expect((await raw(`GET /.well-known/agent-card.json HTTP/1.1\r\n${host()}`)).status).toBe(200);
    expect(seen.at(-1)).toBe("GET /.well-known/agent-card.json @local");
  });

  it.each([
    ["a cross-origin POST with no Content-Type", `POST / HTTP/1.1\r\n${"HOST"}\r\norigin: https://evil.example`, 403, "another origin"],
    ["a simple CORS POST (text/plain) from another origin", `POST / HTTP/1.1\r\n${"HOST"}\r\norigin: http://127.0.0.1:1\r\ncontent-type: text/plain`, 403, "another origin"],
    ["a POST with no Content-Type (no Origin)", `POST / HTTP/1.1\r\n${"HOST"}`, 415, "must be JSON"],
    ["a form POST", `POST / HTTP/1.1\r\n${"HOST"}\r\ncontent-type: application/x-www-form-urlencoded`, 415, "must be JSON"],
    ["a cross-site fetch", `GET / HTTP/1.1\r\n${"HOST"}\r\nsec-fetch-site: cross-site`, 403, "cross-site"],
    ["a rebinding host name", `POST / HTTP/1.1\r\nhost: evil.example:PORT\r\ncontent-type: application/json`, 400, "Host must be"],
    // Refused by the HTTP layer already (RFC 9112 §3.2), before the guard sees it.
    ["no Host at all", `POST / HTTP/1.1\r\ncontent-type: application/json`, 400, "needs a Host header"],
  ])("refuses %s", async (_label, head, status, message) => {
    const before = seen.length;
    const r = await raw(head.replace("HOST", host()).replace("PORT", String(listener.port)), rpc);
    expect(r.status).toBe(status);
    expect(r.body).toContain(message);
    expect(seen.length).toBe(before); // nothing reached the node
  });
});
