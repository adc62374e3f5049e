/**
 * serveHttp1, the small HTTP/1.1 loop used on the mTLS listener, driven over plain node:net sockets. Raw
 * clients write exact bytes (so the tests control framing) and parse the raw response bytes themselves;
 * Bun's fetch checks that a real client is happy with it too.
 */
import { afterEach, describe, expect, it, vi } from "vitest";
import { createServer, connect, type Server, type Socket, type AddressInfo } from "node:net";
import { once } from "node:events";
import {
  type Http1Connection,
  serveHttp1,
  type Http1Options,
  type HttpRequest,
  type HttpResponse,
} from "../../src/server/http1";
import { tooLargeResponse } from "../../src/server/request-router";

// ---------------------------------------------------------------------------------------------------------
// Server under test
// ---------------------------------------------------------------------------------------------------------

interface Echo {
  method: string;
  target: string;
  body: string;
  headers: Record<string, string>;
}

interface TestServer {
  port: number;
  url: string;
  /** Every request the handler was called with, in call order. */
  requests: HttpRequest[];
  /** Server-side sockets, one per accepted connection. */
  sockets: Socket[];
  /** Resolves once the handler has been called `n` times. */
  handled(n: number): Promise<void>;
  /** The serveHttp1 handle of a server-side socket. */
  connectionOf(socket: Socket): Http1Connection;
}

/** Echoes what the handler saw as JSON; `?delay=N` makes it take N ms, `/throw` and `/reject` make it fail. */
async function echoHandler(req: HttpRequest): Promise<HttpResponse> {
  const delay = /[?&]delay=(\d+)/.exec(req.target);
  if (delay) await new Promise((r) => setTimeout(r, Number(delay[1])));
  if (req.target.startsWith("/reject")) throw new Error("handler failed");
  const echo: Echo = {
    method: req.method,
    target: req.target,
    body: req.body.toString("utf8"),
    headers: Object.fromEntries(req.headers),
  };
  return { status: 200, headers: { "content-type": "application/json" }, body: JSON.stringify(echo) };
}

const servers: Server[] = [];
const clients: Socket[] = [];

afterEach(async () => {
  for (const c of clients.splice(0)) c.destroy();
  await Promise.all(
    servers.splice(0).map(
      (s) =>
        new Promise<void>((done) => {
          for (const sock of (s as Server & { __sockets: Socket[] }).__sockets) sock.destroy();
          s.close(() => done());
        }),
    ),
  );
});

async function startServer(overrides: Partial<Http1Options> = {}): Promise<TestServer> {
  const requests: HttpRequest[] = [];
  const sockets: Socket[] = [];
  const connections = new Map<Socket, Http1Connection>();
  const arrivals: { n: number; resolve(): void }[] = [];
  const handle = overrides.handle ?? echoHandler;
  const options: Http1Options = {
    maxBodyBytes: 1024,
    maxHeadBytes: 4096,
    idleTimeoutMs: 10_000,
    headTimeoutMs: 10_000,
    tooLarge: tooLargeResponse,
    ...overrides,
    handle: (req) => {
      requests.push(req);
      for (const a of arrivals.filter((a) => a.n <= requests.length)) a.resolve();
      return handle(req);
    },
  };
  const server = createServer((socket) => {
    sockets.push(socket);
    connections.set(socket, serveHttp1(socket, options));
  });
  (server as Server & { __sockets: Socket[] }).__sockets = sockets;
  servers.push(server);
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    url: `http://127.0.0.1:${port}`,
    requests,
    sockets,
    handled: (n) =>
      requests.length >= n ? Promise.resolve() : new Promise((resolve) => arrivals.push({ n, resolve })),
    connectionOf: (socket) => connections.get(socket) as Http1Connection,
  };
}

// ---------------------------------------------------------------------------------------------------------
// Raw client
// ---------------------------------------------------------------------------------------------------------

interface RawResponse {
  version: string;
  status: number;
  reason: string;
  /** Lower-cased names; a repeated header shows up as several entries in `rawHeaders`. */
  headers: Record<string, string>;
  rawHeaders: [string, string][];
  body: Buffer;
}

/** Parses one content-length framed response off the front of `buf`; undefined if it is not all there. */
function parseResponse(buf: Buffer, bodyless = false): { response: RawResponse; consumed: number } | undefined {
  const end = buf.indexOf("\r\n\r\n");
  if (end === -1) return undefined;
  const lines = buf.toString("latin1", 0, end).split("\r\n");
  const m = /^(HTTP\/1\.[01]) (\d{3}) (.*)$/.exec(lines[0]);
  if (!m) throw new Error(`bad status line: ${JSON.stringify(lines[0])}`);
  const rawHeaders: [string, string][] = [];
  const headers: Record<string, string> = {};
  for (const line of lines.slice(1)) {
    const colon = line.indexOf(":");
    if (colon <= 0) throw new Error(`bad response header line: ${JSON.stringify(line)}`);
    const name = line.slice(0, colon).trim().toLowerCase();
    const value = line.slice(colon + 1).trim();
    rawHeaders.push([name, value]);
    headers[name] = value;
  }
  const cl = headers["content-length"];
  if (cl === undefined || !/^\d+$/.test(cl))
    throw new Error(`response without a valid content-length: ${JSON.stringify(headers)}`);
  const len = bodyless ? 0 : Number(cl);
  if (buf.length < end + 4 + len) return undefined;
  const body = Buffer.from(buf.subarray(end + 4, end + 4 + len));
  return {
    response: { version: m[1], status: Number(m[2]), reason: m[3], headers, rawHeaders, body },
    consumed: end + 4 + len,
  };
}

class RawClient {
  private buf: Buffer = Buffer.alloc(0);
  private waiters: (() => void)[] = [];
  /** The server sent FIN (the socket's 'end' event). */
  ended = false;
  isClosed = false;
  readonly closed: Promise<void>;

  constructor(readonly socket: Socket) {
    socket.setNoDelay(true);
    socket.on("data", (chunk: Buffer) => {
      this.buf = Buffer.concat([this.buf, chunk]);
      this.wake();
    });
    socket.on("end", () => {
      this.ended = true;
      this.wake();
    });
    socket.on("error", () => {});
    this.closed = once(socket, "close").then(() => {
      this.isClosed = true;
      this.wake();
    });
  }

  private wake(): void {
    for (const w of this.waiters.splice(0)) w();
  }

  /** Writes bytes and waits until the socket has taken them. */
  async send(data: string | Buffer): Promise<void> {
    await new Promise<void>((resolve, reject) => this.socket.write(data, (err) => (err ? reject(err) : resolve())));
  }

  /** Writes every byte in its own write call. */
  async sendByteByByte(data: string | Buffer): Promise<void> {
    const bytes = typeof data === "string" ? Buffer.from(data) : data;
    for (let i = 0; i < bytes.length; i++) await this.send(bytes.subarray(i, i + 1));
  }

  /** The next whole response (`bodyless` for the answer to HEAD); throws if the connection ends first. */
  async response(bodyless = false): Promise<RawResponse> {
    for (;;) {
      const r = parseResponse(this.buf, bodyless);
      if (r) {
        this.buf = this.buf.subarray(r.consumed);
        return r.response;
      }
      if (this.ended || this.isClosed)
        throw new Error(
          `connection ended before a whole response arrived; had ${JSON.stringify(this.buf.toString("latin1"))}`,
        );
      await new Promise<void>((r) => this.waiters.push(r));
    }
  }

