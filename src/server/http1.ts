import type { Socket } from "node:net";

/** One parsed HTTP/1.1 request. Header names are lower-case. */
export interface HttpRequest {
  method: string;
  /** Path and query, as sent ("/", "/health?x=1"). */
  target: string;
  headers: Map<string, string>;
  body: Buffer;
}

export interface HttpResponse {
  status: number;
  headers?: Record<string, string>;
  body?: string | Uint8Array;
  /** A streamed body (server-sent events): each item is written as it comes, chunked. */
  stream?: AsyncIterable<string>;
}

export interface Http1Options {
  maxBodyBytes: number;
  /** Largest head (request line + headers) accepted. */
  maxHeadBytes: number;
  /** A connection with no request in progress is closed after this long. */
  idleTimeoutMs: number;
  /** A request's head must arrive within this long (slow-loris guard). */
  headTimeoutMs: number;
  /** Called once per request; requests on one connection are answered in order. */
  handle(request: HttpRequest): Promise<HttpResponse>;
  /** Builds the answer for a body over the limit (JSON-RPC wants its own error shape). */
  tooLarge(limit: number, declared: number | undefined): HttpResponse;
  /** On a quiet stream, a comment line is sent this often so proxies and clients do not cut it. */
  streamKeepAliveMs?: number;
}

const CRLF2 = Buffer.from("\r\n\r\n");

function chunk(text: string): string {
  return `${Buffer.byteLength(text).toString(16)}\r\n${text}\r\n`;
}
const REASONS: Record<number, string> = {
  200: "OK", 204: "No Content", 304: "Not Modified", 400: "Bad Request", 403: "Forbidden", 404: "Not Found",
  405: "Method Not Allowed", 408: "Request Timeout", 413: "Content Too Large", 431: "Request Header Fields Too Large",
  500: "Internal Server Error", 501: "Not Implemented", 505: "HTTP Version Not Supported",
};

class HttpError extends Error {
  constructor(readonly status: number, message: string) {
    super(message);
  }
}

/**
 * A small HTTP/1.1 server loop for one connection: keep-alive, Content-Length and chunked bodies, requests
 * answered one at a time in order. It replaces node:http on the mTLS listener because, under Bun, node:http's
 * compatibility layer (streams, events, per-request objects) cost more CPU per task than all of the node's own
 * work on it; this loop does only what an A2A JSON-RPC server needs.
 */
