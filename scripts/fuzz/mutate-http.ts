/**
 * Mutation class (b): HTTP framing. A well-formed request (a JSON-RPC POST or a GET of another route) gets one
 * to three mutations of its request line, header bytes or body framing. Each mutation says whether the
 * request stays well-formed (the node must then answer it) and none leaves the node waiting for bytes that
 * never come: those are built apart, by incomplete.ts, because only the node's own timeout can end them.
 */
import type { Rng } from "./prng";
import { getRequest, HOST, rpcPost, type HttpSpec } from "./http-request";
import { rpcRequest } from "./rpc-requests";
import { serialise } from "./mutate-json";
import { LISTENER_PORT } from "./tokens";

/** The node's request head limit (src/server/http1.ts ConnectionSet: 16 KiB). */
export const MAX_HEAD_BYTES = 16 * 1024;

interface SpecOp {
  weight: number;
  name: string;
  /** The request is still one a correct client could send: the node must answer it. */
  wellFormed: boolean;
  apply(rng: Rng, spec: HttpSpec, maxBody: number): void;
}

const BAD_BYTES = ["\r", "\n", "\0", "\x0b", "\x0c", "\x7f", "\x80", "\xff", "\r\n ", "\t"];
const header = (spec: HttpSpec, name: string) => spec.headers.find(([k]) => k.toLowerCase() === name.toLowerCase());
const setHeader = (spec: HttpSpec, name: string, value: string) => {
  const h = header(spec, name);
  if (h) h[1] = value;
  else spec.headers.push([name, value]);
};
const dropHeader = (spec: HttpSpec, name: string) =>
  void (spec.headers = spec.headers.filter(([k]) => k.toLowerCase() !== name.toLowerCase()));

