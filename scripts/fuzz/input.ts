/**
 * One fuzz input: the bytes to send to one listener over one connection, and what a correct node does with
 * them. Input N is a function of (seed, N) alone (see prng.ts); its first random draw decides whether it is an
 * incomplete request (the slow lane), so each lane can find its own inputs without building the others.
 */
import { createHash } from "node:crypto";
import { Rng } from "./prng";
import { encode, getRequest, rpcPost } from "./http-request";
import { incompleteInput } from "./incomplete";
import { jsonRpcBody } from "./mutate-json";
import { baseHttp, headTooLarge, mutatedHttp } from "./mutate-http";
import { reachesOffHost } from "./safe-urls";
import { restRequest } from "./rest-requests";
import { rpcRequest } from "./rpc-requests";
import { serialise } from "./mutate-json";

export type Listener = "mtls" | "plain";
/**
 * (a) JSON-RPC bodies mutated, framing intact; (b) HTTP framing and transport mutated; (c) HTTP+JSON binding
 * requests mutated; incomplete requests.
 */
export type Family = "jsonrpc" | "rest" | "http" | "incomplete";
/** Which of the node's timers ends an incomplete input: request 30 s, idle 65 s, TLS handshake 10 s. */
export type NodeTimeout = "request" | "idle" | "handshake";
/**
 * tls: TLS with the fleet client certificate; tcp: plain TCP (the plain listener's normal way, plaintext on the
 * mTLS port); tls-no-cert and tls-foreign: TLS without a certificate or with one from another CA (must be
 * refused before any HTTP).
 */
export type Transport = "tls" | "tcp" | "tls-no-cert" | "tls-foreign";

export interface Piece {
  bytes: Uint8Array;
  /** Wait this long before writing this piece. */
  pauseMs: number;
}

export interface FuzzInput {
  index: number;
  listener: Listener;
  family: Family;
  /** The base request, then every mutation applied, in order. */
  labels: string[];
  pieces: Piece[];
  transport: Transport;
  /** The method of each request sent, in order (a HEAD's answer has no body). */
  methods: string[];
  /** Answers to read before closing (several for a pipeline). */
  responses: number;
  /**
   * answer: a well-formed request, the node must answer it; any: malformed, an answer or a close are both
   * right; node-timeout: incomplete, the node must end it by its own timer.
   */
  expect: "answer" | "any" | "node-timeout";
  nodeTimeout?: NodeTimeout;
  /** After the answers, keep the connection open and wait for the node to close it. */
  holdOpen?: boolean;
  /** Shut down our sending side after the last piece. */
  halfClose?: boolean;
}

export interface GenerateOptions {
  /** The node's --max-body. */
  maxBody: number;
}

/** Share of inputs that are incomplete requests (each holds a connection until the node's timer ends it). */
export const INCOMPLETE_SHARE = 0.01;

/** The first draw of input N's generator: is it an incomplete request? Cheap, so each lane can skip the others. */
export function isIncomplete(seed: number, index: number): boolean {
  return new Rng(seed, index).float() < INCOMPLETE_SHARE;
}

export function generateInput(seed: number, index: number, o: GenerateOptions): FuzzInput {
  const rng = new Rng(seed, index);
  const incomplete = rng.float() < INCOMPLETE_SHARE;
  const listener: Listener = rng.chance(0.6) ? "mtls" : "plain";
  const normal: Transport = listener === "mtls" ? "tls" : "tcp";
  if (incomplete) {
    const b = incompleteInput(rng, listener);
    return {
      index,
      listener,
      family: "incomplete",
      labels: [b.label],
      pieces: b.pieces,
      transport: b.transport,
      methods: b.methods,
      responses: b.responses,
      expect: "node-timeout",
      nodeTimeout: b.nodeTimeout,
      holdOpen: b.holdOpen,
    };
  }
  const family = rng.weighted([
    [50, "jsonrpc"],
    [15, "rest"],
    [35, "http"],
  ] as const);
  if (family === "rest") {
    let r = restRequest(rng, o.maxBody);
    const safe = !reachesOffHost(r.body);
    if (!safe)
      r = { ...r, spec: { ...r.spec, method: "GET", target: "/tasks", body: Buffer.alloc(0), framing: "none" } };
    return {
      index,
      listener,
      family: "rest",
      labels: [...r.labels, ...(safe ? [] : ["url-neutralised"])],
      pieces: [{ bytes: encode(r.spec), pauseMs: 0 }],
      transport: normal,
      methods: [r.spec.method],
      responses: 1,
      expect: r.spec.body.length > o.maxBody ? "any" : "answer",
    };
  }
  if (family === "jsonrpc") {
    const { request, body, labels } = jsonRpcBody(rng, o.maxBody);
    const safe = !reachesOffHost(body);
    const spec = rpcPost(rng, request, safe ? body : serialise(rpcRequest(rng, "ListTasks").envelope));
    const bytes = encode(spec);
    return {
      index,
      listener,
      family: "jsonrpc",
      labels: [request.method, ...labels, ...(safe ? [] : ["url-neutralised"])],
      pieces: [{ bytes, pauseMs: 0 }],
      transport: normal,
      methods: ["POST"],
      responses: 1,
      // Past the body limit the node answers 413 and closes while the body is still being written; the
      // answer can be lost to the reset that writing more then causes.
      expect: spec.body.length > o.maxBody ? "any" : "answer",
    };
  }
  return httpInput(rng, index, listener, normal, o);
}

