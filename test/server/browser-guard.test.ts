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
    const socket = connect(listener.port, "127.0.0.1", () =>
      socket.write(`${head}\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`),
    );
    let text = "";
    socket.on("data", (d) => (text += d.toString()));
    socket.on("end", () =>
      resolve({ status: Number(text.slice(9, 12)), body: text.slice(text.indexOf("\r\n\r\n") + 4) }),
    );
    socket.on("error", reject);
  });
}
const host = () => `host: 127.0.0.1:${listener.port}`;
const rpc = '{"jsonrpc":"2.0","id":1,"method":"ListTasks","params":{}}';

describe("the plain loopback listener against browsers", () => {
  it("serves a local tool: JSON body, its own Host, no Origin (or its own)", async () => {
    expect((await raw(`POST / HTTP/1.1\r\n${host()}\r\ncontent-type: application/json`, rpc)).status).toBe(200);
    expect(
      (
        await raw(
          `POST / HTTP/1.1\r\nhost: localhost:${listener.port}\r\norigin: http://localhost:${listener.port}\r\ncontent-type: application/a2a+json; charset=utf-8`,
          rpc,
        )
      ).status,
    ).toBe(200);
    expect((await raw(`GET /.well-known/agent-card.json HTTP/1.1\r\n${host()}`)).status).toBe(200);
    expect(seen.at(-1)).toBe("GET /.well-known/agent-card.json @local");
  });

  // The host part is what DNS rebinding controls; the port is whatever the client connected to: another one
  // behind `ssh -L 8080:localhost:PORT` or a local proxy (none: port 80).
  it.each([
    ["localhost on another port (an ssh tunnel)", "localhost:8080", "http://localhost:8080"],
    ["localhost without a port", "localhost", undefined],
    ["IPv6 loopback", "[::1]:PORT", "http://[::1]:PORT"],
    ["another address of 127.0.0.0/8", "127.0.0.2:9", undefined],
    ["upper case", "LocalHost:8080", "http://localhost:8080"],
  ])("serves %s", async (_label, hostHeader, origin) => {
    const before = seen.length;
    const h = hostHeader.replace("PORT", String(listener.port));
    const o = origin ? `\r\norigin: ${origin.replace("PORT", String(listener.port))}` : "";
    expect((await raw(`POST / HTTP/1.1\r\nhost: ${h}${o}\r\ncontent-type: application/json`, rpc)).status).toBe(200);
    expect(seen.length).toBe(before + 1);
  });

  it.each([
    [
      "a cross-origin POST with no Content-Type",
      `POST / HTTP/1.1\r\n${"HOST"}\r\norigin: https://evil.example`,
      403,
      "another origin",
    ],
    [
      "a simple CORS POST (text/plain) from another origin",
      `POST / HTTP/1.1\r\n${"HOST"}\r\norigin: http://127.0.0.1:1\r\ncontent-type: text/plain`,
      403,
      "another origin",
    ],
    ["a POST with no Content-Type (no Origin)", `POST / HTTP/1.1\r\n${"HOST"}`, 415, "must be JSON"],
    [
      "a form POST",
      `POST / HTTP/1.1\r\n${"HOST"}\r\ncontent-type: application/x-www-form-urlencoded`,
      415,
      "must be JSON",
    ],
    ["a cross-site fetch", `GET / HTTP/1.1\r\n${"HOST"}\r\nsec-fetch-site: cross-site`, 403, "cross-site"],
    [
      "a rebinding host name",
      `POST / HTTP/1.1\r\nhost: evil.example:PORT\r\ncontent-type: application/json`,
      400,
      "Host must name this machine's loopback",
    ],
    [
      "a name that starts like loopback",
      `POST / HTTP/1.1\r\nhost: 127.0.0.1.evil.example:PORT\r\ncontent-type: application/json`,
      400,
      "Host must name",
    ],
    [
      "a subdomain of localhost's look-alike",
      `POST / HTTP/1.1\r\nhost: localhost.evil.example\r\ncontent-type: application/json`,
      400,
      "Host must name",
    ],
    [
      "an IPv6 address other than ::1",
      `POST / HTTP/1.1\r\nhost: [::2]:PORT\r\ncontent-type: application/json`,
      400,
      "Host must name",
    ],
    [
      "an octet past 255",
      `POST / HTTP/1.1\r\nhost: 127.0.0.256:PORT\r\ncontent-type: application/json`,
      400,
      "Host must name",
    ],
    [
      "a port past 65535",
      `POST / HTTP/1.1\r\nhost: localhost:70000\r\ncontent-type: application/json`,
      400,
      "Host must name",
    ],
    [
      "an Origin other than the Host it names",
      `POST / HTTP/1.1\r\nhost: localhost:8080\r\norigin: http://localhost:3000\r\ncontent-type: application/json`,
      403,
      "another origin",
    ],
    [
      "an https Origin for a plain-HTTP Host",
      `POST / HTTP/1.1\r\nhost: localhost:8080\r\norigin: https://localhost:8080\r\ncontent-type: application/json`,
      403,
      "another origin",
    ],
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
