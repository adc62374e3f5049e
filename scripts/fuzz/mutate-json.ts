/**
 * Mutation class (a): JSON-RPC bodies bent out of shape. Structural mutations work on the parsed value (a type
 * swapped, a field dropped or added, a string grown huge, nesting made deep, ids and methods of every wrong
 * kind, batches); text mutations then work on the serialised bytes (truncated, bytes flipped or inserted,
 * invalid UTF-8, duplicate keys). Pieces no JSON.stringify can write (a lone surrogate escape, 1e400, nesting
 * 50,000 deep) are spliced in as raw text.
 */
import type { Rng } from "./prng";
import { rpcRequest, type RpcRequest } from "./rpc-requests";

/** Text to splice into the serialised JSON exactly as it is. */
class Raw {
  constructor(readonly text: string) {}
}

type Json = unknown;
interface Slot {
  parent: Record<string, Json> | Json[];
  key: string | number;
}

export interface JsonRpcBody {
  request: RpcRequest;
  body: Buffer;
  /** The mutations applied, in order (empty: the request went out well-formed). */
  labels: string[];
}

const UNICODE = [
  '"\\ud800"',
  '"\\udc00x\\ud800"',
  '"a\\u0000b"',
  '"😀🇺🇳👩‍👩‍👧"',
  '"\\u202eRTL"',
  '"\\u200b\\ufeff"',
  `"e${"\\u0301".repeat(2000)}"`,
  '"\\uffff\\ufffe"',
  '"\\u2028\\u2029"',
  '"Ωжא中ｆｕｌｌ"',
  '"\\\\\\"\\/\\b\\f\\n\\r\\t"',
];
const NUMBERS = [
  "1e400",
  "-1e400",
  "-0",
  "0.0",
  "1.5",
  "-1",
  "9007199254740993",
  "123456789012345678901234567890",
  "1e-400",
  "5e-324",
  "2147483648",
];
const ANY_VALUES: Json[] = [0, -1, 1.5, true, false, null, "", "x", "1", [], {}, [null], { "": "" }];
/** A fresh copy of one of ANY_VALUES: a shared [] or {} mutated later would change the constant, or make a cycle. */
const anyValue = (rng: Rng): Json => structuredClone(rng.pick(ANY_VALUES));
const EXTRA_KEYS = [
  "__proto__",
  "constructor",
  "prototype",
  "toString",
  "",
  "x".repeat(300),
  "task_id",
  "🙂",
  "\u0000",
  "a.b",
  "$ref",
  "jsonrpc",
  "id",
];
const SMALL_CALL = { jsonrpc: "2.0", id: 1, method: "GetTask", params: { id: "x" } };
const METHODS: Json[] = [
  "sendmessage",
  "SENDMESSAGE",
  " SendMessage",
  "SendMessage ",
  "SendMessage\u0000",
  "__proto__",
  "constructor",
  "toString",
  "hasOwnProperty",
  "valueOf",
  "",
  "message/send",
  "SendMessage",
  "tasks/send",
  "GetTask",
  "x".repeat(5000),
  42,
  null,
  ["SendMessage"],
  {},
];

/** Every place in the tree a value can be replaced. */
function slots(root: Json): Slot[] {
  const out: Slot[] = [];
  const walk = (v: Json) => {
    if (v instanceof Raw || typeof v !== "object" || v === null) return;
    if (Array.isArray(v)) v.forEach((c, i) => (out.push({ parent: v, key: i }), walk(c)));
    else
      for (const k of Object.keys(v))
        (out.push({ parent: v as Record<string, Json>, key: k }), walk((v as Record<string, Json>)[k]));
  };
  walk(root);
  return out;
}

const containers = (root: Json) =>
  [root, ...slots(root).map((s) => get(s))].filter((v) => typeof v === "object" && v !== null && !(v instanceof Raw));
const get = (s: Slot) => (s.parent as Record<string | number, Json>)[s.key];
const set = (s: Slot, v: Json) => void ((s.parent as Record<string | number, Json>)[s.key] = v);

function deep(rng: Rng): Raw {
  const depth = rng.weighted([
    [3, 63],
    [3, 64],
    [3, 65],
    [2, 200],
    [1, 5000],
    [1, 50_000],
  ] as const);
  if (rng.chance(0.5)) return new Raw("[".repeat(depth) + "1" + "]".repeat(depth));
  return new Raw('{"a":'.repeat(depth) + "1" + "}".repeat(depth));
}