/** Class (b): framing mutations, pipelines, slow sends, half-closes and the wrong transports. */
function httpInput(rng: Rng, index: number, listener: Listener, normal: Transport, o: GenerateOptions): FuzzInput {
  const base = { index, listener, family: "http" as const };
  const shape = rng.weighted([
    [70, "mutated"],
    [8, "pipeline"],
    [6, "slow-send"],
    [3, "half-close"],
    [1, "close-then-flood"],
    [listener === "mtls" ? 3 : 0, "tls-no-cert"],
    [listener === "mtls" ? 3 : 0, "tls-foreign"],
    [listener === "mtls" ? 2 : 0, "plaintext-to-tls"],
  ] as const);
  if (shape === "pipeline") {
    const n = rng.range(2, 8);
    const parts: Buffer[] = [];
    const methods: string[] = [];
    const labels: string[] = ["pipeline"];
    let wellFormed = true;
    for (let i = 0; i < n; i++) {
      // Mostly well-formed requests; sometimes one is mutated, and the node may stop there.
      const m = rng.chance(0.2) ? mutatedHttp(rng, o.maxBody) : { spec: baseHttp(rng), labels: [], wellFormed: true };
      if (!m.wellFormed && (m.spec.body.length > 64 * 1024 || headTooLarge(m.spec))) continue;
      parts.push(encode(m.spec));
      methods.push(m.spec.method);
      labels.push(...m.labels);
      wellFormed &&=
        m.wellFormed &&
        !m.spec.headers.some(([k, v]) => k.toLowerCase() === "connection" && /close/i.test(v)) &&
        m.spec.version === "HTTP/1.1";
    }
    return {
      ...base,
      labels,
      pieces: [{ bytes: Buffer.concat(parts), pauseMs: 0 }],
      transport: normal,
      methods,
      responses: methods.length,
      expect: wellFormed ? "answer" : "any",
    };
  }
  const m = shape === "mutated" ? mutatedHttp(rng, o.maxBody) : { spec: baseHttp(rng), labels: [], wellFormed: true };
  const bytes = encode(m.spec);
  const labels = shape === "mutated" ? m.labels : [shape];
  const common = { ...base, labels, methods: [m.spec.method], responses: 1 };
  switch (shape) {
    case "slow-send": {
      const cuts = Array.from({ length: rng.range(1, 5) }, () => rng.int(bytes.length)).sort((a, b) => a - b);
      const pieces: Piece[] = [];
      let at = 0;
      for (const cut of [...cuts, bytes.length]) {
        if (cut <= at) continue;
        pieces.push({ bytes: bytes.subarray(at, cut), pauseMs: pieces.length === 0 ? 0 : rng.range(10, 150) });
        at = cut;
      }
      return { ...common, pieces, transport: normal, expect: "answer" };
    }
    case "close-then-flood": {
      // An upload cut off by its client: the node answers the first request and closes, megabytes still on
      // their way. It must let go of the connection once the client is gone.
      const spec = getRequest(rng);
      spec.headers.push(["Connection", "close"]);
      const line = "GET /health HTTP/1.1\r\nHost: x\r\n\r\n";
      const filler = Buffer.from(line.repeat(Math.ceil((rng.range(2, 6) * 1024 * 1024) / line.length)), "latin1");
      return {
        ...common,
        labels: [shape],
        methods: [spec.method],
        pieces: [{ bytes: Buffer.concat([encode(spec), filler]), pauseMs: 0 }],
        transport: normal,
        expect: "any",
      };
    }
    case "half-close":
      return { ...common, pieces: [{ bytes, pauseMs: 0 }], transport: normal, expect: "any", halfClose: true };
    case "tls-no-cert":
    case "tls-foreign":
      return { ...common, pieces: [{ bytes, pauseMs: 0 }], transport: shape, expect: "any" };
    case "plaintext-to-tls":
      return { ...common, pieces: [{ bytes, pauseMs: 0 }], transport: "tcp", expect: "any" };
    default:
      return {
        ...common,
        pieces: [{ bytes, pauseMs: 0 }],
        transport: normal,
        expect: m.wellFormed && m.spec.body.length <= o.maxBody ? "answer" : "any",
      };
  }
}

/** A digest of everything that defines an input: equal digests, equal inputs. */
export function inputDigest(input: FuzzInput): Buffer {
  const h = createHash("sha256");
  h.update(
    JSON.stringify([
      input.index,
      input.listener,
      input.family,
      input.labels,
      input.transport,
      input.methods,
      input.responses,
      input.expect,
      input.nodeTimeout ?? null,
      input.holdOpen ?? false,
      input.halfClose ?? false,
    ]),
  );
  for (const p of input.pieces) h.update(`|${p.pauseMs}|${p.bytes.length}|`).update(p.bytes);
  return h.digest();
}