const SPEC_OPS: SpecOp[] = [
  {
    weight: 4,
    name: "method-odd",
    wellFormed: false,
    apply: (rng, s) =>
      void (s.method = rng.pick([
        "get",
        "GeT",
        "PUT",
        "DELETE",
        "PATCH",
        "OPTIONS",
        "TRACE",
        "CONNECT",
        "PRI",
        "G@T",
        "",
        "X".repeat(100),
        "GET\t",
        "POST\0",
      ])),
  },
  {
    weight: 5,
    name: "target-odd",
    wellFormed: false,
    apply: (rng, s) =>
      void (s.target = rng.pick([
        "*",
        "http://127.0.0.1/",
        `http://${HOST}/`,
        "https://evil.example/",
        "127.0.0.1:443",
        "//",
        "/%00",
        "/\xff",
        "/../../etc/passwd",
        "/?A2A-Version=1.0",
        "/?A2A-Version=2",
        "/" + "a".repeat(8000),
        "/a2a/rpc/",
        "/.well-known/agent-card.json?x",
        "/health#frag",
        "/\0",
        "",
        "/ /",
      ])),
  },
  {
    weight: 4,
    name: "version-odd",
    wellFormed: false,
    apply: (rng, s) =>
      void (s.version = rng.pick([
        "HTTP/1.0",
        "HTTP/2.0",
        "HTTP/1.2",
        "HTTP/0.9",
        "http/1.1",
        "HTTP/11",
        "HTTP/1.1\0",
        "",
        "HTTPS/1.1",
        "HTTP/3",
        "HTTP/1.1 x",
      ])),
  },
  {
    weight: 3,
    name: "line-spacing",
    wellFormed: false,
    apply: (rng, s) => {
      const sp = rng.pick([" ", "\t", "\x0b", "\0"]);
      if (rng.chance(0.5)) s.method = `${s.method}${sp}`;
      else s.target = `${s.target}${sp}`;
      if (rng.chance(0.2)) s.prefix = " ";
    },
  },
  {
    weight: 8,
    name: "header-bad-byte",
    wellFormed: false,
    apply: (rng, s) => {
      if (s.headers.length === 0) s.headers.push(["X-Empty", ""]);
      const h = rng.pick(s.headers);
      const i = rng.int(h[1].length + 1);
      h[1] = h[1].slice(0, i) + rng.pick(BAD_BYTES) + h[1].slice(i);
    },
  },
  {
    weight: 4,
    name: "header-name-bad",
    wellFormed: false,
    apply: (rng, s) =>
      void s.headers.push([rng.pick(["X Y", "X-Y ", "", "X\0", "\xe9", "X:Y", "X\tY", "(x)", "x".repeat(9000)]), "v"]),
  },
  {
    weight: 2,
    name: "obs-fold",
    wellFormed: false,
    apply: (rng, s) => void s.headers.push(["X-Folded", `a\r\n${rng.pick([" ", "\t"])}b`]),
  },
  {
    weight: 4,
    name: "header-dup",
    wellFormed: false,
    apply: (rng, s) => {
      const [name, value] = rng.pick<[string, string]>([
        ["Host", "evil.example"],
        ["Host", HOST],
        ["A2A-Version", "0.3"],
        ["Content-Type", "text/plain"],
        ["Connection", "close"],
        ["Content-Type", "application/json"],
      ]);
      s.headers.splice(rng.int(s.headers.length + 1), 0, [name, value]);
    },
  },
  {
    weight: 3,
    name: "many-headers",
    wellFormed: false,
    apply: (rng, s) => {
      const n = rng.pick([100, 800, 2000]);
      for (let i = 0; i < n; i++) s.headers.push([`X-H${i}`, "v"]);
    },
  },
  {
    weight: 3,
    name: "huge-header",
    wellFormed: false,
    apply: (rng, s) =>
      void s.headers.push(["X-Big", "b".repeat(rng.pick([8000, MAX_HEAD_BYTES - 200, MAX_HEAD_BYTES + 100, 100_000]))]),
  },
  { weight: 4, name: "no-host", wellFormed: false, apply: (_rng, s) => dropHeader(s, "host") },
  {
    weight: 4,
    name: "host-odd",
    wellFormed: false,
    apply: (rng, s) =>
      setHeader(
        s,
        "Host",
        rng.pick([
          "evil.example",
          "127.0.0.1",
          `127.0.0.1:${LISTENER_PORT} `,
          `[::1]:${LISTENER_PORT}`,
          "",
          `LOCALHOST:${LISTENER_PORT}`,
          `127.0.0.1:${LISTENER_PORT}.evil`,
          `user@127.0.0.1:${LISTENER_PORT}`,
          "127.0.0.1:1",
        ]),
      ),
  },
  {
    weight: 4,
    name: "origin",
    wellFormed: true,
    apply: (rng, s) => {
      if (rng.chance(0.7))
        setHeader(
          s,
          "Origin",
          rng.pick([
            "http://evil.example",
            `http://127.0.0.1:${LISTENER_PORT}`,
            "null",
            `http://localhost:${LISTENER_PORT}`,
            "https://127.0.0.1",
            "",
          ]),
        );
      if (rng.chance(0.5))
        setHeader(s, "Sec-Fetch-Site", rng.pick(["cross-site", "same-origin", "none", "CROSS-SITE"]));
    },
  },
  {
    weight: 4,
    name: "content-type-odd",
    wellFormed: true,
    apply: (rng, s) => {
      if (rng.chance(0.2)) dropHeader(s, "content-type");
      else
        setHeader(
          s,
          "Content-Type",
          rng.pick([
            "text/plain",
            "application/x-www-form-urlencoded",
            "multipart/form-data; boundary=x",
            "application/json;",
            "APPLICATION/JSON",
            "application/jsonx",
            "+json",
            "",
            "application/json, text/plain",
            "*/*",
          ]),
        );
    },
  },
  {
    weight: 3,
    name: "a2a-version-odd",
    wellFormed: true,
    apply: (rng, s) =>
      setHeader(s, "A2A-Version", rng.pick(["", "0.3", "1.0 ", "2.0", "1", "1.0, 1.0", "\xff", "1.0.0", "01.0"])),
  },
  {
    weight: 2,
    name: "last-event-id",
    wellFormed: true,
    apply: (rng, s) =>
      setHeader(s, "Last-Event-ID", rng.pick(["", "-1", "abc", "1e3", "99999999999999999999", "0", "3", "1.5"])),
  },
  {
    weight: 2,
    name: "expect-continue",
    wellFormed: true,
    apply: (rng, s) => setHeader(s, "Expect", rng.pick(["100-continue", "100-Continue", "200-ok"])),
  },
  {
    weight: 3,
    name: "connection",
    wellFormed: true,
    apply: (rng, s) => {
      setHeader(s, "Connection", rng.pick(["close", "keep-alive", "Close", "upgrade", "close, keep-alive", "TE"]));
      if (rng.chance(0.3)) setHeader(s, "Upgrade", rng.pick(["websocket", "h2c", "HTTP/2.0"]));
    },
  },
  {
    weight: 3,
    name: "http-1.0",
    wellFormed: true,
    apply: (rng, s) => {
      s.version = "HTTP/1.0";
      if (rng.chance(0.5)) dropHeader(s, "host");
      if (rng.chance(0.3)) setHeader(s, "Connection", "keep-alive");
    },
  },
  {
    weight: 4,
    name: "cl-te-both",
    wellFormed: false,
    // Both framings, each complete for its own reading: a node that picks either one still gets a whole request.
    apply: (rng, s) => {
      if (s.body.length === 0 || rng.chance(0.5)) {
        s.framing = "chunked";
        s.contentLength = String(rng.chance(0.5) ? s.body.length : 0);
      } else {
        s.framing = "length";
        s.transferEncoding = rng.pick(["chunked", "identity", "gzip"]);
      }
    },
  },
  {
    weight: 3,
    name: "cl-dup",
    wellFormed: false,
    // A second Content-Length, never longer than the body: whichever one a node reads, the request is whole.
    apply: (rng, s) => {
      s.framing = "length";
      s.headers.push(["Content-Length", String(rng.pick([s.body.length, Math.max(0, s.body.length - 1), 0]))]);
    },
  },
  {
    weight: 5,
    name: "cl-odd",
    wellFormed: false,
    // Odd spellings the node must refuse, or lengths it must refuse or cut at; never one longer than the body
    // (that would be an incomplete request, built by incomplete.ts).
    apply: (rng, s) => {
      if (s.framing === "chunked") s.framing = "length";
      const n = s.body.length;
      s.contentLength = rng.pick([
        `+${n}`,
        "-1",
        `${n} ${n}`,
        `0x${n.toString(16)}`,
        `${n}.0`,
        `${n},${n}`,
        "99999999999999999999",
        "",
        `${n}\0`,
        `${n}a`,
        "1e2",
      ]);
    },
  },
  {
    weight: 3,
    name: "cl-short",
    wellFormed: false,
    apply: (rng, s) => {
      if (s.framing === "chunked") s.framing = "length";
      s.contentLength = String(rng.int(Math.max(1, s.body.length)));
    },
  },
  {
    weight: 4,
    name: "te-odd",
    wellFormed: false,
    apply: (rng, s) => {
      const te = rng.pick([
        "chunked, chunked",
        "gzip, chunked",
        "gzip",
        "identity",
        "\x0bchunked",
        "Chunked",
        "chunked ",
        " chunked",
        "xchunked",
        "chunked;q=1",
        "chunked\0",
        "",
      ]);
      // Without a body to misread, a node that takes the header as chunked would wait for chunks: send them.
      s.transferEncoding = te;
      if (s.body.length === 0 || rng.chance(0.5)) s.framing = "chunked";
    },
  },
  {
    weight: 3,
    name: "chunked",
    wellFormed: true,
    apply: (rng, s) => {
      s.framing = "chunked";
      s.chunkSizes = Array.from({ length: rng.range(1, 20) }, () => rng.range(1, 300));
    },
  },
  {
    weight: 2,
    name: "chunked-1-byte",
    wellFormed: true,
    apply: (_rng, s) => {
      s.framing = "chunked";
      s.chunkSizes = new Array(Math.min(s.body.length, 5000)).fill(1);
    },
  },
  {
    weight: 5,
    name: "chunk-size-odd",
    wellFormed: false,
    apply: (rng, s) => {
      s.framing = "chunked";
      const size = Math.min(s.chunkSizes?.[0] ?? s.body.length, s.body.length);
      const hex = size.toString(16);
      s.chunkSizeText = {
        chunk: 0,
        text: rng.pick([
          `${hex} `,
          ` ${hex}`,
          `${hex};ext=1`,
          `${hex};`,
          `0${hex}`,
          hex.toUpperCase(),
          `0x${hex}`,
          "g",
          "-1",
          "ffffffffff",
          "",
          "7fffffff",
          `${hex}\0`,
          `${hex};\xff`,
          "000000000" + hex,
        ]),
      };
    },
  },
  {
    weight: 3,
    name: "chunk-data-longer",
    wellFormed: false,
    apply: (rng, s) => {
      s.framing = "chunked";
      s.chunkDataSkew = { chunk: 0, by: rng.range(1, 10) };
    },
  },
  {
    weight: 4,
    name: "trailers",
    wellFormed: false,
    apply: (rng, s) => {
      s.framing = "chunked";
      s.trailers = [
        rng.pick([
          "X-T: 1",
          "X-T: a\0b",
          "X-T: a\nb",
          "X-T: a\rb",
          "no colon",
          ": v",
          "X-T:\x0bv",
          "Content-Length: 5",
          "Host: evil.example",
          `X-Big: ${"t".repeat(20_000)}`,
          "X-T : v",
          " X-T: v",
        ]),
      ];
      if (rng.chance(0.3)) s.trailers.push("X-U: 2");
    },
  },
  {
    weight: 2,
    name: "body-oversize",
    wellFormed: false,
    apply: (rng, s, maxBody) => {
      s.body = Buffer.concat([s.body, Buffer.alloc(Math.max(0, maxBody + rng.range(1, 4096) - s.body.length), 0x20)]);
      if (rng.chance(0.4)) {
        s.framing = "chunked";
        s.chunkSizes = [65536];
      }
    },
  },
  {
    weight: 2,
    name: "leading-crlf",
    wellFormed: true,
    apply: (rng, s) => void (s.prefix = "\r\n".repeat(rng.range(1, 3))),
  },
  {
    weight: 3,
    name: "leading-garbage",
    wellFormed: false,
    apply: (rng, s) =>
      void (s.prefix = rng.pick([
        "\0",
        "x",
        "\xff\xfe",
        "\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03",
        "\n",
        "\r",
        " ",
      ])),
  },
];

