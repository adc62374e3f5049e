/**
 * HTTP/2 sessions on the node's listeners are bounded like HTTP/1.1 connections: the mutual-TLS listener's
 * revocation check (dropRevoked) ends a revoked certificate's HTTP/2 session and the calls on it, the
 * connection limits count it, an idle session is closed, and closing the listener closes its sessions. Real TLS
 * with certificates from our PKI; the gRPC server behind the hand-off is the binding's own (src/grpc/server.ts)
 * with a handler that holds a stream open until told.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import http2 from "node:http2";
import net from "node:net";
import { X509Certificate } from "node:crypto";
import { createGrpcServer, type GrpcCall } from "../../src/grpc/server";
import { a2aCodec } from "../../src/grpc/a2a-service";
import { frame } from "../../src/grpc/framing";
import type { CallerIdentity } from "../../src/rpc/caller";
import { Http2Handoff, sniffPreface } from "../../src/server/http2-handoff";
import { listenMtls, type Listener } from "../../src/server/mtls-listener";
import { tooLargeResponse } from "../../src/server/request-router";
import { makeFleet, type Fleet, type TlsIdentity } from "../helpers/fleet";

let fleet: Fleet;
let me: TlsIdentity;
let beta: TlsIdentity;
const revoked = new Set<string>();
const calls: GrpcCall<CallerIdentity>[] = [];
const open: Listener[] = [];

beforeAll(async () => {
  fleet = await makeFleet(["alpha", "beta", "gamma"]);
  me = fleet.identity("alpha");
  beta = fleet.identity("beta");
});
afterAll(async () => {
  for (const l of open) await l.close();
  fleet?.cleanup();
});

/** A stream that yields the task, then waits until its call is aborted (a cut connection, a cancel). */
async function handler(call: GrpcCall<CallerIdentity>): Promise<unknown> {
  calls.push(call);
  if (call.method.name !== "SubscribeToTask") return { tasks: [], nextPageToken: "", pageSize: 0, totalSize: 0 };
  return (async function* () {
    yield { response: { task: { id: "t", contextId: "c", status: { state: "TASK_STATE_WORKING" } } } };
    await new Promise<void>((r) => call.signal.addEventListener("abort", () => r(), { once: true }));
  })();
}

async function listen(idleTimeoutMs = 60_000): Promise<Listener> {
  const handoff = new Http2Handoff(createGrpcServer<CallerIdentity>({ handler }), { idleTimeoutMs });
  const l = await listenMtls({
    host: "127.0.0.1",
    port: 0,
    cert: me.cert,
    key: me.key,
    ca: me.ca,
    maxBodyBytes: 65_536,
    onRequest: async (_req, caller) => ({ status: 200, body: `h1 ${caller.name}` }),
    tooLarge: tooLargeResponse,
    revoked: (serial) => (revoked.has(serial) ? new Date() : undefined),
    http2: handoff,
  });
  open.push(l);
  return l;
}

const codec = a2aCodec();
function connect(l: Listener, id: TlsIdentity = beta): http2.ClientHttp2Session {
  const s = http2.connect(`https://localhost:${l.port}`, { ca: id.ca, cert: id.cert, key: id.key });
  s.on("error", () => {});
  return s;
}

function subscribe(s: http2.ClientHttp2Session) {
  const req = s.request({
    ":method": "POST",
    ":path": "/lf.a2a.v1.A2AService/SubscribeToTask",
    "content-type": "application/grpc",
    te: "trailers",
  });
  req.on("error", () => {});
  req.end(frame(codec.encode("lf.a2a.v1.SubscribeToTaskRequest", { id: "t" })));
  const first = new Promise<void>((r) => req.once("data", () => r()));
  const closed = new Promise<void>((r) => req.once("close", () => r()));
  return { req, first, closed };
}