  /** The status line and headers of a streamed (chunked) response. */
  async streamHead(): Promise<{ status: number; headers: Record<string, string> }> {
    for (;;) {
      const end = this.buf.indexOf("\r\n\r\n");
      if (end !== -1) {
        const lines = this.buf.toString("latin1", 0, end).split("\r\n");
        this.buf = this.buf.subarray(end + 4);
        const headers: Record<string, string> = {};
        for (const line of lines.slice(1))
          headers[line.slice(0, line.indexOf(":")).toLowerCase()] = line.slice(line.indexOf(":") + 1).trim();
        return { status: Number(lines[0].split(" ")[1]), headers };
      }
      if (this.ended || this.isClosed) throw new Error("connection ended before a response head");
      await new Promise<void>((r) => this.waiters.push(r));
    }
  }

  /** The next chunk of a chunked body (its exact bytes), or null for the last chunk. */
  async chunk(): Promise<Buffer | null> {
    for (;;) {
      const eol = this.buf.indexOf("\r\n");
      if (eol !== -1) {
        const sizeLine = this.buf.toString("latin1", 0, eol);
        expect(sizeLine).toMatch(/^[0-9a-f]+$/);
        const n = Number.parseInt(sizeLine, 16);
        const need = eol + 2 + n + 2;
        if (this.buf.length >= need) {
          expect(this.buf.toString("latin1", need - 2, need)).toBe("\r\n");
          const data = Buffer.from(this.buf.subarray(eol + 2, eol + 2 + n));
          this.buf = this.buf.subarray(need);
          return n === 0 ? null : data;
        }
      }
      if (this.ended || this.isClosed)
        throw new Error(`connection ended inside a chunked body; had ${JSON.stringify(this.buf.toString("latin1"))}`);
      await new Promise<void>((r) => this.waiters.push(r));
    }
  }

  /** Waits for the connection to close; returns whatever arrived and was not read as a response. */
  async untilClosed(): Promise<Buffer> {
    await this.closed;
    return this.buf;
  }
}

async function client(port: number): Promise<RawClient> {
  const socket = connect(port, "127.0.0.1");
  clients.push(socket);
  const c = new RawClient(socket);
  await once(socket, "connect");
  return c;
}

/** Resolves when a socket has closed (an 'error' such as ECONNRESET on the way is not a rejection). */
const closeOf = (socket: Socket) =>
  new Promise<void>((r) => (socket.destroyed ? r() : socket.once("close", () => r())));

const echoOf = (r: RawResponse): Echo => JSON.parse(r.body.toString("utf8"));

function get(target: string, extra = ""): string {
  return `GET ${target} HTTP/1.1\r\nHost: test\r\n${extra}\r\n`;
}

function post(target: string, body: string | Buffer, extra = ""): Buffer {
  const bytes = typeof body === "string" ? Buffer.from(body, "utf8") : body;
  return Buffer.concat([
    Buffer.from(`POST ${target} HTTP/1.1\r\nHost: test\r\nContent-Length: ${bytes.length}\r\n${extra}\r\n`, "latin1"),
    bytes,
  ]);
}

function chunkedPost(target: string, chunkedBody: string, extra = ""): string {
  return `POST ${target} HTTP/1.1\r\nHost: test\r\nTransfer-Encoding: chunked\r\n${extra}\r\n${chunkedBody}`;
}

/** A well-formed response: 200, content-length equal to the body's byte length, header framing intact. */
function expectOk(r: RawResponse): Echo {
  expect(r.version).toBe("HTTP/1.1");
  expect(r.status).toBe(200);
  expect(r.reason).toBe("OK");
  expect(r.headers["content-type"]).toBe("application/json");
  expect(Number(r.headers["content-length"])).toBe(r.body.length);
  expect(r.rawHeaders.filter(([k]) => k === "content-length")).toHaveLength(1);
  return echoOf(r);
}

/** The server answered with `status`, said it closes, and closed (it sent FIN, nothing else followed). */
async function expectRefusedAndClosed(c: RawClient, status: number, bodyFragment?: string): Promise<RawResponse> {
  const r = await c.response();
  expect(r.status).toBe(status);
  expect(r.headers.connection).toBe("close");
  expect(Number(r.headers["content-length"])).toBe(r.body.length);
  if (bodyFragment !== undefined) expect(r.body.toString("utf8")).toContain(bodyFragment);
  const rest = await c.untilClosed();
  expect(c.ended).toBe(true);
  expect(rest.length).toBe(0);
  return r;
}

// ---------------------------------------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------------------------------------

describe("serveHttp1: basic requests", () => {
  it("answers a GET: status line, content-length, and the handler sees method, target with query, lower-cased headers", async () => {
    const s = await startServer();
    const c = await client(s.port);
    await c.send(
      "GET /hello/world?x=1&y=%20z HTTP/1.1\r\nHost: example.test\r\nX-Mixed-CASE: Some Value \r\nA2A-Version: 1.0\r\n\r\n",
    );
    const r = await c.response();
    const echo = expectOk(r);
    expect(r.headers.connection).toBeUndefined();
    expect(echo).toEqual({
      method: "GET",
      target: "/hello/world?x=1&y=%20z",
      body: "",
      headers: { host: "example.test", "x-mixed-case": "Some Value", "a2a-version": "1.0" },
    });
    expect(s.requests).toHaveLength(1);
    expect([...s.requests[0].headers.keys()]).toEqual(["host", "x-mixed-case", "a2a-version"]);
    expect(s.requests[0].body.length).toBe(0);
  });

  it("answers a POST with Content-Length; multi-byte UTF-8 bytes arrive exactly and the response length counts bytes", async () => {
    const s = await startServer();
    const c = await client(s.port);
    const text = "héllo wörld — 日本語 🎉";
    const bytes = Buffer.from(text, "utf8");
    expect(bytes.length).toBeGreaterThan(text.length);
    await c.send(post("/submit?id=7", bytes, "Content-Type: text/plain; charset=utf-8\r\n"));
    const r = await c.response();
    const echo = expectOk(r);
    expect(echo.method).toBe("POST");
    expect(echo.target).toBe("/submit?id=7");
    expect(echo.body).toBe(text);
    expect(echo.headers["content-length"]).toBe(String(bytes.length));
    expect(echo.headers["content-type"]).toBe("text/plain; charset=utf-8");
    expect(s.requests[0].body.equals(bytes)).toBe(true);
    // The echoed body holds multi-byte characters: content-length must be its byte length, not its char count.
    expect(Number(r.headers["content-length"])).toBe(Buffer.byteLength(r.body.toString("utf8")));
  });

  it("passes binary bodies through byte for byte, even when they contain CRLFCRLF", async () => {
    const s = await startServer();
    const c = await client(s.port);
    const bytes = Buffer.from([0x00, 0xff, 0x0d, 0x0a, 0x0d, 0x0a, 0x80, 0x47, 0x45, 0x54, 0x20, 0xc3]);
    await c.send(post("/bin", bytes));
    expectOk(await c.response());
    expect(s.requests[0].body.equals(bytes)).toBe(true);
    // The next request on the connection is still framed correctly.
    await c.send(get("/after"));
    expect(expectOk(await c.response()).target).toBe("/after");
  });

  it("repeated request headers are joined with ', '", async () => {
    const s = await startServer();
    const c = await client(s.port);
    await c.send(get("/", "Accept: a/b\r\nAccept: c/d\r\n"));
    expect(expectOk(await c.response()).headers.accept).toBe("a/b, c/d");
  });

  it("computes content-length itself (a handler's own content-length is dropped) and sends Uint8Array bodies", async () => {
    const payload = new Uint8Array([1, 2, 3, 4, 5]);
    const s = await startServer({
      handle: async () => ({ status: 404, headers: { "content-length": "999", "x-extra": "yes" }, body: payload }),
    });
    const c = await client(s.port);
    await c.send(get("/missing"));
    const r = await c.response();
    expect(r.status).toBe(404);
    expect(r.reason).toBe("Not Found");
    expect(r.rawHeaders.filter(([k]) => k === "content-length")).toEqual([["content-length", "5"]]);
    expect(r.headers["x-extra"]).toBe("yes");
    expect([...r.body]).toEqual([1, 2, 3, 4, 5]);
  });

  it("sends an empty body with content-length: 0 and keeps the connection", async () => {
    const s = await startServer({ handle: async () => ({ status: 200, body: "" }) });
    const c = await client(s.port);
    await c.send(get("/a"));
    const r = await c.response();
    expect(r.status).toBe(200);
    expect(r.headers["content-length"]).toBe("0");
    expect(r.body.length).toBe(0);
    await c.send(get("/b"));
    expect((await c.response()).status).toBe(200);
    expect(s.requests.map((q) => q.target)).toEqual(["/a", "/b"]);
  });
});

