/**
 * Every call to a peer is bounded in time, step by step, so a port that accepts and then stays silent (or a
 * host that never answers) ends a command with the step that failed instead of a wait without end:
 * - connect: the TCP connection is made;
 * - handshake: then the TLS handshake is done (a fleet peer's fetch says when: its identity check runs then);
 * - answer: then the answer comes, all of it (its head and body);
 * - stream: an event stream's answer may last as long as the task, so it is bounded by silence instead: no
 *   byte for `streamIdleMs` (a node sends a keep-alive every 15 s) and the stream is taken as cut.
 * The fetch gives no sign of its TCP connection, so when the handshake is late a plain TCP connection of our
 * own says which of the two hangs; a fetch that gives no sign of its handshake either is timed as one step.
 */
import { connect as tcpConnect } from "node:net";
import type { FetchFn } from "./peer-client";

export interface PeerTimeouts {
  connectMs: number;
  handshakeMs: number;
  answerMs: number;
  streamIdleMs: number;
}

export const DEFAULT_PEER_TIMEOUTS: PeerTimeouts = {
  connectMs: 10_000,
  handshakeMs: 10_000,
  answerMs: 30_000,
  streamIdleMs: 60_000,
};

/** The four settings (peer_*_seconds), as serve's configuration holds them. */
export interface PeerTimeoutSettings {
  peerConnectTimeoutMs: number;
  peerHandshakeTimeoutMs: number;
  peerAnswerTimeoutMs: number;
  peerStreamIdleMs: number;
}

export function peerTimeouts(s: PeerTimeoutSettings): PeerTimeouts {
  return {
    connectMs: s.peerConnectTimeoutMs,
    handshakeMs: s.peerHandshakeTimeoutMs,
    answerMs: s.peerAnswerTimeoutMs,
    streamIdleMs: s.peerStreamIdleMs,
  };
}

export type TimedStep = "connect" | "handshake" | "answer" | "stream";

/** A step of a call to a peer took longer than its bound. */
export class PeerTimeoutError extends Error {
  constructor(
    readonly step: TimedStep,
    /** The origin called. */
    readonly origin: string,
    readonly seconds: number,
  ) {
    super(timeoutText(step, origin, seconds));
    this.name = "PeerTimeoutError";
  }
}

/** What a timed-out step means, for a person. */
function timeoutText(step: TimedStep, where: string, s: number): string {
  switch (step) {
    case "connect":
      return `cannot reach ${where}: no connection within ${s} s (the host does not answer: it is down, or a firewall drops the packets)`;
    case "handshake":
      return `${where} accepted the connection but did not finish a TLS handshake within ${s} s: something there accepts connections and stays silent (not an a2a-node port?), or the node is overloaded`;
    case "answer":
      return `${where} did not answer within ${s} s: the node is overloaded or stuck`;
    case "stream":
      return `${where} sent nothing on its stream for ${s} s (not even a keep-alive)`;
  }
}

/** The next step after a timeout, with the setting that waits longer. */
export function timeoutHint(err: PeerTimeoutError): string {
  switch (err.step) {
    case "connect":
      return `check that the machine is up and the port open between the two (nc -vz HOST PORT); on a slow link wait longer with --peer-connect-timeout S (peer_connect_timeout_seconds)`;
    case "handshake":
      return `check the port: 'a2a-node serve' logs its own as listen=https://… (9443 by default); to wait longer: --peer-handshake-timeout S (peer_handshake_timeout_seconds)`;
    case "answer":
      return `see that node's log and /health/ready; what it did not answer may still have been done (a task sent: 'a2a-node tasks list --agent NAME'); to wait longer: --peer-answer-timeout S (peer_answer_timeout_seconds)`;
    case "stream":
      return `to wait longer between events: --peer-stream-idle S (peer_stream_idle_seconds)`;
  }
}

/**
 * A fetch that may say when its TLS handshake is done (`secured`, called from the TLS identity check); one that
 * never calls it is timed as if connect, handshake and answer were one step.
 */
export type SecuredFetch = (url: string, init: RequestInit, secured: () => void) => Promise<Response>;

/**
 * `inner`, bounded by `timeouts`: each call (and the reading of its answer) fails with a PeerTimeoutError naming
 * the step that overran. `signalsHandshake`: `inner` calls `secured` at the end of each handshake (a request of
 * its own per connection, as a fetch with a per-request identity check makes), so connect and handshake are
 * bounded apart from the answer.
 */
