import type { Socket } from "node:net";
import type { HeldText } from "../rpc/answer-holds";
import type { AnswerHold } from "../rpc/caller";

/** One parsed HTTP/1.1 request. Header names are lower-case. */
export interface HttpRequest {
  method: string;
  /** Path and query, as sent ("/", "/health?x=1"). */
  target: string;
  headers: Map<string, string>;
  body: Buffer;
  /** Whether the client has gone away (a handler that waited may then skip the work). */
  gone?(): boolean;
}

export interface HttpResponse {
  status: number;
  headers?: Record<string, string>;
  body?: string | Uint8Array;
  /** The body's bytes counted against the caller's answer budget: given back as the socket takes them. */
  hold?: AnswerHold;
  /**
   * A streamed body (server-sent events): each item is written as it comes, chunked; an item with a hold is
   * given back to its budget as it is written.
   */
  stream?: AsyncIterable<string | HeldText>;
}

export interface Http1Options {
  maxBodyBytes: number;
  /** Largest head (request line + headers) accepted. */
  maxHeadBytes: number;
  /** A connection with no request in progress is closed after this long. */
  idleTimeoutMs: number;
  /** A request (head and body) must arrive within this long once it has begun (slow-loris guard). */
  headTimeoutMs: number;
  /** Called once per request; requests on one connection are answered in order. */
  handle(request: HttpRequest): Promise<HttpResponse>;
  /** Builds the answer for a body over the limit (each binding has its own error shape; `target` says which). */
  tooLarge(limit: number, declared: number | undefined, target: string): HttpResponse;
  /** On a quiet stream, a comment line is sent this often so proxies and clients do not cut it. */
  streamKeepAliveMs?: number;
  /** How long a connection being closed waits for the client to take its last answer and close (LINGER_MS). */
  lingerMs?: number;
  /** Told each time the connection stops reading its client (backpressure), for tests and metrics. */
  onPause?(state: Http1State): void;
  /** Told of each request the loop refuses itself (400, 408, 413, 431, 501, 505), for the metrics. */
  onRefused?(status: number): void;
}

/** What one connection holds, for tests and metrics. */
export interface Http1State {
  /** Reading from the client is paused: answers are waiting to be read, or requests to be handled. */
  paused: boolean;
  /** Bytes received and not yet handled (pipelined requests). */
  bufferedBytes: number;
  /** Bytes of answers written and not yet taken by the client. */
  unsentBytes: number;
}

/**
 * Backpressure: a client that sends requests without reading the answers is not read from while more than
 * this many bytes of answers wait for it, or this many bytes of requests wait to be handled. The kernel's
 * socket buffers then fill and the client's own writes block; the node holds at most about this much.
 */
const HIGH_WATER_BYTES = 64 * 1024;

/** Once the node closes a connection, the client has this long to read the answer and close its side. */
const LINGER_MS = 5_000;

/**
 * A body (or one event of a stream) this long or longer is written in slices of this size, each once the
 * socket has taken the one before: what waits for a client that reads slowly, or not at all, is the answer as
 * built, not copies of it in the socket's buffers.
 */
const SLICE_BYTES = 64 * 1024;

