/**
 * The per-connection HTTP limits through the binary, as set by their flags: a client that starts a request and
 * never finishes it (slow loris) gets 408 and is dropped after request_timeout_seconds; an idle connection is
 * closed after idle_timeout_seconds; a head over max_head_bytes gets 431. Real mTLS sockets, our own PKI.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { once } from "node:events";
import { connect as tlsConnect, type TLSSocket } from "node:tls";
import { serveBinary, type ServedBinary } from "../helpers/binary";
import { makeFleet, type Fleet, type TlsIdentity } from "../helpers/fleet";
import { rpc, userMessage } from "../helpers/rpc";

let fleet: Fleet;
let node: ServedBinary;
let alpha: TlsIdentity;

beforeAll(async () => {
  fleet = await makeFleet(["beta", "alpha"]);
  alpha = fleet.identity("alpha");
  node = await serveBinary(fleet.homes.beta, [
    "--executor",
    "echo",
    "--request-timeout",
    "1",
    "--idle-timeout",
    "2",
    "--max-head",
    "2048",
  ]);
});
afterAll(async () => {
  await node?.stop("SIGKILL");
  fleet?.cleanup();
});

async function open(): Promise<{ socket: TLSSocket; received: () => string; closed: Promise<unknown> }> {
  const socket = tlsConnect({
    host: "127.0.0.1",
    port: node.port,
    cert: alpha.cert,
    key: alpha.key,
    ca: alpha.ca,
    servername: "beta",
  });
  socket.on("error", () => {});
  const chunks: Buffer[] = [];
  socket.on("data", (d: Buffer) => chunks.push(d));
  const closed = once(socket, "close");
  await once(socket, "secureConnect");
  return { socket, received: () => Buffer.concat(chunks).toString("latin1"), closed };
}

describe("HTTP limits set by flags", () => {
  it("answers a request left unfinished past --request-timeout with 408 and closes the connection", async () => {
    const c = await open();
    c.socket.write(
      'POST / HTTP/1.1\r\nHost: beta\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"jsonrpc":',
    );
    await c.closed;
    expect(c.received()).toMatch(/^HTTP\/1\.1 408 /);
    expect(c.received()).toContain("request took too long to arrive");
  });

  it("closes a connection idle past --idle-timeout, after answering what it asked", async () => {
    const c = await open();
    c.socket.write("GET /health HTTP/1.1\r\nHost: beta\r\n\r\n");
    await c.closed;
    expect(c.received()).toMatch(/^HTTP\/1\.1 200 /);
    expect(c.received()).not.toContain("408");
  });

  it("answers a head over --max-head with 431", async () => {
    const c = await open();
    c.socket.write(`GET / HTTP/1.1\r\nHost: beta\r\nX-Big: ${"x".repeat(3000)}\r\n\r\n`);
    await c.closed;
    expect(c.received()).toMatch(/^HTTP\/1\.1 431 /);
  });

  it("still serves a whole request", async () => {
    const r = await rpc(node.url, alpha, "SendMessage", { message: userMessage("fine") });
    expect(r.body.result.task.status.state).toBe("TASK_STATE_COMPLETED");
  });

  it("refuses a timeout out of range, naming the flag", async () => {
    const { runBinary } = await import("../helpers/binary");
    const r = await runBinary(["--home", fleet.homes.beta, "serve", "--request-timeout", "0", "--check"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("--request-timeout");
  });
});