/** A long string: small, or near the node's body limit, or past it. */
function huge(rng: Rng, maxBody: number): string {
  const size = rng.weighted([
    [10, 4 * 1024],
    [4, 60 * 1024],
    [1, Math.floor(maxBody * 0.4)],
    [1, maxBody + 50 * 1024],
  ] as const);
  // Sized in bytes of JSON text: é is 2 bytes, 😀 4, and NUL is written as the 6 characters \u0000.
  const [char, width] = rng.pick([
    ["x", 1],
    ["é", 2],
    ["\u0000", 6],
    ["😀", 4],
    [" ", 1],
  ] as const);
  return char.repeat(Math.floor(size / width));
}

function snake(v: Json, rng: Rng): Json {
  if (Array.isArray(v)) return v.map((c) => snake(c, rng));
  if (typeof v !== "object" || v === null || v instanceof Raw) return v;
  const out: Record<string, Json> = {};
  for (const [k, c] of Object.entries(v)) {
    const s = k.replace(/[A-Z]/g, (m) => `_${m.toLowerCase()}`);
    if (s !== k && rng.chance(0.3)) out[k] = snake(c, rng); // both spellings: which wins?
    out[rng.chance(0.7) ? s : k] = snake(c, rng);
  }
  return out;
}

type ValueOp = (rng: Rng, env: Record<string, Json>, req: RpcRequest, maxBody: number) => Json | void;

/** Each returns a replacement for the whole body when it changes the body's shape. */
const VALUE_OPS: [number, string, ValueOp][] = [
  [
    10,
    "wrong-type",
    (rng, env) => {
      const s = slots(env);
      if (s.length) set(rng.pick(s), anyValue(rng));
    },
  ],
  [
    8,
    "drop-field",
    (rng, env) => {
      const objs = containers(env).filter((c) => !Array.isArray(c) && Object.keys(c as object).length > 0) as Record<
        string,
        Json
      >[];
      if (!objs.length) return;
      const o = rng.pick(objs);
      delete o[rng.pick(Object.keys(o))];
    },
  ],
  [
    6,
    "extra-field",
    (rng, env) => {
      const objs = containers(env).filter((c) => !Array.isArray(c)) as Record<string, Json>[];
      Object.defineProperty(rng.pick(objs), rng.pick(EXTRA_KEYS), {
        value: anyValue(rng),
        enumerable: true,
        writable: true,
        configurable: true,
      });
    },
  ],
  [
    3,
    "huge-string",
    (rng, env, _req, maxBody) => {
      const s = slots(env).filter((x) => typeof get(x) === "string");
      if (s.length) set(rng.pick(s), huge(rng, maxBody));
    },
  ],
  [
    3,
    "deep-nesting",
    (rng, env) => {
      const s = slots(env);
      if (s.length) set(rng.pick(s), deep(rng));
    },
  ],
  [
    6,
    "unicode",
    (rng, env) => {
      const s = slots(env);
      const strings = s.filter((x) => typeof get(x) === "string");
      const target = strings.length && rng.chance(0.8) ? rng.pick(strings) : rng.pick(s);
      if (target) set(target, new Raw(rng.pick(UNICODE)));
    },
  ],
  [
    4,
    "number-edge",
    (rng, env) => {
      const s = slots(env);
      if (s.length) set(rng.pick(s), new Raw(rng.pick(NUMBERS)));
    },
  ],
  [
    4,
    "number-as-string",
    (rng, env) => {
      const s = slots(env).filter((x) => typeof get(x) === "number" || typeof get(x) === "boolean");
      if (s.length) {
        const t = rng.pick(s);
        set(t, String(get(t)));
      } else if ("id" in env) env.id = String(env.id);
    },
  ],
  [
    6,
    "id-variant",
    (rng, env) => {
      if (rng.chance(0.25))
        delete env.id; // a notification
      else
        env.id = rng.chance(0.6)
          ? anyValue(rng)
          : rng.pick([new Raw(rng.pick(NUMBERS)), "i".repeat(10_000), "\u0000", new Raw('"\\ud800"')]);
    },
  ],
  [
    3,
    "jsonrpc-variant",
    (rng, env) => {
      if (rng.chance(0.3)) delete env.jsonrpc;
      else env.jsonrpc = rng.pick(["1.0", 2, 2.0, "2.0 ", null, "2", "2.00"]);
    },
  ],
  [
    5,
    "method-variant",
    (rng, env) => {
      env.method = structuredClone(rng.pick(METHODS));
    },
  ],
  [
    3,
    "version-swap",
    (_rng, _env, req) => {
      req.version = req.version === null ? "1.0" : null;
    },
  ],
  [
    4,
    "params-variant",
    (rng, env) => {
      if (rng.chance(0.25)) delete env.params;
      else env.params = rng.pick<Json>([[], [env.params], null, "x", 0, true, {}]);
    },
  ],
  [
    3,
    "snake-case",
    (rng, env) => {
      if (env.params) env.params = snake(env.params, rng);
    },
  ],
  [
    2,
    "array-blowup",
    (rng, env) => {
      const arrays = containers(env).filter((c) => Array.isArray(c) && c.length > 0) as Json[][];
      const n = rng.pick([1000, 5000, 20_000]);
      // Copies of a small element only: a huge string repeated 20,000 times would exhaust the fuzzer instead.
      // Copies, not the same object n times: a later mutation inside it would otherwise be repeated n times too.
      if (arrays.length) {
        const a = rng.pick(arrays);
        const first = serialise(a[0]).length < 200 ? a[0] : 0;
        for (let i = 0; i < n; i++) a.push(structuredClone(first));
      } else env.params = { ...(env.params as object), list: new Array(n).fill(0) };
    },
  ],
  [
    3,
    "batch",
    (rng, env) =>
      rng.pick<Json>([[], [env], [env, rpcRequest(rng).envelope], [1, "x"], [[]], new Array(200).fill(SMALL_CALL)]),
  ],
  [1, "scalar-body", (rng) => new Raw(rng.pick(["null", "1", '"str"', "true", "[]", "{}", "   "]))],
];