describe("serveHttp1: keep-alive and pipelining", () => {
  it("serves two requests one after the other on one connection", async () => {
    const s = await startServer();
    const c = await client(s.port);
    await c.send(get("/first"));
    const r1 = await c.response();
    expect(expectOk(r1).target).toBe("/first");
    expect(r1.headers.connection).toBeUndefined();
    await c.send(post("/second", '{"a":1}', "Content-Type: application/json\r\n"));
    const e2 = expectOk(await c.response());
    expect(e2.target).toBe("/second");
    expect(e2.body).toBe('{"a":1}');
    expect(s.sockets).toHaveLength(1);
    expect(c.ended).toBe(false);
  });

  it("answers two requests written in one write, in order", async () => {
    const s = await startServer();
    const c = await client(s.port);
    await c.send(Buffer.concat([Buffer.from(get("/one")), post("/two", "body two")]));
    const e1 = expectOk(await c.response());
    const e2 = expectOk(await c.response());
    expect([e1.target, e2.target]).toEqual(["/one", "/two"]);
    expect(e2.body).toBe("body two");
    expect(s.sockets).toHaveLength(1);
  });

  it("answers three pipelined requests in order even when the first handler is the slowest", async () => {
    const s = await startServer();
    const c = await client(s.port);
    await c.send(
      Buffer.concat([
        post("/a?delay=30", "AAA"),
        Buffer.from(chunkedPost("/b?delay=5", "3\r\nBBB\r\n0\r\n\r\n")),
        Buffer.from(get("/c")),
      ]),
    );
    const echoes = [expectOk(await c.response()), expectOk(await c.response()), expectOk(await c.response())];
    expect(echoes.map((e) => [e.method, e.target, e.body])).toEqual([
      ["POST", "/a?delay=30", "AAA"],
      ["POST", "/b?delay=5", "BBB"],
      ["GET", "/c", ""],
    ]);
    // One at a time, in order.
    expect(s.requests.map((q) => q.target)).toEqual(["/a?delay=30", "/b?delay=5", "/c"]);
    expect(s.sockets).toHaveLength(1);
  });

  it("a pipelined request that arrives while the handler is busy is served after it", async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let entered!: () => void;
    const inHandler = new Promise<void>((r) => (entered = r));
    const s = await startServer({
      handle: async (req) => {
        if (req.target === "/held") {
          entered();
          await gate;
        }
        return echoHandler(req);
      },
    });
    const c = await client(s.port);
    await c.send(get("/held"));
    await inHandler;
    await c.send(get("/next"));
    expect(s.requests).toHaveLength(1); // the second waits for the first
    release();
    expect(expectOk(await c.response()).target).toBe("/held");
    expect(expectOk(await c.response()).target).toBe("/next");
  });
});

describe("serveHttp1: framing across writes", () => {
  it("assembles a POST written one byte per write", async () => {
    const s = await startServer();
    const c = await client(s.port);
    const body = "ünïcødé body ✓";
    await c.sendByteByByte(post("/slow-post?x=y", body, "X-Test: 1\r\n"));
    const e = expectOk(await c.response());
    expect(e).toMatchObject({ method: "POST", target: "/slow-post?x=y", body, headers: { "x-test": "1" } });
    expect(s.requests[0].body.equals(Buffer.from(body))).toBe(true);
  });

  it("assembles a chunked POST followed by a GET, written one byte per write", async () => {
    const s = await startServer();
    const c = await client(s.port);
    await c.sendByteByByte(
      chunkedPost("/chunked", "4\r\nWiki\r\n5;ext=1\r\npedia\r\n0\r\nX-T: 1\r\n\r\n") + get("/tail"),
    );
    expect(expectOk(await c.response()).body).toBe("Wikipedia");
    expect(expectOk(await c.response()).target).toBe("/tail");
    expect(s.requests.map((q) => q.target)).toEqual(["/chunked", "/tail"]);
  });

  it("assembles a request split at every awkward boundary (inside CRLFCRLF, inside the body)", async () => {
    const s = await startServer();
    const c = await client(s.port);
    const req = post("/split", "0123456789");
    const headEnd = req.indexOf("\r\n\r\n");
    for (const [from, to] of [
      [0, headEnd + 1],
      [headEnd + 1, headEnd + 3],
      [headEnd + 3, headEnd + 7],
      [headEnd + 7, req.length],
    ]) {
      await c.send(req.subarray(from, to));
    }
    expect(expectOk(await c.response()).body).toBe("0123456789");
  });
});

describe("serveHttp1: chunked request bodies", () => {
  it("decodes several chunks (hex sizes in either case) into the body", async () => {
    const s = await startServer();
    const c = await client(s.port);
    const part = "x".repeat(26);
    await c.send(chunkedPost("/c", `5\r\nhello\r\n1A\r\n${part}\r\n1a\r\n${part}\r\n1\r\n!\r\n0\r\n\r\n`));
    const e = expectOk(await c.response());
    expect(e.body).toBe(`hello${part}${part}!`);
    expect(e.headers["transfer-encoding"]).toBe("chunked");
  });

  it("ignores chunk extensions", async () => {
    const s = await startServer();
    const c = await client(s.port);
    await c.send(chunkedPost("/c", `3;x=y\r\nabc\r\n4;name="quoted";flag\r\ndefg\r\n0;last=1\r\n\r\n`));
    expect(expectOk(await c.response()).body).toBe("abcdefg");
  });

  it("skips trailers and the next request on the connection is framed correctly", async () => {
    const s = await startServer();
    const c = await client(s.port);
    await c.send(
      chunkedPost("/t", "6\r\nwith t\r\n0\r\nX-Checksum: abc\r\nX-Other: 2\r\n\r\n") + get("/after-trailers"),
    );
    const e1 = expectOk(await c.response());
    expect(e1.body).toBe("with t");
    expect(e1.headers["x-checksum"]).toBeUndefined(); // trailers are not merged into headers
    expect(expectOk(await c.response()).target).toBe("/after-trailers");
  });

  it("reassembles multi-byte UTF-8 split across chunk boundaries", async () => {
    const s = await startServer();
    const c = await client(s.port);
    const bytes = Buffer.from("€🎉日本", "utf8"); // 3 + 4 + 3 + 3 bytes
    const pieces = [bytes.subarray(0, 2), bytes.subarray(2, 5), bytes.subarray(5, bytes.length)];
    const body = Buffer.concat([
      ...pieces.flatMap((p) => [Buffer.from(`${p.length.toString(16)}\r\n`), p, Buffer.from("\r\n")]),
      Buffer.from("0\r\n\r\n"),
    ]);
    await c.send(Buffer.concat([Buffer.from(chunkedPost("/u", "")), body]));
    expect(expectOk(await c.response()).body).toBe("€🎉日本");
    expect(s.requests[0].body.equals(bytes)).toBe(true);
  });

  it("accepts an empty chunked body and a case-insensitive Transfer-Encoding value", async () => {
    const s = await startServer();
    const c = await client(s.port);
    await c.send(`POST /e HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: Chunked\r\n\r\n0\r\n\r\n`);
    expect(expectOk(await c.response()).body).toBe("");
  });

  it("answers 400 to a bad chunk size and closes", async () => {
    const s = await startServer();
    const c = await client(s.port);
    await c.send(chunkedPost("/bad", "zz\r\nhello\r\n0\r\n\r\n"));
    await expectRefusedAndClosed(c, 400, "bad chunk size");
    expect(s.requests).toHaveLength(0);
  });
});

