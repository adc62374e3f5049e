import type { Socket } from "node:net";
import http2, { type Http2Server, type ServerHttp2Session } from "node:http2";
import { tagCaller } from "../grpc/server";
import type { CallerIdentity } from "../rpc/caller";

/** The HTTP/2 connection preface a client sends first (RFC 9113 §3.4); h2c with prior knowledge starts with it. */
export const H2_PREFACE = Buffer.from("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", "latin1");

export interface Http2Limits {
  /** A session with no call open is closed (GOAWAY) after this long (idle_timeout_seconds). */
  idleTimeoutMs: number;
  /** Calls open at once on one session (SETTINGS_MAX_CONCURRENT_STREAMS); more are refused by HTTP/2 itself. */
  maxConcurrentStreams?: number;
  /** Largest header list a client may send (SETTINGS_MAX_HEADER_LIST_SIZE): max_head_bytes. */
  maxHeadBytes?: number;
}

/** gRPC clients open a handful of streams per channel; 100 is HTTP/2's recommended floor (RFC 9113 §6.5.2). */
export const DEFAULT_MAX_STREAMS = 100;

/**
 * Hands a listener's HTTP/2 connections to one HTTP/2 server (the gRPC calls), after the listener has proved
 * who the caller is: the socket is tagged with the caller first, so no stream on it is served without one.
 * It keeps the listener's sessions, so that each is bounded (an idle session is closed; streams per session
 * are capped) and the listener can close them gracefully (GOAWAY, then a cut after the grace period). The
 * listener's connection limits already count the socket from its accept, and revocation destroys the socket,
 * which ends the session and every stream on it.
 */
export class Http2Handoff {
  private readonly sessions = new Set<ServerHttp2Session>();
  private readonly sockets = new Set<Socket>();

  constructor(
    private readonly server: Http2Server,
    private readonly limits: Http2Limits,
  ) {
    server.on("session", (session: ServerHttp2Session) => this.track(session));
  }

  /** Serves HTTP/2 on `socket` (TLS with ALPN h2, or plain after the h2c preface) as `caller`. */
  accept(socket: Socket, caller: CallerIdentity): void {
    tagCaller(socket, caller);
    this.sockets.add(socket);
    socket.once("close", () => this.sockets.delete(socket));
    this.server.emit("connection", socket);
  }

  /** Sessions open now. */
  count(): number {
    return this.sessions.size;
  }

  /** Closes every session: GOAWAY (calls in progress may finish), then cut after `limitMs`. */
  async close(limitMs = 3000): Promise<void> {
    const closed = [...this.sockets].map(
      (s) => new Promise<void>((r) => (s.destroyed ? r() : s.once("close", () => r()))),
    );
    for (const s of this.sessions) if (!s.closed && !s.destroyed) s.close();
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([Promise.all(closed), new Promise<void>((r) => (timer = setTimeout(r, limitMs)))]);
    clearTimeout(timer);
    for (const s of this.sessions) s.destroy();
    for (const s of this.sockets) s.destroy();
  }

  private track(session: ServerHttp2Session): void {
    this.sessions.add(session);
    const settings: http2.Settings = { maxConcurrentStreams: this.limits.maxConcurrentStreams ?? DEFAULT_MAX_STREAMS };
    if (this.limits.maxHeadBytes) settings.maxHeaderListSize = this.limits.maxHeadBytes;
    try {
      session.settings(settings);
    } catch {
      // A session already gone: nothing to bound.
    }
    let open = 0;
    let idle: ReturnType<typeof setTimeout> | undefined;
    const arm = () => {
      clearTimeout(idle);
      idle = setTimeout(() => {
        if (open === 0 && !session.closed) {
          session.close();
          // A client that does not answer the GOAWAY is cut.
          const cut = setTimeout(() => session.destroy(), 5_000);
          cut.unref?.();
        }
      }, this.limits.idleTimeoutMs);
      idle.unref?.();
    };
    arm();
    session.on("stream", (stream) => {
      open++;
      clearTimeout(idle);
      stream.once("close", () => {
        if (--open === 0) arm();
      });
    });
    session.on("error", () => session.destroy());
    session.once("close", () => {
      clearTimeout(idle);
      this.sessions.delete(session);
    });
  }
}

/**
 * Reads a plain connection's first bytes to tell h2c (prior knowledge: the HTTP/2 preface) from HTTP/1.1, then
 * puts them back and calls `decide`: the socket is left paused with nothing consumed, for whichever server
 * takes it (which resumes it). A connection that sends nothing within `timeoutMs` is closed.
 */
export function sniffPreface(socket: Socket, timeoutMs: number, decide: (h2: boolean) => void): void {
  let seen: Buffer = Buffer.alloc(0);
  const timer = setTimeout(() => socket.destroy(), timeoutMs);
  const onData = (chunk: Buffer) => {
    seen = seen.length ? Buffer.concat([seen, chunk]) : chunk;
    const n = Math.min(seen.length, H2_PREFACE.length);
    const h2 = seen.subarray(0, n).equals(H2_PREFACE.subarray(0, n));
    // A prefix of the preface may still turn out to be something else: wait for the whole of it.
    if (h2 && n < H2_PREFACE.length) return;
    clearTimeout(timer);
    socket.off("data", onData);
    socket.off("close", onClose);
    socket.pause();
    socket.unshift(seen);
    decide(h2);
  };
  const onClose = () => clearTimeout(timer);
  socket.on("data", onData);
  socket.once("close", onClose);
  socket.on("error", () => socket.destroy());
}
