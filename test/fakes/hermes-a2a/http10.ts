/**
 * The HTTP of Python's `http.server.ThreadingHTTPServer` with a `BaseHTTPRequestHandler` at its default
 * `protocol_version = "HTTP/1.0"`, which the Hermes A2A plugin serves with: one request per connection (the
 * server closes it after every answer, keep-alive or not), answers in HTTP/1.0 with `Server` and `Date` first, a
 * streamed answer (SSE) without Content-Length or chunked framing (it ends when the connection closes), a
 * request body read by Content-Length alone (no chunked request bodies: without Content-Length the body is
 * empty), and 501 for any method without a `do_METHOD` (HEAD, PUT, OPTIONS, ...).
 */
import { createServer, type Server, type Socket } from "node:net";

const REASONS: Record<number, string> = {
  200: "OK",
  400: "Bad Request",
  401: "Unauthorized",
  403: "Forbidden",
  404: "Not Found",
  413: "Request Entity Too Large",
  429: "Too Many Requests",
  501: "Not Implemented",
};

export interface Http10Request {
  method: string;
  path: string;
  /** Lower-cased names; the first of repeated headers (email.message.Message.get). */
  headers: Map<string, string>;
  body: Buffer;
  clientIp: string;
}

/** The handler's `wfile`: status line and headers, then body bytes; the connection closes when the handler returns. */
export class Http10Response {
  private closed = false;

  constructor(private readonly socket: Socket) {
    socket.on("close", () => (this.closed = true));
    socket.on("error", () => (this.closed = true));
  }

  /** The client went away: a write would raise BrokenPipeError in Python. */
  get gone(): boolean {
    return this.closed || this.socket.destroyed;
  }

  /** `send_response` + `send_header`s + `end_headers`. */
  head(code: number, headers: Record<string, string>): void {
    let out = `HTTP/1.0 ${code} ${REASONS[code] ?? ""}\r\nServer: BaseHTTP/0.6 Python/3.11.2\r\nDate: ${new Date().toUTCString()}\r\n`;
    for (const [k, v] of Object.entries(headers)) out += `${k}: ${v}\r\n`;
    this.write(`${out}\r\n`);
  }

  /** `wfile.write` + `flush`: false once the client is gone (Python raises; callers treat it as such). */
  write(chunk: string | Buffer): boolean {
    if (this.gone) return false;
    this.socket.write(chunk);
    return true;
  }

  json(code: number, body: string): void {
    this.head(code, { "Content-Type": "application/json", "Content-Length": String(Buffer.byteLength(body)) });
    this.write(body);
  }

  /** `send_error`: an HTML page, and `Connection: close`. */
  error(code: number, message: string): void {
    const body = `<!DOCTYPE HTML>\n<html lang="en">\n    <head>\n        <meta charset="utf-8">\n        <title>Error response</title>\n    </head>\n    <body>\n        <h1>Error response</h1>\n        <p>Error code: ${code}</p>\n        <p>Message: ${message}.</p>\n    </body>\n</html>\n`;
    this.head(code, {
      Connection: "close",
      "Content-Type": "text/html;charset=utf-8",
      "Content-Length": String(Buffer.byteLength(body)),
    });
    this.write(body);
  }
}

export type Http10Handler = (req: Http10Request, res: Http10Response) => Promise<void>;

/** Serves `handlers[METHOD]`; the socket is closed after each answer (HTTP/1.0). */
export function http10Server(handlers: Record<string, Http10Handler>): Server {
  return createServer((socket) => {
    let buf = Buffer.alloc(0);
    let started = false;
    const onData = (chunk: Buffer) => {
      buf = Buffer.concat([buf, chunk]);
      if (started) return;
      const end = buf.indexOf("\r\n\r\n");
      if (end === -1) return;
      started = true;
      void serveOne(socket, buf.subarray(0, end).toString("latin1"), () => buf.subarray(end + 4), handlers).finally(
        () => {
          socket.off("data", onData);
          socket.end();
        },
      );
    };
    socket.on("data", onData);
    socket.on("error", () => undefined);
  });
}

async function serveOne(
  socket: Socket,
  head: string,
  rest: () => Buffer,
  handlers: Record<string, Http10Handler>,
): Promise<void> {
  const res = new Http10Response(socket);
  const [line, ...headerLines] = head.split("\r\n");
  const words = line.split(/\s+/).filter(Boolean);
  if (words.length !== 3 || !words[2].startsWith("HTTP/")) return res.error(400, `Bad request syntax ('${line}')`);
  const [method, path] = words;
  const headers = new Map<string, string>();
  for (const h of headerLines) {
    const i = h.indexOf(":");
    if (i <= 0) continue;
    const name = h.slice(0, i).trim().toLowerCase();
    if (!headers.has(name)) headers.set(name, h.slice(i + 1).trim());
  }
  const handler = handlers[method];
  if (!handler) return res.error(501, `Unsupported method ('${method}')`);
  const req: Http10Request = {
    method,
    path,
    headers,
    body: Buffer.alloc(0),
    clientIp: socket.remoteAddress?.replace(/^::ffff:/, "") ?? "",
  };
  // The handler reads its body itself (rfile.read(Content-Length)), after its own checks.
  const bodyOf = async (length: number): Promise<Buffer> => {
    for (;;) {
      const have = rest();
      if (have.length >= length || socket.readableEnded || socket.destroyed) return have.subarray(0, length);
      await new Promise((resolve) => socket.once("data", resolve).once("end", resolve).once("close", resolve));
    }
  };
  (req as Http10Request & { read: typeof bodyOf }).read = bodyOf;
  await handler(req, res);
}

/** Reads `length` bytes of the request body (the handler's `rfile.read(length)`). */
export function readBody(req: Http10Request, length: number): Promise<Buffer> {
  return (req as Http10Request & { read(length: number): Promise<Buffer> }).read(length);
}