export function withDeadlines(inner: SecuredFetch, timeouts: PeerTimeouts, signalsHandshake: boolean): FetchFn {
  return async (url, init) => {
    const u = new URL(url);
    const origin = u.origin;
    const tls = u.protocol === "https:";
    const handshakeKnown = signalsHandshake && tls;
    const abort = new AbortController();
    const outer = init.signal ?? undefined;
    const onOuter = () => abort.abort(outer?.reason);
    if (outer?.aborted) onOuter();
    else outer?.addEventListener("abort", onOuter, { once: true });
    let fired: TimedStep | "start" | undefined;
    let timer: ReturnType<typeof setTimeout> | undefined;
    let secured = false;
    const stop = (why: TimedStep | "start") => {
      fired = why;
      abort.abort();
    };
    const arm = (why: TimedStep | "start", ms: number, then: () => void = () => stop(why)) => {
      clearTimeout(timer);
      timer = setTimeout(then, ms);
      timer.unref?.();
    };
    if (handshakeKnown)
      // No handshake yet after its own time: a plain TCP connection, made now, says whether the host takes
      // connections at all (then the handshake is what hangs) or not (then the connection never came). The
      // call goes on meanwhile, and a handshake that ends in the meantime is not cut short.
      arm("handshake", timeouts.handshakeMs, () => {
        void tcpReachable(u.hostname.replace(/^\[|\]$/g, ""), Number(u.port || 443), timeouts.connectMs).then(
          (reached) => {
            if (!secured && !fired) stop(reached ? "handshake" : "connect");
          },
        );
      });
    // A fetch that does not say when its handshake ends: connect, handshake and answer, as one.
    else arm("start", timeouts.connectMs + (tls ? timeouts.handshakeMs : 0) + timeouts.answerMs);
    const onSecured = () => {
      if (secured || fired) return;
      secured = true;
      arm("answer", timeouts.answerMs);
    };
    const done = () => {
      clearTimeout(timer);
      outer?.removeEventListener("abort", onOuter);
    };
    let res: Response;
    try {
      res = await inner(url, { ...init, signal: abort.signal }, onSecured);
    } catch (err) {
      done();
      if (fired && !outer?.aborted)
        throw fired === "start" ? await overran(url, timeouts) : stepError(fired, origin, timeouts);
      throw err;
    }
    if (!res.body) {
      done();
      return res;
    }
    // The head came. An event stream is bounded by its silences; any other answer by the answer's time, whole.
    const stream = (res.headers.get("content-type") ?? "").includes("text/event-stream");
    if (stream) arm("stream", timeouts.streamIdleMs);
    else if (!secured) arm("answer", timeouts.answerMs);
    const reader = res.body.getReader();
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        try {
          const { done: end, value } = await reader.read();
          if (end) {
            done();
            controller.close();
            return;
          }
          if (stream) arm("stream", timeouts.streamIdleMs);
          controller.enqueue(value);
        } catch (err) {
          done();
          controller.error(fired && fired !== "start" && !outer?.aborted ? stepError(fired, origin, timeouts) : err);
        }
      },
      cancel(reason) {
        done();
        return reader.cancel(reason);
      },
    });
    return new Response(body, { status: res.status, statusText: res.statusText, headers: res.headers });
  };
}

function stepError(step: TimedStep, origin: string, t: PeerTimeouts): PeerTimeoutError {
  const ms = { connect: t.connectMs, handshake: t.handshakeMs, answer: t.answerMs, stream: t.streamIdleMs }[step];
  return new PeerTimeoutError(step, origin, ms / 1000);
}

/**
 * Which step overran, for a fetch that did not say where it was: a plain TCP connection (bounded by the connect
 * timeout) tells a host that takes no connection from one that takes it and then gives no answer.
 */
async function overran(url: string, t: PeerTimeouts): Promise<PeerTimeoutError> {
  const u = new URL(url);
  const tls = u.protocol === "https:";
  const connected = await tcpReachable(
    u.hostname.replace(/^\[|\]$/g, ""),
    Number(u.port || (tls ? 443 : 80)),
    t.connectMs,
  );
  if (!connected) return new PeerTimeoutError("connect", u.origin, t.connectMs / 1000);
  return new PeerTimeoutError("answer", u.origin, (t.answerMs + (tls ? t.handshakeMs : 0)) / 1000);
}

/** Whether a TCP connection to host:port is made within `ms` (and closed at once: nothing is sent). */
export function tcpReachable(host: string, port: number, ms: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = tcpConnect({ host, port });
    const finish = (ok: boolean) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(ok);
    };
    const timer = setTimeout(() => finish(false), ms);
    socket.once("connect", () => finish(true));
    socket.once("error", () => finish(false));
  });
}