describe("serveHttp1: closing the connection", () => {
  it("Connection: close gets `connection: close` and the server ends the socket; nothing after it is served", async () => {
    const s = await startServer();
    const c = await client(s.port);
    await c.send(get("/bye", "Connection: close\r\n") + get("/never"));
    const r = await c.response();
    expect(expectOk(r).target).toBe("/bye");
    expect(r.headers.connection).toBe("close");
    expect((await c.untilClosed()).length).toBe(0);
    expect(c.ended).toBe(true);
    expect(s.requests.map((q) => q.target)).toEqual(["/bye"]);
  });

  it("Connection: close is matched case-insensitively and among other tokens", async () => {
    const s = await startServer();
    const c = await client(s.port);
    await c.send(get("/bye", "Connection: TE, Close\r\n"));
    expect((await c.response()).headers.connection).toBe("close");
    await c.untilClosed();
    expect(c.ended).toBe(true);
  });

  it("HTTP/1.0 without keep-alive is answered and closed", async () => {
    const s = await startServer();
    const c = await client(s.port);
    await c.send("GET /old HTTP/1.0\r\nHost: test\r\n\r\n");
    const r = await c.response();
    expect(expectOk(r).target).toBe("/old");
    expect(r.headers.connection).toBe("close");
    await c.untilClosed();
    expect(c.ended).toBe(true);
  });

  it("HTTP/1.0 with Connection: keep-alive keeps the connection", async () => {
    const s = await startServer();
    const c = await client(s.port);
    await c.send("GET /old1 HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
    const r1 = await c.response();
    expect(expectOk(r1).target).toBe("/old1");
    expect(r1.headers.connection).toBeUndefined();
    await c.send("GET /old2 HTTP/1.0\r\n\r\n");
    const r2 = await c.response();
    expect(expectOk(r2).target).toBe("/old2");
    expect(r2.headers.connection).toBe("close");
    await c.untilClosed();
    expect(s.sockets).toHaveLength(1);
  });
});

describe("serveHttp1: bodies over maxBodyBytes", () => {
  const LIMIT = 64;

  it("accepts a Content-Length body exactly at the limit", async () => {
    const s = await startServer({ maxBodyBytes: LIMIT });
    const c = await client(s.port);
    await c.send(post("/", "a".repeat(LIMIT)));
    expect(expectOk(await c.response()).body).toBe("a".repeat(LIMIT));
  });

  it("answers the tooLarge response (413 + JSON-RPC error) to a declared Content-Length over the limit, then closes", async () => {
    const s = await startServer({ maxBodyBytes: LIMIT });
    const c = await client(s.port);
    // Only the head and part of the body: the answer must not wait for the rest.
    await c.send(
      `POST / HTTP/1.1\r\nHost: test\r\nContent-Type: application/json\r\nContent-Length: ${LIMIT + 1}\r\n\r\n{"jsonrpc":`,
    );
    const r = await expectRefusedAndClosed(c, 413);
    const expected = tooLargeResponse(LIMIT, LIMIT + 1);
    expect(r.reason).toBe("Content Too Large");
    expect(r.headers["content-type"]).toBe("application/json");
    expect(r.body.toString("utf8")).toBe(expected.body);
    const json = JSON.parse(r.body.toString("utf8"));
    expect(json).toMatchObject({ jsonrpc: "2.0", id: null, error: { code: -32600 } });
    expect(json.error.message).toContain(
      `request body of ${LIMIT + 1} bytes exceeds this node's limit of ${LIMIT} bytes`,
    );
    expect(s.requests).toHaveLength(0);
  });

  it("passes the limit and the declared length to tooLarge", async () => {
    const calls: [number, number | undefined][] = [];
    const s = await startServer({
      maxBodyBytes: LIMIT,
      tooLarge: (limit, declared) => {
        calls.push([limit, declared]);
        return { status: 413, headers: { "content-type": "text/plain" }, body: "too big, sorry" };
      },
    });
    const c = await client(s.port);
    await c.send(`POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 100000\r\n\r\n`);
    const r = await expectRefusedAndClosed(c, 413);
    expect(r.body.toString()).toBe("too big, sorry");
    expect(calls).toEqual([[LIMIT, 100000]]);
  });

  it("answers 413 once a chunked body grows over the limit, then closes", async () => {
    const s = await startServer({ maxBodyBytes: LIMIT });
    const c = await client(s.port);
    const chunk = "b".repeat(40);
    // 40 + 40 > 64: the second chunk's size line is enough to refuse, before its data or the last chunk arrive.
    await c.send(chunkedPost("/", `28\r\n${chunk}\r\n28\r\n`, "Content-Type: application/json\r\n"));
    const r = await expectRefusedAndClosed(c, 413);
    expect(r.body.toString("utf8")).toBe(tooLargeResponse(LIMIT, undefined).body);
    expect(JSON.parse(r.body.toString("utf8")).error.message).toContain(
      `request body exceeds this node's limit of ${LIMIT} bytes`,
    );
    expect(s.requests).toHaveLength(0);
  });

  it("answers 413 to a chunked body whose data is sent in full, chunk by chunk", async () => {
    const s = await startServer({ maxBodyBytes: LIMIT });
    const c = await client(s.port);
    await c.send(chunkedPost("/", ""));
    await c.send(`20\r\n${"c".repeat(32)}\r\n`);
    await c.send(`20\r\n${"c".repeat(32)}\r\n`); // exactly 64 so far: still fine
    await c.send(`1\r\nc\r\n0\r\n\r\n`); // 65
    await expectRefusedAndClosed(c, 413, "exceeds this node's limit of 64 bytes");
    expect(s.requests).toHaveLength(0);
  });

  it("accepts a chunked body exactly at the limit", async () => {
    const s = await startServer({ maxBodyBytes: LIMIT });
    const c = await client(s.port);
    await c.send(chunkedPost("/", `20\r\n${"d".repeat(32)}\r\n20\r\n${"d".repeat(32)}\r\n0\r\n\r\n`));
    expect(expectOk(await c.response()).body).toBe("d".repeat(64));
  });

  it("the 413 is received whole even though the client keeps sending the rest of the body", async () => {
    const s = await startServer({ maxBodyBytes: LIMIT });
    const c = await client(s.port);
    await c.send(`POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 10000\r\n\r\n`);
    const r = await c.response();
    expect(r.status).toBe(413);
    // The client writes more body after the answer; the server's socket must not reset the answer away.
    c.socket.write("x".repeat(5000));
    await c.untilClosed();
    expect(c.ended).toBe(true);
    expect(r.headers.connection).toBe("close");
  });
});

describe("serveHttp1: malformed requests", () => {
  const cases: [string, string, number, string][] = [
    ["a request line without a target and version", "GARBAGE\r\nHost: x\r\n\r\n", 400, "malformed request line"],
    ["a request line without a version", "GET /\r\nHost: x\r\n\r\n", 400, "malformed request line"],
    ["a request line with a non-HTTP/1 version", "GET / HTTP/2.0\r\nHost: x\r\n\r\n", 505, "HTTP/2.0 is not supported"],
    ["a request line that is not HTTP at all", "SSH-2.0-OpenSSH_9.6\r\n\r\n", 400, "malformed request line"],
    ["a header line without a colon", "GET / HTTP/1.1\r\nHost: t\r\nHost x\r\n\r\n", 400, "malformed header line"],
    ["a header line with an empty name", "GET / HTTP/1.1\r\nHost: t\r\n: value\r\n\r\n", 400, "malformed header line"],
    ["Content-Length: abc", "POST / HTTP/1.1\r\nHost: t\r\nContent-Length: abc\r\n\r\nabc", 400, "bad content-length"],
    ["Content-Length: -1", "POST / HTTP/1.1\r\nHost: t\r\nContent-Length: -1\r\n\r\n", 400, "bad content-length"],
    ["Content-Length: 1.5", "POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 1.5\r\n\r\nab", 400, "bad content-length"],
    [
      "two different Content-Lengths",
      "POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab",
      400,
      "bad content-length",
    ],
    [
      "Transfer-Encoding: gzip",
      "POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: gzip\r\n\r\nxx",
      501,
      "transfer-encoding gzip is not supported",
    ],
    [
      "Transfer-Encoding: gzip, chunked",
      "POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n",
      501,
      "not supported",
    ],
  ];

  for (const [what, bytes, status, message] of cases) {
    it(`answers ${status} to ${what} and closes`, async () => {
      const s = await startServer();
      const c = await client(s.port);
      await c.send(bytes);
      const r = await expectRefusedAndClosed(c, status, message);
      expect(r.headers["content-type"]).toBe("text/plain");
      expect(s.requests).toHaveLength(0);
    });
  }

  it("answers 431 to a head larger than maxHeadBytes that has no CRLFCRLF yet", async () => {
    const s = await startServer({ maxHeadBytes: 256 });
    const c = await client(s.port);
    await c.send(`GET / HTTP/1.1\r\nHost: t\r\nX-Big: ${"h".repeat(400)}`);
    const r = await expectRefusedAndClosed(c, 431, "request head too large");
    expect(r.reason).toBe("Request Header Fields Too Large");
    expect(s.requests).toHaveLength(0);
  });

  it("answers 431 to a whole head larger than maxHeadBytes", async () => {
    const s = await startServer({ maxHeadBytes: 256 });
    const c = await client(s.port);
    await c.send(get("/", `X-Big: ${"h".repeat(400)}\r\n`));
    await expectRefusedAndClosed(c, 431, "request head too large");
  });

  it("answers 431 to a big head trickled in small writes", async () => {
    const s = await startServer({ maxHeadBytes: 256 });
    const c = await client(s.port);
    await c.send("GET / HTTP/1.1\r\n");
    let refused = false;
    c.socket.once("data", () => (refused = true));
    for (let i = 0; i < 100 && !refused && !c.isClosed; i++) await c.send(`X-H${i}: value\r\n`).catch(() => {});
    await expectRefusedAndClosed(c, 431);
  });

  for (const value of ["0x5", "1e1", "+5", ""]) {
    it(`answers 400 to Content-Length: ${JSON.stringify(value)}`, async () => {
      const s = await startServer();
      const c = await client(s.port);
      await c.send(`POST / HTTP/1.1\r\nHost: t\r\nContent-Length: ${value}\r\n\r\nhelloworld`);
      await expectRefusedAndClosed(c, 400, "bad content-length");
    });
  }

  it("a malformed request after a good one on the same connection: the good one is answered, then 400", async () => {
    const s = await startServer();
    const c = await client(s.port);
    await c.send(get("/good") + "NONSENSE\r\n\r\n");
    expect(expectOk(await c.response()).target).toBe("/good");
    await expectRefusedAndClosed(c, 400, "malformed request line");
    expect(s.requests.map((q) => q.target)).toEqual(["/good"]);
  });
});

describe("serveHttp1: HEAD", () => {
  it("answers HEAD without body bytes, so the next response on the connection parses", async () => {
    const s = await startServer();
    const c = await client(s.port);
    await c.send(`HEAD /a HTTP/1.1\r\nHost: t\r\n\r\n` + get("/b"));
    const r1 = await c.response(true);
    expect(r1.status).toBe(200);
    expect(expectOk(await c.response()).target).toBe("/b");
  });
});

describe("serveHttp1: handler failures", () => {
  it("a handler that throws synchronously gets 500, and the connection serves the next request", async () => {
    const s = await startServer({
      handle: (req) => {
        if (req.target === "/throw") throw new Error("boom");
        return echoHandler(req);
      },
    });
    const c = await client(s.port);
    await c.send(get("/throw"));
    const r = await c.response();
    expect(r.status).toBe(500);
    expect(r.reason).toBe("Internal Server Error");
    expect(r.body.toString()).toBe("internal error\n");
    expect(r.headers.connection).toBeUndefined();
    await c.send(get("/after"));
    expect(expectOk(await c.response()).target).toBe("/after");
    expect(s.sockets).toHaveLength(1);
  });

  it("a handler whose promise rejects gets 500 (no details leaked), also in the middle of a pipeline", async () => {
    const s = await startServer();
    const c = await client(s.port);
    await c.send(get("/first") + get("/reject") + get("/third"));
    expect(expectOk(await c.response()).target).toBe("/first");
    const r = await c.response();
    expect(r.status).toBe(500);
    expect(r.body.toString()).not.toContain("handler failed");
    expect(expectOk(await c.response()).target).toBe("/third");
  });
});

describe("serveHttp1: timeouts", () => {
  it("headTimeoutMs: a partial head that stalls gets 408 and the socket closes", async () => {
    const s = await startServer({ headTimeoutMs: 50, idleTimeoutMs: 10_000 });
    const c = await client(s.port);
    await c.send("GET /slowloris HTTP/1.1\r\nHost: x\r\nX-Partial: ");
    const r = await expectRefusedAndClosed(c, 408, "took too long");
    expect(r.reason).toBe("Request Timeout");
    expect(s.requests).toHaveLength(0);
  });

  it("headTimeoutMs: a stalled head after an answered request on the same connection also gets 408", async () => {
    const s = await startServer({ headTimeoutMs: 50, idleTimeoutMs: 10_000 });
    const c = await client(s.port);
    await c.send(get("/ok") + "GET /stall HTTP/1.1\r\n");
    expect(expectOk(await c.response()).target).toBe("/ok");
    await expectRefusedAndClosed(c, 408);
    expect(s.requests.map((q) => q.target)).toEqual(["/ok"]);
  });

  it("headTimeoutMs: a body that stalls after a whole head is timed out too (408)", async () => {
    const s = await startServer({ headTimeoutMs: 50, idleTimeoutMs: 10_000 });
    const c = await client(s.port);
    await c.send("POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n\r\nabc");
    await expectRefusedAndClosed(c, 408);
    expect(s.requests).toHaveLength(0);
  });

  it("idleTimeoutMs: an idle connection after a request is closed by the server", async () => {
    const s = await startServer({ idleTimeoutMs: 50, headTimeoutMs: 10_000 });
    const c = await client(s.port);
    await c.send(get("/once"));
    expect(expectOk(await c.response()).target).toBe("/once");
    const rest = await c.untilClosed();
    expect(rest.length).toBe(0);
    expect(c.ended).toBe(true);
    expect(s.requests).toHaveLength(1);
  });

  it("idleTimeoutMs: a connection that never sends anything is closed by the server", async () => {
    const s = await startServer({ idleTimeoutMs: 50, headTimeoutMs: 10_000 });
    const c = await client(s.port);
    const rest = await c.untilClosed();
    expect(rest.length).toBe(0);
    expect(s.requests).toHaveLength(0);
  });

  it("idleTimeoutMs does not cut off a request whose handler takes longer than the idle timeout", async () => {
    const s = await startServer({ idleTimeoutMs: 50, headTimeoutMs: 10_000 });
    const c = await client(s.port);
    await c.send(get("/long?delay=300"));
    expect(expectOk(await c.response()).target).toBe("/long?delay=300");
  });
});

describe("serveHttp1: streamed responses", () => {
  /** A source that yields `items`, then waits for `gate` (if any) before yielding `after`. */
  function source(items: string[], gate?: Promise<void>, after: string[] = []) {
    const state = { stopped: false };
    async function* gen() {
      try {
        for (const i of items) yield i;
        if (gate) await gate;
        for (const i of after) yield i;
      } finally {
        state.stopped = true;
      }
    }
    return { state, stream: gen() };
  }

  it("writes each item as one chunk (byte-counted sizes), ends with the last chunk, and keeps the connection", async () => {
    const s = await startServer({
      handle: async (req) =>
        req.target === "/events"
          ? {
              status: 200,
              headers: { "content-type": "text/event-stream", "content-length": "5" },
              stream: source(["data: a\n\n", "data: é🎉\n\n", "id: 3\ndata: {}\n\n"]).stream,
            }
          : echoHandler(req),
    });
    const c = await client(s.port);
    await c.send(get("/events") + get("/after"));
    const head = await c.streamHead();
    expect(head.status).toBe(200);
    expect(head.headers["transfer-encoding"]).toBe("chunked");
    expect(head.headers["content-type"]).toBe("text/event-stream");
    expect(head.headers["content-length"]).toBeUndefined(); // never both framings
    expect(head.headers.connection).toBeUndefined();
    const chunks: string[] = [];
    for (let ch = await c.chunk(); ch !== null; ch = await c.chunk()) chunks.push(ch.toString("utf8"));
    expect(chunks).toEqual(["data: a\n\n", "data: é🎉\n\n", "id: 3\ndata: {}\n\n"]);
    // The pipelined request behind the stream is answered after it.
    expect(expectOk(await c.response()).target).toBe("/after");
  });

  it("a stream answering `Connection: close` says so and closes after the last chunk", async () => {
    const s = await startServer({
      handle: async () => ({
        status: 200,
        headers: { "content-type": "text/event-stream" },
        stream: source(["data: only\n\n"]).stream,
      }),
    });
    const c = await client(s.port);
    await c.send(get("/events", "Connection: close\r\n"));
    const head = await c.streamHead();
    expect(head.headers.connection).toBe("close");
    expect((await c.chunk())?.toString()).toBe("data: only\n\n");
    expect(await c.chunk()).toBeNull();
    expect((await c.untilClosed()).length).toBe(0);
    expect(c.ended).toBe(true);
  });

  it("sends a keep-alive comment chunk while the source is quiet", async () => {
    let open!: () => void;
    const gate = new Promise<void>((r) => (open = r));
    const src = source(["data: first\n\n"], gate, ["data: last\n\n"]);
    const s = await startServer({
      streamKeepAliveMs: 20,
      handle: async () => ({ status: 200, headers: { "content-type": "text/event-stream" }, stream: src.stream }),
    });
    const c = await client(s.port);
    await c.send(get("/events"));
    await c.streamHead();
    expect((await c.chunk())?.toString()).toBe("data: first\n\n");
    const beat = (await c.chunk())?.toString();
    expect(beat).toBe(": keep-alive\n\n");
    open();
    // More heartbeats may have been queued before the gate opened; then the last event and the end.
    let next = (await c.chunk())?.toString();
    while (next === ": keep-alive\n\n") next = (await c.chunk())?.toString();
    expect(next).toBe("data: last\n\n");
    expect(await c.chunk()).toBeNull();
    expect(src.state.stopped).toBe(true);
  });

  it("stops the source when the client goes away", async () => {
    let returned = false;
    let pending: ((r: IteratorResult<string>) => void) | undefined;
    let served!: () => void;
    const firstServed = new Promise<void>((r) => (served = r));
    let n = 0;
    // Shaped like src/tasks/event-stream.ts: return() settles a pending next() with done.
    const stream: AsyncIterable<string> = {
      [Symbol.asyncIterator]: () => ({
        next: () => {
          if (n++ === 0) return Promise.resolve({ value: "data: one\n\n", done: false });
          served();
          return new Promise((r) => (pending = r));
        },
        return: () => {
          returned = true;
          pending?.({ value: undefined, done: true });
          return Promise.resolve({ value: undefined, done: true });
        },
      }),
    };
    const s = await startServer({ handle: async () => ({ status: 200, stream }) });
    const c = await client(s.port);
    await c.send(get("/events"));
    await c.streamHead();
    expect((await c.chunk())?.toString()).toBe("data: one\n\n");
    await firstServed;
    c.socket.destroy();
    await closeOf(s.sockets[0]);
    expect(returned).toBe(true);
  });

  /** The handle of the heartbeat interval writeStream started (the default period is 15 s). */
  const heartbeat = (spy: { mock: { calls: unknown[][]; results: { value: unknown }[] } }) => {
    const i = spy.mock.calls.findLastIndex((args) => args[1] === 15_000);
    expect(i).toBeGreaterThanOrEqual(0);
    return spy.mock.results[i].value;
  };

  /** Resolves after a few event-loop turns (no clock involved). */
  const turns = async (k = 5) => {
    for (let i = 0; i < k; i++) await new Promise((r) => setImmediate(r));
  };

  it("finishes a stream (clears its heartbeat) when a slow reader goes away during backpressure", async () => {
    const setSpy = vi.spyOn(globalThis, "setInterval");
    const clearSpy = vi.spyOn(globalThis, "clearInterval");
    try {
      const big = "x".repeat(32 * 1024 * 1024); // far more than socket buffers hold for a client that reads nothing
      const s = await startServer({
        handle: async () => ({ status: 200, stream: source([big, "data: never\n\n"]).stream }),
      });
      const c = await client(s.port);
      await c.send(get("/events"));
      await c.streamHead();
      c.socket.pause();
      const beat = heartbeat(setSpy);
      expect(beat).toBeDefined();
      c.socket.destroy();
      await closeOf(s.sockets[0]);
      await turns();
      expect(clearSpy.mock.calls.some(([h]) => h === beat)).toBe(true);
    } finally {
      setSpy.mockRestore();
      clearSpy.mockRestore();
    }
  });

  it("finishes a stream (clears its heartbeat) when the client leaves while the source is quiet", async () => {
    const setSpy = vi.spyOn(globalThis, "setInterval");
    const clearSpy = vi.spyOn(globalThis, "clearInterval");
    try {
      let open!: () => void;
      const gate = new Promise<void>((r) => (open = r));
      const src = source(["data: first\n\n"], gate, ["data: later\n\n"]);
      const s = await startServer({ handle: async () => ({ status: 200, stream: src.stream }) });
      const c = await client(s.port);
      await c.send(get("/events"));
      await c.streamHead();
      expect((await c.chunk())?.toString()).toBe("data: first\n\n");
      const beat = heartbeat(setSpy);
      c.socket.destroy();
      await closeOf(s.sockets[0]);
      await turns();
      const cleared = clearSpy.mock.calls.some(([h]) => h === beat);
      open(); // let the generator finish either way
      expect(cleared).toBe(true);
    } finally {
      setSpy.mockRestore();
      clearSpy.mockRestore();
    }
  });
});

describe("serveHttp1: with Bun's fetch", () => {
  it("serves GET and JSON POSTs over one keep-alive connection", async () => {
    const s = await startServer({ maxBodyBytes: 256 * 1024 });
    const r1 = await fetch(`${s.url}/card?x=1`, { headers: { "A2A-Version": "1.0" } });
    expect(r1.status).toBe(200);
    expect(r1.headers.get("content-type")).toBe("application/json");
    const e1 = (await r1.json()) as Echo;
    expect(e1).toMatchObject({ method: "GET", target: "/card?x=1", body: "" });
    expect(e1.headers["a2a-version"]).toBe("1.0");

    const payload = { jsonrpc: "2.0", id: 1, method: "SendMessage", params: { text: "grüße 🌍" } };
    const r2 = await fetch(`${s.url}/`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(payload),
    });
    expect(r2.status).toBe(200);
    const e2 = (await r2.json()) as Echo;
    expect(e2.method).toBe("POST");
    expect(e2.headers["content-type"]).toBe("application/json");
    expect(e2.headers["content-length"]).toBe(String(Buffer.byteLength(JSON.stringify(payload))));
    expect(JSON.parse(e2.body)).toEqual(payload);

    // A body much larger than one TCP segment.
    const big = { data: "z".repeat(200 * 1024) };
    const r3 = await fetch(`${s.url}/big`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(big),
    });
    expect(r3.status).toBe(200);
    expect(JSON.parse(((await r3.json()) as Echo).body)).toEqual(big);

    expect(s.requests.map((q) => `${q.method} ${q.target}`)).toEqual(["GET /card?x=1", "POST /", "POST /big"]);
    expect(s.sockets).toHaveLength(1); // keep-alive: all three on one connection
  });

  it("fetch gets the 413 answer to a body over the limit", async () => {
    const s = await startServer({ maxBodyBytes: 1024 });
    const r = await fetch(`${s.url}/`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ pad: "p".repeat(4096) }),
    });
    expect(r.status).toBe(413);
    const json = (await r.json()) as { error: { code: number; message: string } };
    expect(json.error.code).toBe(-32600);
    expect(json.error.message).toContain("exceeds this node's limit of 1024 bytes");
    expect(s.requests).toHaveLength(0);
  });

  it("fetch sees a handler failure as 500 and the next fetch still works", async () => {
    const s = await startServer();
    const r1 = await fetch(`${s.url}/reject`);
    expect(r1.status).toBe(500);
    expect(await r1.text()).toBe("internal error\n");
    const r2 = await fetch(`${s.url}/ok`);
    expect(((await r2.json()) as Echo).target).toBe("/ok");
    expect(s.sockets).toHaveLength(1);
  });
});

