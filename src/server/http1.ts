import type { Socket } from "node:net";
import type { HeldText } from "../rpc/answer-holds";
import type { AnswerHold } from "../rpc/caller";
import { parseRequest, type ChunkState, type ParsedRequest } from "./http1-parser";
import { ResponseWriter } from "./http1-writer";

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

/** A connection's handle for a graceful stop. */
export interface Http1Connection {
  /** Closes the connection now if no request is in progress, otherwise right after its response. */
  closeWhenIdle(): void;
  state(): Http1State;
}

/**
 * A small HTTP/1.1 server loop for one connection: keep-alive, Content-Length and chunked bodies, requests
 * answered one at a time in order. It replaces node:http on both listeners because, under Bun, node:http's
 * compatibility layer (streams, events, per-request objects) cost more CPU per task than all of the node's own
 * work on it; this loop does only what an A2A JSON-RPC server needs, and is strict about framing: anything
 * ambiguous (bad lengths, both Content-Length and Transfer-Encoding, obsolete line folding) is refused.
 */
export function serveHttp1(socket: Socket, o: Http1Options): Http1Connection {
  let buf: Buffer = Buffer.alloc(0);
  let busy = false;
  let closed = false;
  let requestTimer: ReturnType<typeof setTimeout> | undefined;
  let chunked: ChunkState | undefined;
  let continued = false;
  let closing = false;
  const writer = new ResponseWriter(socket, {
    idleTimeoutMs: o.idleTimeoutMs,
    streamKeepAliveMs: o.streamKeepAliveMs,
    closed: () => closed,
  });
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
    if (!requestTimer) requestTimer = setTimeout(() => fail(408, "request took too long to arrive"), o.headTimeoutMs);
  };

  function fail(status: number, message: string): void {
    if (closed) return;
    o.onRefused?.(status);
    writer.write({ status, headers: { "content-type": "text/plain" }, body: `${message}\n` }, false, "GET");
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

  async function pump(): Promise<void> {
    busy = true;
    try {
      while (!closed && buf.length > 0) {
        const request = next();
        if (!request) break; // need more bytes, or refused
        clearTimeout(requestTimer);
        requestTimer = undefined;
        socket.setTimeout(0); // a slow handler (a long blocking task) is not an idle connection
        let response: HttpResponse;
        try {
          const { method, target, headers, body } = request;
          response = await o.handle({ method, target, headers, body, gone: () => closed });
        } catch {
          response = { status: 500, headers: { "content-type": "text/plain" }, body: "internal error\n" };
        }
        if (closed) {
          // The client went away while its answer was made: what it held is given back, a stream stopped.
          response.hold?.release();
          void response.stream?.[Symbol.asyncIterator]().return?.();
          return;
        }
        const keep = request.keepAlive && !closing;
        if (response.stream) await writer.writeStream(response, response.stream, keep);
        else await writer.write(response, keep, request.method);
        if (!keep || closing) finish();
        else idle();
        // The client is not reading its answers: stop reading its requests until it takes them.
        if (!closed && socket.writableLength > HIGH_WATER_BYTES) {
          pause();
          await writer.drained();
        }
      }
      resume();
      if (!closed && buf.length > 0) armRequestTimer();
    } catch {
      socket.destroy();
    } finally {
      busy = false;
    }
  }

  /** Takes one whole request off the buffer; undefined if it has not all arrived yet, or was refused. */
  function next(): ParsedRequest | undefined {
    const step = parseRequest(buf, o, chunked);
    if (step.sendContinue && !continued) {
      continued = true;
      writer.writeContinue();
    }
    switch (step.kind) {
      case "incomplete":
        chunked = step.resume;
        armRequestTimer();
        return undefined;
      case "refused":
        fail(step.status, step.message);
        return undefined;
      case "too-large":
        // Answer, then drop the connection: the unread rest of the body makes it unusable.
        o.onRefused?.(413);
        writer.write(o.tooLarge(o.maxBodyBytes, step.declared, step.target), false, "POST");
        finish();
        return undefined;
      case "request":
        buf = buf.subarray(step.consumed);
        chunked = undefined;
        continued = false;
        return step.request;
    }
  }

  return {
    state,
    closeWhenIdle() {
      closing = true;
      if (!busy && !closed) finish();
    },
  };
}

/**
 * Ends connections politely: idle ones at once, busy ones once their response (a blocking call's answer, a
 * stream's last event) is written; whatever is still open after `limitMs` is cut.
 */
export async function closeGracefully(connections: Map<Socket, Http1Connection>, limitMs = 3000): Promise<void> {
  const closed = [...connections.keys()].map(
    (s) => new Promise<void>((r) => (s.destroyed ? r() : s.once("close", () => r()))),
  );
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
    options: {
      maxBodyBytes: number;
      tooLarge: Http1Options["tooLarge"];
      handle: Http1Options["handle"];
      onRefused?: Http1Options["onRefused"];
    },
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