describe("HTTP/2 sessions on the mutual-TLS listener", () => {
  it("the caller is the verified certificate's; the session counts as one of the listener's connections", async () => {
    const l = await listen();
    const s = connect(l);
    const { first, req } = subscribe(s);
    await first;
    expect(calls.at(-1)?.caller.name).toBe("beta");
    expect(l.openConnections?.()).toBe(1);
    req.close(http2.constants.NGHTTP2_CANCEL);
    s.destroy();
  });

  it("revocation: dropRevoked ends the revoked certificate's session and the stream on it; others go on", async () => {
    const l = await listen();
    const gamma = fleet.identity("gamma");
    const a = connect(l, beta);
    const b = connect(l, gamma);
    const sa = subscribe(a);
    const sb = subscribe(b);
    await Promise.all([sa.first, sb.first]);
    const aborted = calls.slice(-2);
    revoked.add(new X509Certificate(beta.cert).serialNumber);
    try {
      expect(l.dropRevoked?.()).toBe(1);
      await sa.closed;
      expect(aborted.find((c) => c.caller.name === "beta")?.signal.aborted).toBe(true);
      expect(aborted.find((c) => c.caller.name === "gamma")?.signal.aborted).toBe(false);
      // A new connection with the revoked certificate is closed before any call on it reaches a handler.
      const before = calls.length;
      const again = connect(l, beta);
      const retry = subscribe(again);
      let answered = false;
      retry.req.on("response", () => (answered = true));
      await retry.closed;
      expect(answered).toBe(false);
      expect(calls.length).toBe(before);
      again.destroy();
    } finally {
      revoked.clear();
      sb.req.close(http2.constants.NGHTTP2_CANCEL);
      b.destroy();
    }
  });

  it("an idle session (no call open) is closed with GOAWAY after the idle timeout", async () => {
    const l = await listen(200);
    const s = connect(l);
    const goaway = new Promise<number>((r) => s.once("goaway", (code: number) => r(code)));
    await new Promise<void>((r) => s.once("connect", () => r()));
    expect(await goaway).toBe(http2.constants.NGHTTP2_NO_ERROR);
    await new Promise<void>((r) => (s.closed || s.destroyed ? r() : s.once("close", () => r())));
  });

  it("closing the listener ends its sessions and their streams", async () => {
    const l = await listen();
    const s = connect(l);
    const sub = subscribe(s);
    await sub.first;
    const call = calls.at(-1)!;
    await l.close();
    await sub.closed;
    expect(call.signal.aborted).toBe(true);
    expect(l.openConnections?.()).toBe(0);
  });

  it("HTTP/1.1 on the same port is unchanged", async () => {
    const l = await listen();
    const res = await fetch(`https://localhost:${l.port}/x`, { tls: { ...beta } } as RequestInit);
    expect(await res.text()).toBe("h1 beta");
  });
});

describe("sniffPreface (the plain listener's h2c check)", () => {
  const sniffed = (bytes: Buffer[]) =>
    new Promise<{ h2: boolean; rest: string }>((resolve, reject) => {
      const server = net.createServer((socket) =>
        sniffPreface(socket, 5_000, (h2) => {
          let rest = "";
          socket.on("data", (c) => (rest += c.toString("latin1")));
          socket.on("end", () => {
            resolve({ h2, rest });
            server.close();
          });
          socket.resume();
        }),
      );
      server.listen(0, "127.0.0.1", () => {
        const c = net.connect((server.address() as net.AddressInfo).port, "127.0.0.1", async () => {
          for (const b of bytes) {
            c.write(b);
            await new Promise((r) => setImmediate(r));
          }
          c.end();
        });
        c.on("error", reject);
      });
    });

  it("the preface, even split in pieces, is h2; the bytes are all handed on", async () => {
    const p = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\nmore";
    expect(await sniffed([Buffer.from(p.slice(0, 3)), Buffer.from(p.slice(3, 10)), Buffer.from(p.slice(10))])).toEqual({
      h2: true,
      rest: p,
    });
  });

  it("HTTP/1.1, and a request that starts like the preface and turns away, are not", async () => {
    expect(await sniffed([Buffer.from("GET / HTTP/1.1\r\n\r\n")])).toEqual({
      h2: false,
      rest: "GET / HTTP/1.1\r\n\r\n",
    });
    expect(await sniffed([Buffer.from("PRI * HTTP/1.1\r\n\r\n")])).toEqual({
      h2: false,
      rest: "PRI * HTTP/1.1\r\n\r\n",
    });
  });
});