describe("serveHttp1: strict framing and courtesy", () => {
  it.each([
    [
      "both Transfer-Encoding and Content-Length",
      "POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
      400,
      "both Transfer-Encoding and Content-Length",
    ],
    [
      "whitespace before a header's colon",
      "GET / HTTP/1.1\r\nHost: t\r\nHost : x\r\n\r\n",
      400,
      "malformed header line",
    ],
    [
      "an obsolete folded header line",
      "GET / HTTP/1.1\r\nHost: t\r\nX-A: one\r\n two\r\n\r\n",
      400,
      "malformed header line",
    ],
    [
      "chunk data not followed by CRLF",
      "POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcXY0\r\n\r\n",
      400,
      "chunk data not followed by CRLF",
    ],
    [
      "a chunk size that is not hex",
      "POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n1g\r\na\r\n0\r\n\r\n",
      400,
      "bad chunk size",
    ],
    // Issue 13, "HTTP details": bytes a header value may not hold are refused (400), never a 500 or a guess.
    ["a bare CR in a header value", "GET / HTTP/1.1\r\nHost: t\r\nX-A: one\rtwo\r\n\r\n", 400, "control character"],
    [
      "a bare LF in a header value",
      "GET / HTTP/1.1\r\nHost: t\r\nX-A: one\ntwo: three\r\n\r\n",
      400,
      "control character",
    ],
    ["a NUL in a header value", "GET / HTTP/1.1\r\nHost: t\r\nX-A: one\u0000two\r\n\r\n", 400, "control character"],
    ["a DEL in a header value", "GET / HTTP/1.1\r\nHost: t\r\nX-A: one\u007ftwo\r\n\r\n", 400, "control character"],
    ["a control byte in the Host header", "GET / HTTP/1.1\r\nHost: t\u0001\r\n\r\n", 400, "control character"],
    // Only SP and HTAB are whitespace: \v before "chunked" is not trimmed into a chunked body.
    [
      "Transfer-Encoding: \\x0bchunked",
      "POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: \u000bchunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
      400,
      "control character",
    ],
    [
      "Transfer-Encoding: chunked\\f",
      "POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\u000c\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
      400,
      "control character",
    ],
    [
      "Content-Length with a trailing \\v",
      "POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 3\u000b\r\n\r\nabc",
      400,
      "control character",
    ],
    // Only origin-form targets: the node is not a proxy.
    [
      "an absolute-form target",
      "GET http://127.0.0.1/ HTTP/1.1\r\nHost: t\r\n\r\n",
      400,
      "must be a path starting with /",
    ],
    [
      "an authority-form target (CONNECT)",
      "CONNECT 127.0.0.1:9443 HTTP/1.1\r\nHost: t\r\n\r\n",
      400,
      "must be a path starting with /",
    ],
    ["an asterisk-form target", "OPTIONS * HTTP/1.1\r\nHost: t\r\n\r\n", 400, "must be a path starting with /"],
    [
      "a target with a control byte",
      "GET /a\u0001b HTTP/1.1\r\nHost: t\r\n\r\n",
      400,
      "must be a path starting with /",
    ],
    ["a target with a bare CR", "GET /a\rb HTTP/1.1\r\nHost: t\r\n\r\n", 400, "must be a path starting with /"],
    // Host: required in HTTP/1.1, and only one.
    ["an HTTP/1.1 request without Host", "GET / HTTP/1.1\r\nX-A: b\r\n\r\n", 400, "needs a Host header"],
    ["two different Host headers", "GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400, "more than one Host header"],
    // Trailers are parsed like headers.
    [
      "a trailer line without a colon",
      "POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\nBad trailer\r\n\r\n",
      400,
      "malformed trailer line",
    ],
    [
      "a trailer with a control byte",
      "POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\nX-T: a\u0000b\r\n\r\n",
      400,
      "in the value of trailer x-t",
    ],
    [
      "a folded trailer line",
      "POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\nX-T: a\r\n b\r\n\r\n",
      400,
      "malformed trailer line",
    ],
    [
      "a chunk extension with a control byte",
      "POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n3;a\u0001=b\r\nabc\r\n0\r\n\r\n",
      400,
      "bad chunk extension",
    ],
    [
      "a chunk extension that is not name[=value]",
      "POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n3;=b\r\nabc\r\n0\r\n\r\n",
      400,
      "bad chunk extension",
    ],
  ])("refuses %s and closes", async (_what, bytes, status, message) => {
    const s = await startServer();
    const c = await client(s.port);
    await c.send(bytes);
    const r = await c.response();
    expect(r.status).toBe(status);
    expect(r.headers.connection).toBe("close");
    expect(r.body.toString()).toContain(message);
    await c.untilClosed();
    expect(s.requests).toEqual([]);
  });

  it("accepts what the stricter parsing must still let through: trailers, chunk extensions, HTAB and obs-text in values, HTTP/1.0 without Host, a repeated identical Host", async () => {
    const s = await startServer();
    const c = await client(s.port);
    await c.send(
      chunkedPost("/trailers", '3 ;ext=1;quoted="a b\\"c"\r\nabc\r\n0\r\nX-Checksum: abc\r\nX-Other:\tv\r\n\r\n'),
    );
    expect(echoOf(await c.response()).target).toBe("/trailers");
    await c.send("GET /tab HTTP/1.1\r\nHost: t\r\nX-A:\tone\ttwo\t\r\nX-Latin: caf\u00e9\r\n\r\n");
    const tab = echoOf(await c.response());
    expect(tab.headers["x-a"]).toBe("one\ttwo");
    await c.send("GET /same-host HTTP/1.1\r\nHost: t\r\nHost: t\r\n\r\n");
    expect(echoOf(await c.response()).target).toBe("/same-host");
    const old = await client(s.port);
    await old.send("GET /http10 HTTP/1.0\r\n\r\n");
    expect(echoOf(await old.response()).target).toBe("/http10");
    expect(s.requests.map((r) => r.target)).toEqual(["/trailers", "/tab", "/same-host", "/http10"]);
    expect(s.requests[0].body.toString()).toBe("abc");
  });

  it("skips empty lines before a request line (RFC 9112 §2.2)", async () => {
    const s = await startServer();
    const c = await client(s.port);
    await c.send(`\r\n\r\n${get("/after-blank-lines")}`);
    expect(echoOf(await c.response()).target).toBe("/after-blank-lines");
  });

  it("answers Expect: 100-continue before the body arrives, then the request", async () => {
    const s = await startServer();
    const c = await client(s.port);
    await c.send("POST /up HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n");
    const interim = await c.streamHead();
    expect(interim.status).toBe(100);
    await c.send("hello");
    const r = await c.response();
    expect(r.status).toBe(200);
    expect(echoOf(r).body).toBe("hello");
  });

  it("decodes a chunked body delivered one byte at a time (decoding resumes, it does not restart)", async () => {
    const s = await startServer();
    const c = await client(s.port);
    const chunks = Array.from({ length: 40 }, (_, i) => `1\r\n${String.fromCharCode(97 + (i % 26))}\r\n`).join("");
    await c.sendByteByByte(`POST /drip HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n${chunks}0\r\n\r\n`);
    const r = await c.response();
    expect(echoOf(r).body).toBe(Array.from({ length: 40 }, (_, i) => String.fromCharCode(97 + (i % 26))).join(""));
  });

  it("closeWhenIdle ends an idle connection at once, and a busy one right after its response", async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const handles: { closeWhenIdle(): void }[] = [];
    const s = await startServer({
      handle: async (req) => {
        if (req.target === "/slow") await gate;
        return { status: 200, body: req.target };
      },
    });
    const idle = await client(s.port);
    await idle.send(get("/quick"));
    await idle.response();
    const busy = await client(s.port);
    await busy.send(get("/slow"));
    await s.handled(2);
    for (const sock of s.sockets) handles.push(s.connectionOf(sock));
    for (const h of handles) h.closeWhenIdle();
    await idle.untilClosed();
    release();
    const r = await busy.response();
    expect(r.status).toBe(200);
    expect(r.headers.connection).toBe("close");
    await busy.untilClosed();
  });
});

