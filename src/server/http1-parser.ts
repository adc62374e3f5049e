/*
 * The HTTP/1.1 request parser of the connection loop (http1.ts): bytes in, one request (or why not) out. It
 * touches no socket and keeps no state between calls but what it hands back (where a chunked body's decoding
 * stopped), so every shape it accepts or refuses can be tested alone.
 */

/** One request taken off the buffer. Header names are lower-case. */
export interface ParsedRequest {
  method: string;
  /** Path and query, as sent ("/", "/health?x=1"). */
  target: string;
  headers: Map<string, string>;
  body: Buffer;
  /** Whether the connection stays open after the answer (HTTP/1.1 unless "close"; HTTP/1.0 only if asked). */
  keepAlive: boolean;
}

export interface ParseLimits {
  /** Largest head (request line + headers), and largest trailer section. */
  maxHeadBytes: number;
  maxBodyBytes: number;
}

/** Where a chunked body's decoding stopped, so the next call resumes instead of starting over. */
export interface ChunkState {
  at: number;
  parts: Buffer[];
  size: number;
}

/**
 * What one call made of the buffer. `sendContinue`: the request asked for `Expect: 100-continue` at a point
 * where its body is still to come (or, chunked, whatever follows): the connection answers "100 Continue" once.
 */
export type ParseStep = { sendContinue?: boolean } & (
  | /** The request has not all arrived; call again with more bytes (and `resume`). */ {
      kind: "incomplete";
      resume?: ChunkState;
    }
  | /** A whole request: `consumed` bytes of the buffer are its own. */ {
      kind: "request";
      request: ParsedRequest;
      consumed: number;
    }
  | /** The body is over maxBodyBytes (`declared`: its Content-Length, when it had one). */ {
      kind: "too-large";
      declared: number | undefined;
      target: string;
    }
  | /** Refused as malformed or unsupported: answer `status` with `message`, then close. */ {
      kind: "refused";
      status: number;
      message: string;
    }
);