type TextOp = (rng: Rng, b: Buffer) => Buffer;
const at = (rng: Rng, b: Buffer) => (b.length ? rng.int(b.length) : 0);
const splice = (b: Buffer, i: number, del: number, ins: Buffer | string) =>
  Buffer.concat([b.subarray(0, i), Buffer.from(ins as string), b.subarray(i + del)]);

const TEXT_OPS: [number, string, TextOp][] = [
  [4, "truncate", (rng, b) => b.subarray(0, at(rng, b))],
  [
    4,
    "byte-flip",
    (rng, b) => {
      const c = Buffer.from(b);
      for (let n = rng.range(1, 3); n > 0 && c.length; n--) c[at(rng, c)] ^= 1 << rng.int(8);
      return c;
    },
  ],
  [
    3,
    "insert-byte",
    (rng, b) =>
      splice(b, at(rng, b), 0, Buffer.from([rng.pick([0x00, 0xff, 0x80, 0x22, 0x7b, 0x5c, 0x2c, 0x0a, 0x0d, 0x01])])),
  ],
  [2, "delete-byte", (rng, b) => splice(b, at(rng, b), 1, "")],
  [
    3,
    "invalid-utf8",
    (rng, b) => {
      // Inside a string when possible: the JSON stays well-formed and only the UTF-8 is wrong.
      const q = b.indexOf(0x22, at(rng, b));
      const bad = Buffer.from(
        rng.pick([[0xff], [0xc0, 0x80], [0xed, 0xa0, 0x80], [0xf4, 0x90, 0x80, 0x80], [0xe2, 0x82]]),
      );
      return splice(b, q === -1 ? at(rng, b) : q + 1, 0, bad);
    },
  ],
  [
    2,
    "control-char",
    (rng, b) => {
      const q = b.indexOf(0x22, at(rng, b));
      return splice(b, q === -1 ? 0 : q + 1, 0, Buffer.from([rng.pick([0x00, 0x01, 0x0a, 0x1f, 0x7f])]));
    },
  ],
  [1, "bom", (_rng, b) => Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), b])],
  [
    2,
    "whitespace",
    (rng, b) =>
      splice(
        b,
        rng.chance(0.5) ? 0 : b.length,
        0,
        rng.pick([" ".repeat(100_000), "\t\n\r ".repeat(1000), "\u00a0", "\u000b"]),
      ),
  ],
  [
    3,
    "duplicate-key",
    (rng, b) => {
      const i = b.indexOf(0x7b);
      const dup = rng.pick([
        '"id":1,',
        '"method":"GetTask",',
        '"jsonrpc":"1.0",',
        '"params":{},',
        '"params":{"id":"x"},',
        '"id":null,',
      ]);
      return i === -1 ? b : splice(b, i + 1, 0, dup);
    },
  ],
  [
    2,
    "trailing-garbage",
    (rng, b) => Buffer.concat([b, Buffer.from(rng.pick(["}", "]", "x", "\u0000", "{}", ",", "\n\n{}"]))]),
  ],
  [1, "comment", (rng, b) => splice(b, b.indexOf(0x7b) + 1, 0, rng.pick(["/* c */", "// c\n"]))],
  [1, "empty", () => Buffer.alloc(0)],
  [1, "single-quotes", (_rng, b) => Buffer.from(b.toString("latin1").replace(/"/g, "'"), "latin1")],
];

const VALUE_TABLE = VALUE_OPS.map(([w, name, op]) => [w, [name, op]] as const);
const TEXT_TABLE = TEXT_OPS.map(([w, name, op]) => [w, [name, op]] as const);

/** Serialises with Raw pieces spliced in (by marker: JSON.stringify cannot emit invalid JSON itself). */
export function serialise(value: Json, rng?: Rng): Buffer {
  const raws: string[] = [];
  const text = JSON.stringify(
    value,
    (_k, v) => (v instanceof Raw ? `\u0001RAW${raws.push(v.text) - 1}\u0001` : v),
    rng?.chance(0.1) ? 2 : undefined,
  );
  if (text === undefined) return Buffer.alloc(0);
  const out = raws.length === 0 ? text : text.replace(/"\\u0001RAW(\d+)\\u0001"/g, (_m, n: string) => raws[Number(n)]);
  return Buffer.from(out, "utf8");
}

/** A request of any method, then 0-3 structural mutations, then maybe one text mutation. */
export function jsonRpcBody(rng: Rng, maxBody: number): JsonRpcBody {
  const request = rpcRequest(rng);
  const labels: string[] = [];
  let body: Json = request.envelope;
  const n = rng.weighted([
    [1, 0],
    [5, 1],
    [3, 2],
    [1, 3],
  ] as const);
  for (let i = 0; i < n; i++) {
    const [name, op] = rng.weighted(VALUE_TABLE);
    // Ops that replace the body apply to the envelope; once the body is no longer it, only text ops follow.
    if (body !== request.envelope) break;
    const replaced = op(rng, request.envelope, request, maxBody);
    labels.push(name);
    if (replaced !== undefined) body = replaced;
  }
  return { request, body: finish(rng, serialise(body, rng), maxBody, labels), labels };
}

/** The mutations that make sense on any JSON value, not only on a JSON-RPC envelope. */
const GENERIC = new Set([
  "wrong-type",
  "drop-field",
  "extra-field",
  "huge-string",
  "deep-nesting",
  "unicode",
  "number-edge",
  "number-as-string",
  "array-blowup",
  "scalar-body",
]);
const GENERIC_TABLE = VALUE_OPS.filter(([, name]) => GENERIC.has(name)).map(
  ([w, name, op]) => [w, [name, op]] as const,
);

/** Any JSON body (an HTTP+JSON request's): 1-2 structural mutations, then maybe one text mutation. */
export function mutateBody(rng: Rng, value: Json, maxBody: number): { body: Buffer; labels: string[] } {
  // A holder, so that a mutation can replace the body itself as one of its slots.
  const holder: Record<string, Json> = { body: structuredClone(value) };
  const labels: string[] = [];
  const none: RpcRequest = { version: "1.0", method: "", streaming: false, envelope: {} };
  for (let n = rng.range(1, 2); n > 0; n--) {
    if (rng.chance(0.15)) {
      holder.body = snake(holder.body, rng);
      labels.push("snake-case");
      continue;
    }
    const [name, op] = rng.weighted(GENERIC_TABLE);
    const replaced = op(rng, holder, none, maxBody);
    labels.push(name);
    if (replaced !== undefined) holder.body = replaced;
  }
  const bytes = holder.body === undefined ? Buffer.alloc(0) : serialise(holder.body, rng);
  return { body: finish(rng, bytes, maxBody, labels), labels };
}

/** Caps the size, then maybe one text mutation. */
function finish(rng: Rng, bytes: Buffer, maxBody: number, labels: string[]): Buffer {
  // Whatever the mutations combined into, no body goes far past the node's limit: beyond it, size proves nothing.
  if (bytes.length > maxBody + 256 * 1024) {
    bytes = bytes.subarray(0, maxBody + 64 * 1024);
    labels.push("capped");
  }
  if (rng.chance(0.25)) {
    const [name, op] = rng.weighted(TEXT_TABLE);
    bytes = op(rng, bytes);
    labels.push(name);
  }
  return bytes;
}
