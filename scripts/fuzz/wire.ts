/**
 * Sends one input over its own connection (node:tls or node:net) and reads what comes back, parsing the
 * node's answers strictly: a malformed answer is a finding too. The connection ends when the expected answers
 * are in, when the node closes it, or when nothing happens for too long.
 */
import { connect as tcpConnect, type Socket } from "node:net";
import { connect as tlsConnect } from "node:tls";
import type { FuzzInput, Transport } from "./input";

export interface TlsIdentity {
  cert: string;
  key: string;
  ca: string;
}

export interface Endpoint {
  port: number;
  /** The fleet client identity, and one signed by another CA (for tls-foreign). */
  identity: TlsIdentity;
  foreign: TlsIdentity;
}

export interface Answer {
  status: number;
  headers: Map<string, string>;
  body: Buffer;
}

export interface Outcome {
  answers: Answer[];
  /**
   * answered: every expected answer came (we closed); closed: the node closed or reset the connection first;
   * timeout: neither within the limit (the connection is then left to `late`); refused: the connection or TLS
   * handshake failed before any byte of a request was sent.
   */
  end: "answered" | "closed" | "timeout" | "refused";
  /** From the first byte sent (or the connection, when nothing is sent) to the end. */
  ms: number;
  error?: string;
  /** What was wrong with the node's answer bytes, if anything. */
  badAnswer?: string;
  /** The node closed in the middle of an answer. */
  cutShort?: string;
  /** Bytes after the last whole answer when the node closed (an answer cut short). */
  leftover: number;
  /** Our end's port: the node's socket for this input is the one whose peer has it. */
  localPort?: number;
  /**
   * After a timeout: resolves with the ms (since the start) at which the node finally closed, or undefined if it never
   * did.
   */
  late?: Promise<number | undefined>;
}

export interface WaitLimits {
  /** No answer, no close and no byte for this long: a hang. */
  quietMs: number;
  /** Incomplete inputs: the node must end them within this long after the last byte (its timer plus slack). */
  deadlineMs?: number;
  /** After a timeout, how long to keep watching for the node to close the connection. */
  lateWatchMs: number;
}

function open(transport: Transport, port: number, e: Endpoint): Socket {
  const base = { host: "127.0.0.1", port };
  switch (transport) {
    case "tcp":
      return tcpConnect(base);
    case "tls":
      return tlsConnect({ ...base, ...e.identity });
    case "tls-no-cert":
      return tlsConnect({ ...base, ca: e.identity.ca });
    case "tls-foreign":
      return tlsConnect({ ...base, cert: e.foreign.cert, key: e.foreign.key, ca: e.identity.ca });
  }
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export function send(input: FuzzInput, pieces: Uint8Array[], e: Endpoint, limits: WaitLimits): Promise<Outcome> {
  return new Promise((resolve) => {
    const socket = open(input.transport, e.port, e);
    const parser = new AnswerParser(input.methods);
    let started = performance.now();
    let settled = false;
    let connected = false;
    let localPort: number | undefined;
    let error: string | undefined;
    let timer: ReturnType<typeof setTimeout> | undefined;
    let closedResolve: ((ms: number) => void) | undefined;
    const closedAt = new Promise<number>((r) => (closedResolve = r));

    const finish = (end: Outcome["end"]) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      const outcome: Outcome = {
        answers: parser.answers,
        end,
        ms: performance.now() - started,
        error,
        badAnswer: parser.bad,
        cutShort: parser.cutShort,
        leftover: parser.pending(),
        localPort,
      };
      if (end === "timeout") {
        // Watch a while longer whether the node ends it by itself, then let go.
        let watch: Timer | undefined;
        outcome.late = Promise.race([
          closedAt,
          new Promise<undefined>((r) => void (watch = setTimeout(r, limits.lateWatchMs))),
        ]).then((ms) => {
          clearTimeout(watch);
          socket.destroy();
          return ms;
        });
      } else socket.destroy();
      resolve(outcome);
    };
    const arm = (ms: number) => {
      clearTimeout(timer);
      timer = setTimeout(() => finish("timeout"), ms);
    };
    const wait = () =>
      arm(input.expect === "node-timeout" && limits.deadlineMs !== undefined ? limits.deadlineMs : limits.quietMs);

    socket.on("data", (chunk: Buffer) => {
      parser.push(chunk);
      if (input.expect !== "node-timeout") wait(); // bytes are arriving: not a hang
      if (parser.bad) finish("closed");
      else if (parser.answers.length >= input.responses && !input.holdOpen) finish("answered");
    });
    socket.on("error", (err: NodeJS.ErrnoException) => void (error ??= err.code ?? err.message));
    socket.on("close", () => {
      closedResolve?.(performance.now() - started);
      parser.end();
      finish(
        connected ? (parser.answers.length >= input.responses && !input.holdOpen ? "answered" : "closed") : "refused",
      );
    });
    socket.once(input.transport === "tcp" ? "connect" : "secureConnect", async () => {
      connected = true;
      localPort = socket.localPort;
      started = performance.now();
      wait();
      for (const [i, bytes] of pieces.entries()) {
        if (input.pieces[i].pauseMs > 0) await sleep(input.pieces[i].pauseMs);
        if (settled || socket.destroyed) return;
        socket.write(bytes);
        wait();
      }
      if (input.halfClose && !settled) socket.end();
    });
    // A connection that never opens is bounded too.
    arm(Math.max(limits.quietMs, limits.deadlineMs ?? 0));
  });
}

