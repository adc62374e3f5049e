/**
 * Inputs only the node's own timeout can end: a body shorter than its Content-Length, a head that never ends,
 * a chunked body without its last chunk, a connection that says nothing, a TLS handshake left half done. They
 * are kept apart from the others (their own lane, see fuzz.ts) because each legitimately holds a connection
 * for as long as the node waits, and the node is not made to wait less for the fuzzer's sake.
 */
import type { Rng } from "./prng";
import { encode, getRequest } from "./http-request";
import { baseHttp } from "./mutate-http";
import type { Listener, Piece, FuzzInput, NodeTimeout } from "./input";

/** A partial TLS ClientHello record: the server has begun a handshake that never completes. */
const PARTIAL_CLIENT_HELLO = Buffer.from("160301020001000200fc0303", "hex");

type Built = Pick<FuzzInput, "pieces" | "methods" | "responses" | "transport" | "holdOpen"> & {
  label: string;
  nodeTimeout: NodeTimeout;
};

const one = (bytes: Buffer): Piece[] => [{ bytes, pauseMs: 0 }];

const KINDS: [number, string, NodeTimeout, (rng: Rng) => Omit<Built, "label" | "nodeTimeout">][] = [
  [
    20,
    "truncated-body",
    "request",
    (rng) => {
      let spec = baseHttp(rng);
      while (spec.body.length === 0) spec = baseHttp(rng);
      spec.framing = "length";
      spec.contentLength = String(spec.body.length + rng.range(1, 1000));
      return { pieces: one(encode(spec)), methods: [spec.method], responses: 1, transport: "tls" };
    },
  ],
  [
    15,
    "truncated-head",
    "request",
    (rng) => {
      const bytes = encode(baseHttp(rng));
      const headEnd = bytes.indexOf("\r\n\r\n");
      return {
        pieces: one(bytes.subarray(0, rng.range(1, headEnd + 2))),
        methods: ["?"],
        responses: 1,
        transport: "tls",
      };
    },
  ],
  [
    8,
    "lf-only-head",
    "request",
    (rng) => {
      const spec = getRequest(rng);
      spec.eol = "\n";
      return { pieces: one(encode(spec)), methods: [spec.method], responses: 1, transport: "tls" };
    },
  ],
  [
    10,
    "chunked-unfinished",
    "request",
    (rng) => {
      let spec = baseHttp(rng);
      while (spec.body.length === 0) spec = baseHttp(rng);
      spec.framing = "chunked";
      spec.noLastChunk = true;
      if (rng.chance(0.5)) spec.chunkSizeText = { chunk: 0, text: (spec.body.length + rng.range(1, 500)).toString(16) };
      return { pieces: one(encode(spec)), methods: [spec.method], responses: 1, transport: "tls" };
    },
  ],
  [
    5,
    "http09",
    "request",
    (rng) => ({
      pieces: one(Buffer.from(rng.pick(["GET /\r\n", "GET /health\r\n", "POST /\r\n"]))),
      methods: ["GET"],
      responses: 1,
      transport: "tls",
    }),
  ],
  [
    8,
    "slow-drip",
    "request",
    (rng) => {
      const bytes = encode(baseHttp(rng));
      const headEnd = bytes.indexOf("\r\n\r\n");
      const stop = rng.range(2, headEnd + 1);
      const pieces: Piece[] = [];
      for (let at = 0; at < stop;) {
        const next = Math.min(stop, at + rng.range(1, 40));
        pieces.push({ bytes: bytes.subarray(at, next), pauseMs: at === 0 ? 0 : rng.range(50, 300) });
        at = next;
        if (pieces.length >= 8) break;
      }
      return { pieces, methods: ["?"], responses: 1, transport: "tls" };
    },
  ],
  [
    5,
    "expect-continue-no-body",
    "request",
    (rng) => {
      let spec = baseHttp(rng);
      while (spec.body.length === 0) spec = baseHttp(rng);
      spec.framing = "length";
      spec.headers.push(["Expect", "100-continue"]);
      const bytes = encode(spec);
      return {
        pieces: one(bytes.subarray(0, bytes.indexOf("\r\n\r\n") + 4)),
        methods: [spec.method],
        responses: 1,
        transport: "tls",
      };
    },
  ],
  [2, "idle-after-connect", "idle", () => ({ pieces: [], methods: [], responses: 1, transport: "tls" })],
  [
    2,
    "idle-after-answer",
    "idle",
    () => ({
      pieces: one(Buffer.from("GET /health HTTP/1.1\r\nHost: 127.0.0.1:~PT~~\r\n\r\n")),
      methods: ["GET"],
      responses: 1,
      transport: "tls",
      holdOpen: true,
    }),
  ],
  [3, "silent-tcp-to-tls", "handshake", () => ({ pieces: [], methods: [], responses: 1, transport: "tcp" })],
  [
    3,
    "partial-client-hello",
    "handshake",
    () => ({ pieces: one(PARTIAL_CLIENT_HELLO), methods: [], responses: 1, transport: "tcp" }),
  ],
  // A TLS ClientHello to the plain listener: no line end in sight, so the node waits for the rest of a head.
  [
    3,
    "tls-to-plain",
    "request",
    () => ({
      pieces: one(Buffer.concat([PARTIAL_CLIENT_HELLO, Buffer.alloc(160, 7)])),
      methods: [],
      responses: 1,
      transport: "tcp",
    }),
  ],
];

export function incompleteInput(rng: Rng, listener: Listener): Built {
  const kinds = KINDS.filter(([, label, timeout]) =>
    listener === "mtls" ? label !== "tls-to-plain" : timeout !== "handshake",
  );
  const [, label, nodeTimeout, build] = rng.weighted(kinds.map((k) => [k[0], k] as const));
  const built = build(rng);
  // On the plain listener there is no TLS: "tls" means a plain TCP connection there.
  return { ...built, transport: listener === "plain" ? "tcp" : built.transport, label, nodeTimeout };
}