// ---------------------------------------------------------------------------------------------------------
// Backpressure
// ---------------------------------------------------------------------------------------------------------

describe("a client that pipelines requests without reading the answers", () => {
  it("is no longer read from once its answers pile up: the node holds a bounded amount, and every answer still comes, in order", async () => {
    let pausedState: import("../../src/server/http1").Http1State | undefined;
    let paused!: () => void;
    const stopped = new Promise<void>((r) => (paused = r));
    const bigAnswer = "y".repeat(8 * 1024);
    const server = await startServer({
      handle: async (req) => ({
        status: 200,
        headers: { "content-type": "text/plain" },
        body: `${req.target} ${bigAnswer}`,
      }),
      onPause: (state) => {
        pausedState ??= state;
        paused();
      },
    });
    const client = connect(server.port, "127.0.0.1");
    clients.push(client);
    await once(client, "connect");
    client.pause(); // read nothing
    const count = 4000; // 4,000 answers of 8 KiB: 32 MiB if the node buffered them all
    const requests = Array.from({ length: count }, (_, i) => `GET /r${i} HTTP/1.1\r\nhost: x\r\n\r\n`).join("");
    client.write(requests);
    await stopped;
    const conn = server.connectionOf(server.sockets[0] as Socket);
    expect(pausedState?.paused).toBe(true);
    // What the node holds for this client stays near the high-water mark, far below what it was sent.
    expect(conn.state().unsentBytes).toBeLessThan(256 * 1024);
    expect(conn.state().bufferedBytes).toBeLessThan(requests.length);
    expect(server.requests.length).toBeLessThan(count);
    // Once the client reads, everything is answered, in order.
    const seen: string[] = [];
    let text = "";
    let scanned = 0;
    const marker = /\r\n\r\n(\/r\d+) /g;
    const all = new Promise<void>((resolve) => {
      client.on("data", (d: Buffer) => {
        text += d.toString("latin1");
        marker.lastIndex = scanned;
        for (let m = marker.exec(text); m; m = marker.exec(text)) {
          seen.push(m[1]);
          scanned = marker.lastIndex;
        }
        // Keep only the unscanned tail (a marker may straddle two reads).
        const keepFrom = Math.max(scanned, text.length - 32);
        text = text.slice(keepFrom);
        scanned -= keepFrom;
        if (scanned < 0) scanned = 0;
        if (seen.length === count) resolve();
      });
    });
    client.resume();
    await all;
    expect(seen).toEqual(Array.from({ length: count }, (_, i) => `/r${i}`));
  });
});