const CRLF = Buffer.from("\r\n");
const CRLF2 = Buffer.from("\r\n\r\n");
const DIGITS = /^\d+$/;
const HEX = /^[0-9a-fA-F]+$/;
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/** Bytes a field value may not hold (RFC 9110 §5.5): every control character but HTAB, so bare CR, LF and NUL. */
const BAD_VALUE_BYTE = /[\x00-\x08\x0a-\x1f\x7f]/;
/** An origin-form request target (RFC 9112 §3.2.1): an absolute path and an optional query, visible ASCII only. */
const ORIGIN_FORM = /^\/[\x21-\x7e]*$/;
/** A chunk extension list (RFC 9112 §7.1.1): `;name` or `;name=token` or `;name="quoted"`, SP/HTAB around. */
const CHUNK_EXT =
  /^(?:[ \t]*;[ \t]*[!#$%&'*+\-.^_`|~0-9A-Za-z]+(?:[ \t]*=[ \t]*(?:[!#$%&'*+\-.^_`|~0-9A-Za-z]+|"(?:[^"\\\x00-\x08\x0a-\x1f\x7f]|\\[^\x00-\x08\x0a-\x1f\x7f])*"))?)*[ \t]*$/;
/** Headers a request may carry once only: a second Host or Content-Length makes the request ambiguous. */
const SINGLE = new Set(["host", "content-length"]);

class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/** Strips SP and HTAB only (RFC 9110 §5.5): String.trim() would also strip \v, \f and NBSP, hiding bad bytes. */
function trimOws(s: string): string {
  let a = 0;
  let b = s.length;
  while (a < b && (s.charCodeAt(a) === 0x20 || s.charCodeAt(a) === 0x09)) a++;
  while (b > a && (s.charCodeAt(b - 1) === 0x20 || s.charCodeAt(b - 1) === 0x09)) b--;
  return s.slice(a, b);
}

/**
 * Parses header (or trailer) lines into `into`, lower-casing names. Refuses what RFC 9112 says a server must
 * refuse or may not guess at: obsolete folding, whitespace before the colon, control bytes in a value (a bare
 * CR or LF there is how request smuggling starts), a repeated Host or Content-Length.
 */
function parseFields(lines: string[], from: number, into: Map<string, string>, what: "header" | "trailer"): void {
  for (let i = from; i < lines.length; i++) {
    const line = lines[i];
    const colon = line.indexOf(":");
    if (colon <= 0 || !TOKEN.test(line.slice(0, colon))) throw new HttpError(400, `malformed ${what} line`);
    const name = line.slice(0, colon).toLowerCase();
    const value = trimOws(line.slice(colon + 1));
    if (BAD_VALUE_BYTE.test(value))
      throw new HttpError(400, `a control character (CR, LF, NUL...) in the value of ${what} ${name}`);
    const prev = into.get(name);
    if (prev !== undefined && SINGLE.has(name) && prev !== value)
      throw new HttpError(400, name === "host" ? "more than one Host header" : "bad content-length");
    into.set(name, prev === undefined || SINGLE.has(name) ? value : `${prev}, ${value}`);
  }
}

/**
 * Takes one request off the front of `buf`. Strict about framing: anything ambiguous (bad lengths, both
 * Content-Length and Transfer-Encoding, obsolete line folding, a target that is not a path) is refused.
 * `resume` is the `resume` of the last "incomplete" step for the same bytes, if it had one.
 */
export function parseRequest(buf: Buffer, limits: ParseLimits, resume?: ChunkState): ParseStep {
  // A client may send empty lines between requests (RFC 9112 §2.2); skip them.
  let skip = 0;
  while (buf.length - skip >= 2 && buf[skip] === 0x0d && buf[skip + 1] === 0x0a) skip += 2;
  const b = skip ? buf.subarray(skip) : buf;
  let sendContinue = false;
  try {
    const step = parseHead(b, limits, resume, () => (sendContinue = true));
    if (step.kind === "request") step.consumed += skip;
    return sendContinue ? { ...step, sendContinue } : step;
  } catch (err) {
    if (!(err instanceof HttpError)) throw err;
    const refused: ParseStep = { kind: "refused", status: err.status, message: err.message };
    return sendContinue ? { ...refused, sendContinue } : refused;
  }
}

function parseHead(
  buf: Buffer,
  limits: ParseLimits,
  resume: ChunkState | undefined,
  expectContinue: () => void,
): ParseStep {
  const end = buf.indexOf(CRLF2);
  if (end === -1) {
    if (buf.length > limits.maxHeadBytes) throw new HttpError(431, "request head too large");
    return { kind: "incomplete" };
  }
  if (end > limits.maxHeadBytes) throw new HttpError(431, "request head too large");
  const lines = buf.toString("latin1", 0, end).split("\r\n");
  const parts = lines[0].split(" ");
  if (parts.length !== 3 || !TOKEN.test(parts[0]) || !parts[1]) throw new HttpError(400, "malformed request line");
  const [method, target, version] = parts;
  if (version !== "HTTP/1.1" && version !== "HTTP/1.0") {
    if (/^HTTP\/\d(\.\d)?$/.test(version)) throw new HttpError(505, `${version} is not supported; use HTTP/1.1`);
    throw new HttpError(400, "malformed request line");
  }
  // Only origin-form ("/path?query"): the node is no proxy, so absolute-form, authority-form (CONNECT) and
  // "*" have no meaning here, and a target with control bytes is an attack, not a path.
  if (!ORIGIN_FORM.test(target)) throw new HttpError(400, "the request target must be a path starting with /");
  const headers = new Map<string, string>();
  parseFields(lines, 1, headers, "header");
  // RFC 9112 §3.2: a server MUST answer 400 to an HTTP/1.1 request without Host.
  if (version === "HTTP/1.1" && !headers.has("host"))
    throw new HttpError(400, "an HTTP/1.1 request needs a Host header");
  const connection = headers.get("connection")?.toLowerCase() ?? "";
  const keepAlive = version === "HTTP/1.1" ? !connection.includes("close") : connection.includes("keep-alive");
  const start = end + 4;
  const te = headers.get("transfer-encoding");
  const cl = headers.get("content-length");
  if (te !== undefined && cl !== undefined) throw new HttpError(400, "both Transfer-Encoding and Content-Length");
  const asksContinue = headers.get("expect")?.toLowerCase() === "100-continue";
  let body: Buffer;
  let consumed: number;
  if (te !== undefined) {
    if (te.toLowerCase() !== "chunked") throw new HttpError(501, `transfer-encoding ${te} is not supported`);
    if (asksContinue) expectContinue();
    const r = dechunk(buf, start, limits, resume);
    if (r.kind !== "done") return r.kind === "too-large" ? { kind: "too-large", declared: undefined, target } : r;
    [body, consumed] = [r.body, r.consumed];
  } else {
    if (cl !== undefined && !DIGITS.test(cl)) throw new HttpError(400, "bad content-length");
    const len = cl === undefined ? 0 : Number(cl);
    if (len > limits.maxBodyBytes) return { kind: "too-large", declared: len, target };
    if (buf.length < start + len) {
      if (asksContinue) expectContinue();
      return { kind: "incomplete" };
    }
    body = buf.subarray(start, start + len);
    consumed = start + len;
  }
  return { kind: "request", request: { method, target, headers, body, keepAlive }, consumed };
}

/** Decodes a chunked body that starts at `from`: the body and the bytes consumed once it is complete. */
function dechunk(
  buf: Buffer,
  from: number,
  limits: ParseLimits,
  resume: ChunkState | undefined,
):
  | { kind: "done"; body: Buffer; consumed: number }
  | { kind: "incomplete"; resume: ChunkState }
  | { kind: "too-large" } {
  const st = resume ?? { at: from, parts: [], size: 0 };
  for (;;) {
    const eol = buf.indexOf(CRLF, st.at);
    if (eol === -1) return { kind: "incomplete", resume: st };
    const line = buf.toString("latin1", st.at, eol);
    const semi = line.indexOf(";");
    // BWS may stand before the ";" of an extension (RFC 9112 §7.1.1), nowhere else on the line.
    const sizeText = semi === -1 ? line : trimOws(line.slice(0, semi));
    if (!HEX.test(sizeText) || sizeText.length > 8) throw new HttpError(400, "bad chunk size");
    if (semi !== -1 && !CHUNK_EXT.test(line.slice(semi))) throw new HttpError(400, "bad chunk extension");
    const n = Number.parseInt(sizeText, 16);
    if (n === 0) {
      // Trailers, if any, end with an empty line; the empty line may follow the last-chunk line directly.
      // The last-chunk line's CRLF is the first CRLF of "\r\n\r\n" when there is no trailer.
      const trailerEnd = buf.indexOf(CRLF2, eol);
      if (trailerEnd === -1) {
        if (buf.length - eol > limits.maxHeadBytes) throw new HttpError(431, "request trailers too large");
        return { kind: "incomplete", resume: st };
      }
      // Trailers are checked like headers (and then dropped: nothing here reads them).
      if (trailerEnd > eol)
        parseFields(buf.toString("latin1", eol + 2, trailerEnd).split("\r\n"), 0, new Map(), "trailer");
      return { kind: "done", body: Buffer.concat(st.parts), consumed: trailerEnd + 4 };
    }
    if (st.size + n > limits.maxBodyBytes) return { kind: "too-large" };
    const dataEnd = eol + 2 + n;
    if (buf.length < dataEnd + 2) return { kind: "incomplete", resume: st };
    if (buf[dataEnd] !== 0x0d || buf[dataEnd + 1] !== 0x0a) throw new HttpError(400, "chunk data not followed by CRLF");
    st.parts.push(buf.subarray(eol + 2, dataEnd));
    st.size += n;
    st.at = dataEnd + 2;
  }
}
