/**
 * An HTTP/1.1 request as the fuzzer builds it: every part (request line, header bytes, framing) is kept
 * separately until it is encoded, so a mutation can bend one part and leave the rest as a client would send it.
 */
import type { Rng } from "./prng";
import type { RpcRequest } from "./rpc-requests";
import { LISTENER_PORT } from "./tokens";

export interface HttpSpec {
  method: string;
  target: string;
  version: string;
  /** Raw name and value, written as `name: value`; either may hold any byte (latin1). */
  headers: [string, string][];
  body: Buffer;
  framing: "length" | "chunked" | "none";
  /** Replaces the Content-Length the body implies (a wrong or odd length); with framing "none" it adds one. */
  contentLength?: string;
  /** Adds a Transfer-Encoding header (with framing "chunked": replaces "chunked"). */
  transferEncoding?: string;
  /** Chunked framing: sizes of the chunks the body is cut into (the rest goes in one last chunk). */
  chunkSizes?: number[];
  /** Chunked framing: the size line written for chunk N instead of its hex length. */
  chunkSizeText?: { chunk: number; text: string };
  /** Chunked framing: chunk N carries this many bytes more (+) or fewer (-) than its size line says. */
  chunkDataSkew?: { chunk: number; by: number };
  /** Chunked framing: trailer lines after the last chunk. */
  trailers?: string[];
  /** Chunked framing: leave out the last chunk (the body never ends). */
  noLastChunk?: boolean;
  /** Written before the request line. */
  prefix?: string;
  /** Line ending of the head (a bare LF never ends a head for the node). */
  eol?: string;
}

export const HOST = `127.0.0.1:${LISTENER_PORT}`;

/** A well-formed JSON-RPC POST of `body`. */
export function rpcPost(rng: Rng, request: RpcRequest | undefined, body: Buffer): HttpSpec {
  const headers: [string, string][] = [["Host", rng.chance(0.9) ? HOST : `localhost:${LISTENER_PORT}`]];
  headers.push([
    "Content-Type",
    rng.weighted([
      [8, "application/json"],
      [1, "application/a2a+json"],
      [1, "application/json; charset=utf-8"],
    ] as const),
  ]);
  if (request?.version) headers.push([rng.chance(0.8) ? "A2A-Version" : "a2a-version", request.version]);
  if (rng.chance(0.2)) headers.push(["User-Agent", "a2a-fuzz"]);
  if (rng.chance(0.1)) headers.push(["Accept", request?.streaming ? "text/event-stream" : "application/json"]);
  return {
    method: "POST",
    target: rng.chance(0.9) ? "/" : "/a2a/rpc",
    version: "HTTP/1.1",
    headers,
    body,
    framing: rng.chance(0.1) ? "chunked" : "length",
    chunkSizes: [rng.range(1, 64), rng.range(1, 4096)],
  };
}

const GET_PATHS = [
  "/health",
  "/health/ready",
  "/.well-known/agent-card.json",
  "/openapi",
  "/openapi/json",
  "/",
  "/nope",
  "/health?x=1",
];

/** A well-formed GET of one of the node's other routes (or one it does not have). */
export function getRequest(rng: Rng): HttpSpec {
  const headers: [string, string][] = [["Host", HOST]];
  if (rng.chance(0.2)) headers.push(["If-None-Match", rng.pick(['"x"', "*", ""])]);
  return {
    method: rng.chance(0.9) ? "GET" : "HEAD",
    target: rng.pick(GET_PATHS),
    version: "HTTP/1.1",
    headers,
    body: Buffer.alloc(0),
    framing: "none",
  };
}

/** The request's bytes: head, then the body framed as the spec says. */
export function encode(spec: HttpSpec): Buffer {
  const eol = spec.eol ?? "\r\n";
  let head = `${spec.prefix ?? ""}${spec.method} ${spec.target} ${spec.version}${eol}`;
  for (const [k, v] of spec.headers) head += `${k}: ${v}${eol}`;
  let body: Buffer = spec.body;
  if (spec.framing === "chunked") {
    head += `Transfer-Encoding: ${spec.transferEncoding ?? "chunked"}${eol}`;
    if (spec.contentLength !== undefined) head += `Content-Length: ${spec.contentLength}${eol}`;
    body = chunked(spec);
  } else {
    if (spec.framing === "length" || spec.contentLength !== undefined)
      head += `Content-Length: ${spec.contentLength ?? spec.body.length}${eol}`;
    if (spec.transferEncoding !== undefined) head += `Transfer-Encoding: ${spec.transferEncoding}${eol}`;
  }
  return Buffer.concat([Buffer.from(head + eol, "latin1"), body]);
}

function chunked(spec: HttpSpec): Buffer {
  const parts: Buffer[] = [];
  let at = 0;
  const sizes = [...(spec.chunkSizes ?? []), Number.MAX_SAFE_INTEGER];
  for (let n = 0; at < spec.body.length; n++) {
    const size = Math.min(sizes[Math.min(n, sizes.length - 1)], spec.body.length - at);
    const skew = spec.chunkDataSkew?.chunk === n ? spec.chunkDataSkew.by : 0;
    const data = spec.body.subarray(at, at + Math.max(0, size + skew));
    const sizeLine = spec.chunkSizeText?.chunk === n ? spec.chunkSizeText.text : size.toString(16);
    parts.push(Buffer.from(`${sizeLine}\r\n`, "latin1"), data, Buffer.from("\r\n"));
    at += size;
  }
  if (!spec.noLastChunk)
    parts.push(Buffer.from(`0\r\n${(spec.trailers ?? []).map((t) => `${t}\r\n`).join("")}\r\n`, "latin1"));
  return Buffer.concat(parts);
}