export function serveHttp1(socket: Socket, o: Http1Options): void {
  let buf: Buffer = Buffer.alloc(0);
  let busy = false;
  let closed = false;
  let headTimer: ReturnType<typeof setTimeout> | undefined;
  socket.setNoDelay(true);
  socket.setTimeout(o.idleTimeoutMs, () => socket.destroy());
  socket.on("close", () => {
    closed = true;
    clearTimeout(headTimer);
  });
  socket.on("error", () => socket.destroy());
  socket.on("data", (chunk: Buffer) => {
    buf = buf.length === 0 ? chunk : Buffer.concat([buf, chunk]);
    if (!busy) void pump();
  });

  const armHeadTimer = () => {
    if (!headTimer) headTimer = setTimeout(() => fail(new HttpError(408, "request head took too long")), o.headTimeoutMs);
  };

  function fail(err: HttpError): void {
    if (closed) return;
    write({ status: err.status, headers: { "content-type": "text/plain" }, body: `${err.message}\n` }, false);
    socket.end();
    closed = true;
  }

  function write(res: HttpResponse, keepAlive: boolean): void {
    const body = typeof res.body === "string" ? Buffer.from(res.body) : (res.body ?? new Uint8Array());
    let head = `HTTP/1.1 ${res.status} ${REASONS[res.status] ?? "Status"}\r\ncontent-length: ${body.length}\r\n`;
    if (!keepAlive) head += "connection: close\r\n";
    if (res.headers) for (const k in res.headers) if (k !== "content-length") head += `${k}: ${res.headers[k]}\r\n`;
    head += "\r\n";
    // One write: head and body leave together in one TLS record.
    socket.write(body.length ? Buffer.concat([Buffer.from(head, "latin1"), body]) : head);
  }

  async function pump(): Promise<void> {
    busy = true;
    try {
      while (!closed && buf.length > 0) {
        const parsed = parse();
        if (!parsed) break; // need more bytes
        clearTimeout(headTimer);
        headTimer = undefined;
        const { request, keepAlive } = parsed;
        let response: HttpResponse;
        try {
          response = await o.handle(request);
        } catch {
          response = { status: 500, headers: { "content-type": "text/plain" }, body: "internal error\n" };
        }
        if (closed) return;
        if (response.stream) await writeStream(response, response.stream, keepAlive);
        else write(response, keepAlive);
        if (!keepAlive) {
          socket.end();
          closed = true;
        }
      }
      if (!closed && buf.length > 0) armHeadTimer();
    } catch (err) {
      if (err instanceof HttpError) fail(err);
      else socket.destroy();
    } finally {
      busy = false;
    }
  }

  /**
   * Writes a streamed response with chunked framing, one chunk per item, waiting for the socket to drain when
   * the client reads slowly, and stops the source when the client goes away.
   */
  async function writeStream(res: HttpResponse, source: AsyncIterable<string>, keepAlive: boolean): Promise<void> {
    let head = `HTTP/1.1 ${res.status} ${REASONS[res.status] ?? "Status"}\r\ntransfer-encoding: chunked\r\n`;
    if (!keepAlive) head += "connection: close\r\n";
    if (res.headers) for (const k in res.headers) if (k !== "content-length") head += `${k}: ${res.headers[k]}\r\n`;
    socket.write(`${head}\r\n`);
    const it = source[Symbol.asyncIterator]();
    const stop = () => void it.return?.();
    socket.once("close", stop);
    let wrote = true;
    const every = o.streamKeepAliveMs ?? 15_000;
    const beat = setInterval(() => {
      if (!wrote && !closed) socket.write(chunk(": keep-alive\n\n"));
      wrote = false;
    }, every);
    try {
      for (;;) {
        const next = await it.next();
        if (next.done || closed) break;
        wrote = true;
        if (!socket.write(chunk(next.value)) && !closed) await new Promise<void>((r) => socket.once("drain", () => r()));
      }
      if (!closed) socket.write("0\r\n\r\n");
    } finally {
      clearInterval(beat);
      socket.off("close", stop);
    }
  }

  /** Takes one whole request off the buffer, or returns undefined if it has not all arrived yet. */
  function parse(): { request: HttpRequest; keepAlive: boolean } | undefined {
    const end = buf.indexOf(CRLF2);
    if (end === -1) {
      if (buf.length > o.maxHeadBytes) throw new HttpError(431, "request head too large");
      armHeadTimer();
      return undefined;
    }
    if (end > o.maxHeadBytes) throw new HttpError(431, "request head too large");
    const lines = buf.toString("latin1", 0, end).split("\r\n");
    const [method, target, version] = lines[0].split(" ");
    if (!method || !target || !version?.startsWith("HTTP/1.")) throw new HttpError(400, "malformed request line");
    const headers = new Map<string, string>();
    for (let i = 1; i < lines.length; i++) {
      const line = lines[i];
      const colon = line.indexOf(":");
      if (colon <= 0) throw new HttpError(400, "malformed header line");
      const name = line.slice(0, colon).trim().toLowerCase();
      const value = line.slice(colon + 1).trim();
      const prev = headers.get(name);
      headers.set(name, prev === undefined ? value : `${prev}, ${value}`);
    }
    const connection = headers.get("connection")?.toLowerCase() ?? "";
    const keepAlive = version === "HTTP/1.1" ? !connection.includes("close") : connection.includes("keep-alive");
    const start = end + 4;
    const te = headers.get("transfer-encoding");
    let body: Buffer;
    let consumed: number;
    if (te !== undefined) {
      if (te.toLowerCase() !== "chunked") throw new HttpError(501, `transfer-encoding ${te} is not supported`);
      const r = dechunk(start);
      if (!r) return undefined;
      [body, consumed] = r;
    } else {
      const cl = headers.get("content-length");
      const len = cl === undefined ? 0 : Number(cl);
      if (!Number.isInteger(len) || len < 0) throw new HttpError(400, "bad content-length");
      if (len > o.maxBodyBytes) return tooLarge(len);
      if (buf.length < start + len) return undefined;
      body = buf.subarray(start, start + len);
      consumed = start + len;
    }
    buf = buf.subarray(consumed);
    return { request: { method, target, headers, body }, keepAlive };
  }

  /** Decodes a chunked body starting at `from`; [body, bytes consumed] once complete. */
  function dechunk(from: number): [Buffer, number] | undefined {
    const parts: Buffer[] = [];
    let size = 0;
    let at = from;
    for (;;) {
      const eol = buf.indexOf("\r\n", at);
      if (eol === -1) return undefined;
      const n = Number.parseInt(buf.toString("latin1", at, eol).split(";")[0], 16);
      if (!Number.isFinite(n) || n < 0) throw new HttpError(400, "bad chunk size");
      if (n === 0) {
        const trailerEnd = buf.indexOf(CRLF2, eol);
        if (trailerEnd === -1) return undefined;
        return [Buffer.concat(parts), trailerEnd + 4];
      }
      size += n;
      if (size > o.maxBodyBytes) {
        tooLarge(undefined);
        return undefined;
      }
      if (buf.length < eol + 2 + n + 2) return undefined;
      parts.push(buf.subarray(eol + 2, eol + 2 + n));
      at = eol + 2 + n + 2;
    }
  }

  function tooLarge(declared: number | undefined): undefined {
    // Answer, then drop the connection: the unread rest of the body makes it unusable.
    write(o.tooLarge(o.maxBodyBytes, declared), false);
    socket.end();
    closed = true;
    buf = Buffer.alloc(0);
    return undefined;
  }
}