const CRLF = Buffer.from("\r\n");
const CRLF2 = Buffer.from("\r\n\r\n");
const DIGITS = /^\d+$/;
const HEX = /^[0-9a-fA-F]+$/;
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/** Bytes a field value may not hold (RFC 9110 §5.5): every control character but HTAB, so bare CR, LF and NUL. */
const BAD_VALUE_BYTE = /[\x00-\x08\x0a-\x1f\x7f]/;
/** An origin-form request target (RFC 9112 §3.2.1): an absolute path and an optional query, visible ASCII only. */
const ORIGIN_FORM = /^\/[\x21-\x7e]*$/;
/** A chunk extension list (RFC 9112 §7.1.1): `;name` or `;name=token` or `;name="quoted"`, SP/HTAB around. */
const CHUNK_EXT = /^(?:[ \t]*;[ \t]*[!#$%&'*+\-.^_`|~0-9A-Za-z]+(?:[ \t]*=[ \t]*(?:[!#$%&'*+\-.^_`|~0-9A-Za-z]+|"(?:[^"\\\x00-\x08\x0a-\x1f\x7f]|\\[^\x00-\x08\x0a-\x1f\x7f])*"))?)*[ \t]*$/;
/** Headers a request may carry once only: a second Host or Content-Length makes the request ambiguous. */
const SINGLE = new Set(["host", "content-length"]);

/** Strips SP and HTAB only (RFC 9110 §5.5): String.trim() would also strip \v, \f and NBSP, hiding bad bytes. */
function trimOws(s: string): string {
  let a = 0;
  let b = s.length;
  while (a < b && (s.charCodeAt(a) === 0x20 || s.charCodeAt(a) === 0x09)) a++;
  while (b > a && (s.charCodeAt(b - 1) === 0x20 || s.charCodeAt(b - 1) === 0x09)) b--;
  return s.slice(a, b);
}

/**
 * Parses header (or trailer) lines into `into`, lower-casing names. Refuses what RFC 9112 says a server must
 * refuse or may not guess at: obsolete folding, whitespace before the colon, control bytes in a value (a bare
 * CR or LF there is how request smuggling starts), a repeated Host or Content-Length.
 */
function parseFields(lines: string[], from: number, into: Map<string, string>, what: "header" | "trailer"): void {
  for (let i = from; i < lines.length; i++) {
    const line = lines[i];
    const colon = line.indexOf(":");
    if (colon <= 0 || !TOKEN.test(line.slice(0, colon))) throw new HttpError(400, `malformed ${what} line`);
    const name = line.slice(0, colon).toLowerCase();
    const value = trimOws(line.slice(colon + 1));
    if (BAD_VALUE_BYTE.test(value)) throw new HttpError(400, `a control character (CR, LF, NUL...) in the value of ${what} ${name}`);
    const prev = into.get(name);
    if (prev !== undefined && SINGLE.has(name) && prev !== value) throw new HttpError(400, name === "host" ? "more than one Host header" : "bad content-length");
    into.set(name, prev === undefined || SINGLE.has(name) ? value : `${prev}, ${value}`);
  }
}
const REASONS: Record<number, string> = {
  100: "Continue", 200: "OK", 204: "No Content", 304: "Not Modified", 400: "Bad Request", 403: "Forbidden",
  404: "Not Found", 405: "Method Not Allowed", 408: "Request Timeout", 413: "Content Too Large",
  415: "Unsupported Media Type", 429: "Too Many Requests", 431: "Request Header Fields Too Large",
  500: "Internal Server Error", 501: "Not Implemented", 503: "Service Unavailable", 505: "HTTP Version Not Supported",
};

function chunk(text: string): string {
  return `${Buffer.byteLength(text).toString(16)}\r\n${text}\r\n`;
}

class HttpError extends Error {
  constructor(readonly status: number, message: string) {
    super(message);
  }
}

/** Where a chunked body's decoding stopped, so the next data event resumes instead of starting over. */
interface ChunkState {
  at: number;
  parts: Buffer[];
  size: number;
}

/**
 * A small HTTP/1.1 server loop for one connection: keep-alive, Content-Length and chunked bodies, requests
 * answered one at a time in order. It replaces node:http on both listeners because, under Bun, node:http's
 * compatibility layer (streams, events, per-request objects) cost more CPU per task than all of the node's own
 * work on it; this loop does only what an A2A JSON-RPC server needs, and is strict about framing: anything
 * ambiguous (bad lengths, both Content-Length and Transfer-Encoding, obsolete line folding) is refused.
 */
/** A connection's handle for a graceful stop. */
export interface Http1Connection {
  /** Closes the connection now if no request is in progress, otherwise right after its response. */
  closeWhenIdle(): void;
  state(): Http1State;
}

export function serveHttp1(socket: Socket, o: Http1Options): Http1Connection {
  let buf: Buffer = Buffer.alloc(0);
  let busy = false;
  let closed = false;
  let requestTimer: ReturnType<typeof setTimeout> | undefined;
  let chunked: ChunkState | undefined;
  let continued = false;
  let closing = false;
  // Never hold more than one request's worth (plus what may be pipelined behind it) in memory. Reading pauses
  // at HIGH_WATER_BYTES of pipelined requests; what was already on its way when it paused still arrives.
  const maxBuffered = o.maxHeadBytes + o.maxBodyBytes + 4 * HIGH_WATER_BYTES;
  socket.setNoDelay(true);
  const idle = () => socket.setTimeout(o.idleTimeoutMs);
  socket.on("timeout", () => socket.destroy());
  idle();
  socket.on("close", () => {
    closed = true;
    clearTimeout(requestTimer);
  });
  socket.on("error", () => socket.destroy());
  let paused = false;
  const state = (): Http1State => ({ paused, bufferedBytes: buf.length, unsentBytes: socket.writableLength });
  const pause = () => {
    if (paused) return;
    paused = true;
    socket.pause();
    o.onPause?.(state());
  };
  const resume = () => {
    if (!paused || closed) return;
    paused = false;
    socket.resume();
  };
  socket.on("data", (data: Buffer) => {
    if (closed) return;
    buf = buf.length === 0 ? data : Buffer.concat([buf, data]);
    if (buf.length > maxBuffered) {
      socket.destroy();
      return;
    }
    // Requests arrive faster than they are answered (pipelining): stop reading until the queue is worked off.
    if (buf.length > HIGH_WATER_BYTES) pause();
    if (!busy) void pump();
  });

  const armRequestTimer = () => {
    if (!requestTimer) requestTimer = setTimeout(() => fail(new HttpError(408, "request took too long to arrive")), o.headTimeoutMs);
  };

  function fail(err: HttpError): void {
    if (closed) return;
    o.onRefused?.(err.status);
    write({ status: err.status, headers: { "content-type": "text/plain" }, body: `${err.message}\n` }, false, "GET");
    finish();
  }

  /**
   * Ends the connection after what was written. Whatever the client still sends is read and dropped: left
   * unread (reading may be paused for backpressure), it would hide the client's FIN, and the socket would be
   * held half-closed forever, holding its slot of the connection limits. A client that neither reads its
   * answer nor closes is cut after LINGER_MS.
   */
  function finish(): void {
    closed = true;
    buf = Buffer.alloc(0);
    clearTimeout(requestTimer);
    socket.end();
    paused = false;
    socket.resume();
    const linger = setTimeout(() => socket.destroy(), o.lingerMs ?? LINGER_MS);
    linger.unref?.();
    socket.once("close", () => clearTimeout(linger));
  }

  /**
   * Writes a response. A small one is one write: head and body leave together in one TLS record, a text body
   * (every JSON-RPC answer) joined to the head as one string, encoded once by the socket, instead of as three
   * buffers copied into a fourth. A large one is written in slices under backpressure (see writeSliced);
   * the promise resolves once it is all taken by the socket (or the connection closed).
   */
  function write(res: HttpResponse, keepAlive: boolean, method: string): void | Promise<void> {
    let body = res.body ?? "";
    const bodyless = method === "HEAD" || res.status === 204 || res.status === 304;
    // Encoded once, and the text let go: the bytes are what waits for the client from here on.
    if (typeof body === "string" && body.length >= SLICE_BYTES && !bodyless) {
      body = Buffer.from(body, "utf8");
      res.body = undefined;
    }
    const length = typeof body === "string" ? Buffer.byteLength(body) : body.length;
    let head = `HTTP/1.1 ${res.status} ${REASONS[res.status] ?? "Status"}\r\n`;
    if (res.status !== 204 && res.status !== 304) head += `content-length: ${length}\r\n`;
    if (!keepAlive) head += "connection: close\r\n";
    if (res.headers) for (const k in res.headers) if (k.toLowerCase() !== "content-length") head += `${k}: ${res.headers[k]}\r\n`;
    head += "\r\n";
    if (bodyless || length === 0) {
      res.hold?.release();
      socket.write(head);
    } else if (typeof body === "string") {
      res.hold?.release();
      socket.write(head + body);
    } else if (body.length >= SLICE_BYTES) {
      socket.write(head);
      return writeSliced(body, res.hold);
    } else {
      res.hold?.release();
      socket.write(Buffer.concat([Buffer.from(head, "latin1"), body]));
    }
  }

  /**
   * Writes `bytes` a slice at a time, each once the socket has taken the last (or at once while it takes
   * them), giving each slice back to `hold` as it goes; the rest is given back if the connection closes.
   */
  async function writeSliced(bytes: Uint8Array, hold: AnswerHold | undefined): Promise<void> {
    try {
      for (let at = 0; at < bytes.length && !closed; at += SLICE_BYTES) {
        const slice = bytes.subarray(at, at + SLICE_BYTES);
        if (!socket.write(slice)) await drained();
        hold?.release(slice.length);
      }
    } finally {
      hold?.release();
    }
  }

  async function pump(): Promise<void> {
    busy = true;
    try {
      while (!closed && buf.length > 0) {
        const parsed = parse();
        if (!parsed) break; // need more bytes
        clearTimeout(requestTimer);
        requestTimer = undefined;
        const { request, keepAlive } = parsed;
        socket.setTimeout(0); // a slow handler (a long blocking task) is not an idle connection
        let response: HttpResponse;
        try {
          response = await o.handle(request);
        } catch {
          response = { status: 500, headers: { "content-type": "text/plain" }, body: "internal error\n" };
        }
        if (closed) {
          // The client went away while its answer was made: what it held is given back, a stream stopped.
          response.hold?.release();
          void response.stream?.[Symbol.asyncIterator]().return?.();
          return;
        }
        const keep = keepAlive && !closing;
        if (response.stream) await writeStream(response, response.stream, keep);
        else await write(response, keep, request.method);
        if (!keep || closing) finish();
        else idle();
        // The client is not reading its answers: stop reading its requests until it takes them.
        if (!closed && socket.writableLength > HIGH_WATER_BYTES) {
          pause();
          await drained();
        }
      }
      resume();
      if (!closed && buf.length > 0) armRequestTimer();
    } catch (err) {
      if (err instanceof HttpError) fail(err);
      else socket.destroy();
    } finally {
      busy = false;
    }
  }

  const handle: Http1Connection = {
    state,
    closeWhenIdle() {
      closing = true;
      if (!busy && !closed) finish();
    },
  };

  /**
   * Resolves when the socket can take more, or has closed. A client that takes nothing of what waits for it
   * for idleTimeoutMs is cut: it holds that much of the node's memory (and of its caller's answer budget).
   */
  function drained(): Promise<void> {
    return new Promise((resolve) => {
      const stalled = setTimeout(() => socket.destroy(), o.idleTimeoutMs);
      const done = () => {
        clearTimeout(stalled);
        socket.off("drain", done);
        socket.off("close", done);
        resolve();
      };
      socket.on("drain", done);
      socket.on("close", done);
    });
  }

  /**
   * Writes a streamed response with chunked framing, one chunk per item, waiting for the socket to drain when
   * the client reads slowly, and stops the source as soon as the client goes away (even while it is quiet).
   */
  async function writeStream(res: HttpResponse, source: AsyncIterable<string | HeldText>, keepAlive: boolean): Promise<void> {
    let head = `HTTP/1.1 ${res.status} ${REASONS[res.status] ?? "Status"}\r\ntransfer-encoding: chunked\r\n`;
    if (!keepAlive) head += "connection: close\r\n";
    if (res.headers) for (const k in res.headers) if (k.toLowerCase() !== "content-length") head += `${k}: ${res.headers[k]}\r\n`;
    socket.write(`${head}\r\n`);
    const it = source[Symbol.asyncIterator]();
    let onClose!: () => void;
    let stopped = false;
    const gone = new Promise<IteratorResult<string | HeldText>>((resolve) => {
      onClose = () => {
        resolve({ value: undefined, done: true });
        // Stop the source now: a subscriber must not outlive its client, even on a quiet task.
        stopped = true;
        void it.return?.();
      };
      socket.once("close", onClose);
    });
    let wrote = true;
    const beat = setInterval(() => {
      if (!wrote && !closed) socket.write(chunk(": keep-alive\n\n"));
      wrote = false;
    }, o.streamKeepAliveMs ?? 15_000);
    try {
      for (;;) {
        const next = await Promise.race([it.next(), gone]);
        if (next.done || closed) {
          if (!next.done && typeof next.value !== "string") next.value.hold?.release();
          break;
        }
        wrote = true;
        const item = next.value;
        const text = typeof item === "string" ? item : item.text;
        const hold = typeof item === "string" ? undefined : item.hold;
        if (text.length < SLICE_BYTES) {
          hold?.release();
          if (!socket.write(chunk(text))) await drained();
        } else {
          // One chunk, its data written in slices: the event's text becomes bytes once, and is let go.
          const bytes = Buffer.from(text, "utf8");
          socket.write(`${bytes.length.toString(16)}\r\n`);
          await writeSliced(bytes, hold);
          if (!closed && !socket.write("\r\n")) await drained();
        }
      }
      if (!closed) socket.write("0\r\n\r\n");
    } finally {
      clearInterval(beat);
      socket.off("close", onClose);
      if (closed && !stopped) void it.return?.();
    }
  }

  /** Takes one whole request off the buffer, or returns undefined if it has not all arrived yet. */
  function parse(): { request: HttpRequest; keepAlive: boolean } | undefined {
    // A client may send empty lines between requests (RFC 9112 §2.2); skip them.
    while (buf.length >= 2 && buf[0] === 0x0d && buf[1] === 0x0a) buf = buf.subarray(2);
    const end = buf.indexOf(CRLF2);
    if (end === -1) {
      if (buf.length > o.maxHeadBytes) throw new HttpError(431, "request head too large");
      armRequestTimer();
      return undefined;
    }
    if (end > o.maxHeadBytes) throw new HttpError(431, "request head too large");
    const lines = buf.toString("latin1", 0, end).split("\r\n");
    const parts = lines[0].split(" ");
    if (parts.length !== 3 || !TOKEN.test(parts[0]) || !parts[1]) throw new HttpError(400, "malformed request line");
    const [method, target, version] = parts;
    if (version !== "HTTP/1.1" && version !== "HTTP/1.0") {
      if (/^HTTP\/\d(\.\d)?$/.test(version)) throw new HttpError(505, `${version} is not supported; use HTTP/1.1`);
      throw new HttpError(400, "malformed request line");
    }
    // Only origin-form ("/path?query"): the node is no proxy, so absolute-form, authority-form (CONNECT) and
    // "*" have no meaning here, and a target with control bytes is an attack, not a path.
    if (!ORIGIN_FORM.test(target)) throw new HttpError(400, "the request target must be a path starting with /");
    const headers = new Map<string, string>();
    parseFields(lines, 1, headers, "header");
    // RFC 9112 §3.2: a server MUST answer 400 to an HTTP/1.1 request without Host.
    if (version === "HTTP/1.1" && !headers.has("host")) throw new HttpError(400, "an HTTP/1.1 request needs a Host header");
    const connection = headers.get("connection")?.toLowerCase() ?? "";
    const keepAlive = version === "HTTP/1.1" ? !connection.includes("close") : connection.includes("keep-alive");
    const start = end + 4;
    const te = headers.get("transfer-encoding");
    const cl = headers.get("content-length");
    if (te !== undefined && cl !== undefined) throw new HttpError(400, "both Transfer-Encoding and Content-Length");
    let body: Buffer;
    let consumed: number;
    if (te !== undefined) {
      if (te.toLowerCase() !== "chunked") throw new HttpError(501, `transfer-encoding ${te} is not supported`);
      expectContinue(headers);
      const r = dechunk(start, target);
      if (!r) return undefined;
      [body, consumed] = r;
    } else {
      if (cl !== undefined && !DIGITS.test(cl)) throw new HttpError(400, "bad content-length");
      const len = cl === undefined ? 0 : Number(cl);
      if (len > o.maxBodyBytes) return tooLarge(len, target);
      if (buf.length < start + len) {
        expectContinue(headers);
        armRequestTimer();
        return undefined;
      }
      body = buf.subarray(start, start + len);
      consumed = start + len;
    }
    buf = buf.subarray(consumed);
    chunked = undefined;
    continued = false;
    return { request: { method, target, headers, body, gone: () => closed }, keepAlive };
  }

  /** Answers `Expect: 100-continue` once, so clients that wait for it send their body. */
  function expectContinue(headers: Map<string, string>): void {
    if (continued || headers.get("expect")?.toLowerCase() !== "100-continue") return;
    continued = true;
    socket.write("HTTP/1.1 100 Continue\r\n\r\n");
  }

  /** Decodes a chunked body that starts at `from`; [body, bytes consumed] once complete. */
  function dechunk(from: number, target: string): [Buffer, number] | undefined {
    const st = (chunked ??= { at: from, parts: [], size: 0 });
    for (;;) {
      const eol = buf.indexOf(CRLF, st.at);
      if (eol === -1) {
        armRequestTimer();
        return undefined;
      }
      const line = buf.toString("latin1", st.at, eol);
      const semi = line.indexOf(";");
      // BWS may stand before the ";" of an extension (RFC 9112 §7.1.1), nowhere else on the line.
      const sizeText = semi === -1 ? line : trimOws(line.slice(0, semi));
      if (!HEX.test(sizeText) || sizeText.length > 8) throw new HttpError(400, "bad chunk size");
      if (semi !== -1 && !CHUNK_EXT.test(line.slice(semi))) throw new HttpError(400, "bad chunk extension");
      const n = Number.parseInt(sizeText, 16);
      if (n === 0) {
        // Trailers, if any, end with an empty line; the empty line may follow the last-chunk line directly.
        // The last-chunk line's CRLF is the first CRLF of "\r\n\r\n" when there is no trailer.
        const trailerEnd = buf.indexOf(CRLF2, eol);
        if (trailerEnd === -1) {
          if (buf.length - eol > o.maxHeadBytes) throw new HttpError(431, "request trailers too large");
          armRequestTimer();
          return undefined;
        }
        // Trailers are checked like headers (and then dropped: nothing here reads them).
        if (trailerEnd > eol) parseFields(buf.toString("latin1", eol + 2, trailerEnd).split("\r\n"), 0, new Map(), "trailer");
        return [Buffer.concat(st.parts), trailerEnd + 4];
      }
      if (st.size + n > o.maxBodyBytes) {
        tooLarge(undefined, target);
        return undefined;
      }
      const dataEnd = eol + 2 + n;
      if (buf.length < dataEnd + 2) {
        armRequestTimer();
        return undefined;
      }
      if (buf[dataEnd] !== 0x0d || buf[dataEnd + 1] !== 0x0a) throw new HttpError(400, "chunk data not followed by CRLF");
      st.parts.push(buf.subarray(eol + 2, dataEnd));
      st.size += n;
      st.at = dataEnd + 2;
    }
  }

  function tooLarge(declared: number | undefined, target: string): undefined {
    // Answer, then drop the connection: the unread rest of the body makes it unusable.
    o.onRefused?.(413);
    write(o.tooLarge(o.maxBodyBytes, declared, target), false, "POST");
    finish();
    return undefined;
  }
  return handle;
}

/**
 * Ends connections politely: idle ones at once, busy ones once their response (a blocking call's answer, a
 * stream's last event) is written; whatever is still open after `limitMs` is cut.
 */
export async function closeGracefully(connections: Map<Socket, Http1Connection>, limitMs = 3000): Promise<void> {
  const closed = [...connections.keys()].map((s) => new Promise<void>((r) => (s.destroyed ? r() : s.once("close", () => r()))));
  for (const c of connections.values()) c.closeWhenIdle();
  let timer: ReturnType<typeof setTimeout> | undefined;
  await Promise.race([Promise.all(closed), new Promise<void>((r) => (timer = setTimeout(r, limitMs)))]);
  clearTimeout(timer);
  for (const s of connections.keys()) s.destroy();
}

/** The per-connection limits of the serve settings max_head_bytes, idle_timeout_seconds, request_timeout_seconds. */
export type HttpLimits = Pick<Http1Options, "maxHeadBytes" | "idleTimeoutMs" | "headTimeoutMs">;

/** 16 KiB heads, 65 s idle (past common proxies' 60 s), 30 s to send a whole request (slow-loris guard). */
export const HTTP_DEFAULTS: HttpLimits = { maxHeadBytes: 16 * 1024, idleTimeoutMs: 65_000, headTimeoutMs: 30_000 };

/** Connections a listener serves, so that it can close them gracefully. */
export class ConnectionSet {
  private readonly open = new Map<Socket, Http1Connection>();

  constructor(private readonly limits: HttpLimits = HTTP_DEFAULTS) {}

  /** Serves HTTP/1.1 on a new socket with this set's limits. */
  serve(
    socket: Socket,
    options: { maxBodyBytes: number; tooLarge: Http1Options["tooLarge"]; handle: Http1Options["handle"]; onRefused?: Http1Options["onRefused"] },
  ): Http1Connection {
    socket.on("close", () => this.open.delete(socket));
    const connection = serveHttp1(socket, { ...options, ...this.limits });
    this.open.set(socket, connection);
    return connection;
  }

  close(limitMs?: number): Promise<void> {
    return closeGracefully(this.open, limitMs);
  }
}