const OP_TABLE = SPEC_OPS.map((op) => [op.weight, op] as const);

export interface HttpMutated {
  spec: HttpSpec;
  labels: string[];
  wellFormed: boolean;
}

/** A well-formed request (a JSON-RPC POST mostly, else a GET), then 1-3 framing mutations. */
export function mutatedHttp(rng: Rng, maxBody: number): HttpMutated {
  const spec = baseHttp(rng);
  const labels: string[] = [];
  let wellFormed = true;
  for (
    let n = rng.weighted([
      [6, 1],
      [3, 2],
      [1, 3],
    ] as const);
    n > 0;
    n--
  ) {
    const op = rng.weighted(OP_TABLE);
    op.apply(rng, spec, maxBody);
    labels.push(op.name);
    wellFormed &&= op.wellFormed;
  }
  return { spec, labels, wellFormed };
}

/** A well-formed request to start from: a JSON-RPC POST (unmutated body) or a GET. */
export function baseHttp(rng: Rng): HttpSpec {
  if (rng.chance(0.25)) return getRequest(rng);
  const request = rpcRequest(rng);
  return rpcPost(rng, request, serialise(request.envelope));
}

/** The head's size once encoded: past MAX_HEAD_BYTES the node answers 431 without waiting for the rest. */
export function headTooLarge(spec: HttpSpec): boolean {
  let n = spec.method.length + spec.target.length + spec.version.length + (spec.prefix?.length ?? 0) + 4;
  for (const [k, v] of spec.headers) n += k.length + v.length + 4;
  return n > MAX_HEAD_BYTES - 64;
}