describe("a connection the node closes while the client still sends (found by npm run fuzz, seed 1)", () => {
  it("is let go once the client leaves, although reading had paused for backpressure: its FIN is not hidden behind unread data", async () => {
    const server = await startServer();
    const c = await client(server.port);
    // One write: a request that asks to close, then 2 MiB of pipelined requests the node will never answer.
    const flood = Array.from({ length: 60_000 }, () => "GET /health HTTP/1.1\r\nHost: t\r\n\r\n").join("");
    c.socket.write(`GET /first HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n${flood}`);
    const r = await c.response();
    expect(r.status).toBe(200);
    expect(r.headers.connection).toBe("close");
    expect(server.requests.map((q) => q.target)).toEqual(["/first"]);
    const serverSide = server.sockets[0] as Socket;
    const released = closeOf(serverSide);
    c.socket.destroy(); // the client leaves with most of its flood unread by the node
    await released;
    expect(serverSide.destroyed).toBe(true);
  });

  it("cuts a client that neither reads its last answer nor closes, after the linger time", async () => {
    const server = await startServer({ lingerMs: 200 });
    const raw = connect(server.port, "127.0.0.1");
    clients.push(raw);
    raw.on("error", () => {});
    await once(raw, "connect");
    raw.pause(); // never reads, never closes
    raw.write("GET /bye HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
    await server.handled(1);
    const serverSide = server.sockets[0] as Socket;
    await closeOf(serverSide);
    expect(serverSide.destroyed).toBe(true);
    expect(raw.destroyed).toBe(false); // the client kept its side; the node did not wait for it
  });

  it("still delivers the answer whole when the client reads and closes in time", async () => {
    const server = await startServer({ lingerMs: 10_000 });
    const c = await client(server.port);
    c.socket.write(`POST /big HTTP/1.1\r\nHost: t\r\nContent-Length: 5000\r\n\r\n${"x".repeat(5000)}`);
    const r = await c.response();
    expect(r.status).toBe(413);
    await c.untilClosed();
    expect(c.ended).toBe(true);
  });
});