const CRLF = Buffer.from("\r\n");
const CRLF2 = Buffer.from("\r\n\r\n");
const STATUS_LINE = /^HTTP\/1\.[01] (\d{3}) [\x20-\x7e]*$/;
const HEADER_LINE = /^([!#$%&'*+\-.^_`|~0-9A-Za-z]+): ?([\x20-\x7e\t]*)$/;

/** Reads HTTP/1.1 answers off a byte stream, strictly; 1xx interim answers are skipped. */
export class AnswerParser {
  readonly answers: Answer[] = [];
  /** The answer bytes break HTTP/1.1 (always a finding). */
  bad: string | undefined;
  /** The node closed in the middle of an answer (a finding when the request was well-formed). */
  cutShort: string | undefined;
  private buf: Buffer = Buffer.alloc(0);
  private ended = false;

  constructor(private readonly methods: string[]) {}

  push(chunk: Buffer): void {
    this.buf = this.buf.length === 0 ? chunk : Buffer.concat([this.buf, chunk]);
    this.drain();
  }

  /** The connection closed: an answer delimited by the close is complete now. */
  end(): void {
    this.ended = true;
    this.drain();
  }

  pending(): number {
    return this.buf.length;
  }

  private drain(): void {
    while (!this.bad && !this.cutShort && this.buf.length > 0) {
      const r = this.one();
      if (r === undefined) return;
      this.buf = this.buf.subarray(r);
    }
  }

  /** Parses one answer at the start of the buffer: bytes consumed, or undefined if it is not all here. */
  private one(): number | undefined {
    const headEnd = this.buf.indexOf(CRLF2);
    if (headEnd === -1) {
      if (this.buf.length > 64 * 1024) this.bad = "answer head over 64 KiB";
      else if (this.ended)
        this.cutShort = `answer head cut short: ${JSON.stringify(this.buf.toString("latin1", 0, 200))}`;
      return undefined;
    }
    const lines = this.buf.toString("latin1", 0, headEnd).split("\r\n");
    const status = STATUS_LINE.exec(lines[0]);
    if (!status) return void (this.bad = `bad status line ${JSON.stringify(lines[0].slice(0, 200))}`);
    const headers = new Map<string, string>();
    for (const line of lines.slice(1)) {
      const h = HEADER_LINE.exec(line);
      if (!h) return void (this.bad = `bad answer header ${JSON.stringify(line.slice(0, 200))}`);
      const name = h[1].toLowerCase();
      if (headers.has(name) && (name === "content-length" || name === "transfer-encoding"))
        return void (this.bad = `two ${name} headers in an answer`);
      headers.set(name, h[2].trim());
    }
    const code = Number(status[1]);
    const start = headEnd + 4;
    if (code >= 100 && code < 200) return start; // interim (100 Continue)
    const method = this.methods[this.answers.length] ?? "?";
    let body: Buffer;
    let end: number;
    const cl = headers.get("content-length");
    const te = headers.get("transfer-encoding");
    if (method === "HEAD" || code === 204 || code === 304) {
      if ((code === 204 || code === 304) && cl !== undefined && cl !== "0")
        return void (this.bad = `${code} with content-length ${cl}`);
      [body, end] = [Buffer.alloc(0), start];
    } else if (te !== undefined) {
      if (cl !== undefined) return void (this.bad = "answer with both content-length and transfer-encoding");
      if (te.toLowerCase() !== "chunked") return void (this.bad = `answer transfer-encoding ${te}`);
      const r = this.dechunk(start);
      if (r === undefined) return undefined;
      [body, end] = r;
    } else if (cl !== undefined) {
      if (!/^\d+$/.test(cl)) return void (this.bad = `answer content-length ${JSON.stringify(cl)}`);
      end = start + Number(cl);
      if (this.buf.length < end) {
        if (this.ended) this.cutShort = `answer body cut short (${this.buf.length - start} of ${cl} bytes)`;
        return undefined;
      }
      body = this.buf.subarray(start, end);
    } else {
      // Delimited by the close (the node always sends a length, so this is worth a note only if it never closes).
      if (!this.ended) return undefined;
      [body, end] = [this.buf.subarray(start), this.buf.length];
    }
    this.answers.push({ status: code, headers, body: Buffer.from(body) });
    return end;
  }

  private dechunk(from: number): [Buffer, number] | undefined {
    const parts: Buffer[] = [];
    let at = from;
    for (;;) {
      const eol = this.buf.indexOf(CRLF, at);
      if (eol === -1) return this.cut("chunk size line");
      const sizeText = this.buf.toString("latin1", at, eol);
      if (!/^[0-9a-fA-F]{1,8}$/.test(sizeText))
        return void (this.bad = `answer chunk size ${JSON.stringify(sizeText.slice(0, 50))}`);
      const n = Number.parseInt(sizeText, 16);
      if (n === 0) {
        const end = this.buf.indexOf(CRLF2, eol);
        if (end === -1 && !this.buf.subarray(eol, eol + 4).equals(CRLF2)) return this.cut("last chunk");
        return [Buffer.concat(parts), (end === -1 ? eol : end) + 4];
      }
      if (this.buf.length < eol + 2 + n + 2) return this.cut("chunk data");
      if (this.buf[eol + 2 + n] !== 0x0d || this.buf[eol + 3 + n] !== 0x0a)
        return void (this.bad = "answer chunk not followed by CRLF");
      parts.push(this.buf.subarray(eol + 2, eol + 2 + n));
      at = eol + 4 + n;
    }
  }

  private cut(what: string): undefined {
    if (this.ended) this.cutShort = `answer cut short in its ${what}`;
    return undefined;
  }
}
