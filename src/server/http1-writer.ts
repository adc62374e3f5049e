import type { Socket } from "node:net";
import type { HeldText } from "../rpc/answer-holds";
import type { AnswerHold } from "../rpc/caller";
import type { HttpResponse } from "./http1";

/*
 * The response side of the HTTP/1.1 connection loop (http1.ts): heads, bodies written whole or in slices under
 * backpressure, and chunked event streams with keep-alive comments.
 */

/**
 * A body (or one event of a stream) this long or longer is written in slices of this size, each once the
 * socket has taken the one before: what waits for a client that reads slowly, or not at all, is the answer as
 * built, not copies of it in the socket's buffers.
 */
const SLICE_BYTES = 64 * 1024;

const REASONS: Record<number, string> = {
  100: "Continue",
  200: "OK",
  204: "No Content",
  304: "Not Modified",
  400: "Bad Request",
  403: "Forbidden",
  404: "Not Found",
  405: "Method Not Allowed",
  408: "Request Timeout",
  413: "Content Too Large",
  415: "Unsupported Media Type",
  429: "Too Many Requests",
  431: "Request Header Fields Too Large",
  500: "Internal Server Error",
  501: "Not Implemented",
  503: "Service Unavailable",
  505: "HTTP Version Not Supported",
};

function chunk(text: string): string {
  return `${Buffer.byteLength(text).toString(16)}\r\n${text}\r\n`;
}

export interface WriterOptions {
  /** A client that takes nothing of what waits for it for this long is cut. */
  idleTimeoutMs: number;
  /** On a quiet stream, a comment line is sent this often so proxies and clients do not cut it. */
  streamKeepAliveMs?: number;
  /** Whether the connection is closed (by the client, or ended by the loop): nothing more is written then. */
  closed(): boolean;
}

/** Writes one connection's responses to its socket. */
export class ResponseWriter {
  constructor(
    private readonly socket: Socket,
    private readonly o: WriterOptions,
  ) {}

  /**
   * Writes a response. A small one is one write: head and body leave together in one TLS record, a text body
   * (every JSON-RPC answer) joined to the head as one string, encoded once by the socket, instead of as three
   * buffers copied into a fourth. A large one is written in slices under backpressure (see writeSliced);
   * the promise resolves once it is all taken by the socket (or the connection closed).
   */
  write(res: HttpResponse, keepAlive: boolean, method: string): void | Promise<void> {
    const socket = this.socket;
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
    if (res.headers)
      for (const k in res.headers) if (k.toLowerCase() !== "content-length") head += `${k}: ${res.headers[k]}\r\n`;
    head += "\r\n";
    if (bodyless || length === 0) {
      res.hold?.release();
      socket.write(head);
    } else if (typeof body === "string") {
      res.hold?.release();
      socket.write(head + body);
    } else if (body.length >= SLICE_BYTES) {
      socket.write(head);
      return this.writeSliced(body, res.hold);
    } else {
      res.hold?.release();
      socket.write(Buffer.concat([Buffer.from(head, "latin1"), body]));
    }
  }

  /** Answers `Expect: 100-continue`, so a client that waits for it sends its body. */
  writeContinue(): void {
    this.socket.write("HTTP/1.1 100 Continue\r\n\r\n");
  }

  /**
   * Writes `bytes` a slice at a time, each once the socket has taken the last (or at once while it takes
   * them), giving each slice back to `hold` as it goes; the rest is given back if the connection closes.
   */
  private async writeSliced(bytes: Uint8Array, hold: AnswerHold | undefined): Promise<void> {
    try {
      for (let at = 0; at < bytes.length && !this.o.closed(); at += SLICE_BYTES) {
        const slice = bytes.subarray(at, at + SLICE_BYTES);
        if (!this.socket.write(slice)) await this.drained();
        hold?.release(slice.length);
      }
    } finally {
      hold?.release();
    }
  }

  /**
   * Resolves when the socket can take more, or has closed. A client that takes nothing of what waits for it
   * for idleTimeoutMs is cut: it holds that much of the node's memory (and of its caller's answer budget).
   */
  drained(): Promise<void> {
    const socket = this.socket;
    return new Promise((resolve) => {
      const stalled = setTimeout(() => socket.destroy(), this.o.idleTimeoutMs);
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
  async writeStream(res: HttpResponse, source: AsyncIterable<string | HeldText>, keepAlive: boolean): Promise<void> {
    const socket = this.socket;
    const closed = () => this.o.closed();
    let head = `HTTP/1.1 ${res.status} ${REASONS[res.status] ?? "Status"}\r\ntransfer-encoding: chunked\r\n`;
    if (!keepAlive) head += "connection: close\r\n";
    if (res.headers)
      for (const k in res.headers) if (k.toLowerCase() !== "content-length") head += `${k}: ${res.headers[k]}\r\n`;
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
      if (!wrote && !closed()) socket.write(chunk(": keep-alive\n\n"));
      wrote = false;
    }, this.o.streamKeepAliveMs ?? 15_000);
    try {
      for (;;) {
        const next = await Promise.race([it.next(), gone]);
        if (next.done || closed()) {
          if (!next.done && typeof next.value !== "string") next.value.hold?.release();
          break;
        }
        wrote = true;
        const item = next.value;
        const text = typeof item === "string" ? item : item.text;
        const hold = typeof item === "string" ? undefined : item.hold;
        if (text.length < SLICE_BYTES) {
          hold?.release();
          if (!socket.write(chunk(text))) await this.drained();
        } else {
          // One chunk, its data written in slices: the event's text becomes bytes once, and is let go.
          const bytes = Buffer.from(text, "utf8");
          socket.write(`${bytes.length.toString(16)}\r\n`);
          await this.writeSliced(bytes, hold);
          if (!closed() && !socket.write("\r\n")) await this.drained();
        }
      }
      if (!closed()) socket.write("0\r\n\r\n");
    } finally {
      clearInterval(beat);
      socket.off("close", onClose);
      if (closed() && !stopped) void it.return?.();
    }
  }
}
