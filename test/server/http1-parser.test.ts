import { describe, expect, it } from "vitest";
import { parseRequest, type ParseStep } from "../../src/server/http1-parser";

/** The parser alone, on bytes: no socket, no timers (the connection loop around it is test/server/http1.test.ts). */

const LIMITS = { maxHeadBytes: 1024, maxBodyBytes: 64 };
const POST_T = "POST / HTTP/1.1\r\nHost: t\r\n";
const CHUNKED = "Transfer-Encoding: chunked\r\n";
const CONTINUE = "Expect: 100-continue\r\n";

function parse(text: string, limits = LIMITS): ParseStep {
  return parseRequest(Buffer.from(text, "latin1"), limits);
}

function request(step: ParseStep) {
  if (step.kind !== "request") throw new Error(`expected a request, got ${JSON.stringify(step)}`);
  return { ...step.request, body: step.request.body.toString("latin1"), consumed: step.consumed };
}

function refused(step: ParseStep): [number, string] {
  if (step.kind !== "refused") throw new Error(`expected a refusal, got ${JSON.stringify(step)}`);
  return [step.status, step.message];
}

describe("parseRequest: good requests", () => {
  it("a GET without a body: method, target, lower-cased headers, keep-alive, the bytes it used", () => {
    const text = "GET /health?x=1 HTTP/1.1\r\nHost: t\r\nX-Thing:  a b \r\n\r\n";
    const r = request(parse(`${text}GET /next`));
    expect(r).toMatchObject({ method: "GET", target: "/health?x=1", body: "", keepAlive: true, consumed: text.length });
    expect([...r.headers]).toEqual([
      ["host", "t"],
      ["x-thing", "a b"],
    ]);
  });

  it("a Content-Length body, and the pipelined request after it left alone", () => {
    const text = "POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n\r\nhello";
    const r = request(parse(`${text}POST / HTTP/1.1\r\n`));
    expect(r.body).toBe("hello");
    expect(r.consumed).toBe(text.length);
  });

  it("a chunked body with an extension and a trailer", () => {
    const text = `${POST_T}${CHUNKED}\r\n5 ; a="b"\r\nhello\r\n6\r\n world\r\n0\r\nX-Sum: 1\r\n\r\n`;
    const r = request(parse(text));
    expect(r.body).toBe("hello world");
    expect(r.consumed).toBe(text.length);
  });

  it("empty lines before a request are skipped and counted as used", () => {
    const text = "\r\n\r\nGET / HTTP/1.1\r\nHost: t\r\n\r\n";
    expect(request(parse(text)).consumed).toBe(text.length);
  });

  it("repeated headers are joined; HTTP/1.0 needs no Host and closes unless asked to keep alive", () => {
    const accepts = request(parse("GET / HTTP/1.1\r\nHost: t\r\nAccept: a\r\nAccept: b\r\n\r\n"));
    expect(accepts.headers.get("accept")).toBe("a, b");
    expect(request(parse("GET / HTTP/1.0\r\n\r\n")).keepAlive).toBe(false);
    expect(request(parse("GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")).keepAlive).toBe(true);
    expect(request(parse("GET / HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")).keepAlive).toBe(false);
  });

  it("a repeated Host or Content-Length with the same value is one", () => {
    const twice = `${POST_T}Host: t\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\nhi`;
    expect(request(parse(twice)).body).toBe("hi");
  });
});

describe("parseRequest: what has not all arrived", () => {
  it("a head without its end, a body shorter than its Content-Length", () => {
    expect(parse("GET / HTTP/1.1\r\nHost: t\r\n").kind).toBe("incomplete");
    expect(parse("POST / HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n\r\nhel").kind).toBe("incomplete");
  });

  it("a chunked body resumes where it stopped, with the state the last call handed back", () => {
    const head = "POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n";
    const first = parse(head);
    expect(first.kind).toBe("incomplete");
    const resume = first.kind === "incomplete" ? first.resume : undefined;
    expect(resume).toMatchObject({ size: 5 });
    const all = `${head}0\r\n\r\n`;
    const whole = parseRequest(Buffer.from(all, "latin1"), LIMITS, resume);
    expect(request(whole)).toMatchObject({ body: "hello", consumed: all.length });
  });

  it("Expect: 100-continue asks for a Continue while the body is still to come, not once it is there", () => {
    const head = `${POST_T}${CONTINUE}Content-Length: 5\r\n\r\n`;
    expect(parse(head)).toEqual({ kind: "incomplete", sendContinue: true });
    expect(parse(`${head}hello`).sendContinue).toBeUndefined();
    expect(parse(`${POST_T}${CONTINUE}${CHUNKED}\r\n`).sendContinue).toBe(true);
  });
});

describe("parseRequest: limits", () => {
  it("a head over maxHeadBytes is 431, whether or not its end has arrived", () => {
    const big = `GET / HTTP/1.1\r\nHost: t\r\nX: ${"a".repeat(2000)}`;
    expect(refused(parse(big))).toEqual([431, "request head too large"]);
    expect(refused(parse(`${big}\r\n\r\n`))).toEqual([431, "request head too large"]);
  });

  it("a Content-Length over maxBodyBytes is too large at once, with the length declared", () => {
    const over = parse("POST /x HTTP/1.1\r\nHost: t\r\nContent-Length: 65\r\n\r\n");
    expect(over).toEqual({ kind: "too-large", declared: 65, target: "/x" });
    expect(request(parse(`${POST_T}Content-Length: 64\r\n\r\n${"a".repeat(64)}`)).body).toHaveLength(64);
  });

  it("chunks adding up to more than maxBodyBytes are too large, with no length declared", () => {
    const step = parse(`POST /y HTTP/1.1\r\nHost: t\r\n${CHUNKED}\r\n40\r\n${"a".repeat(64)}\r\n1\r\n`);
    expect(step).toEqual({ kind: "too-large", declared: undefined, target: "/y" });
  });

  it("trailers over maxHeadBytes are 431", () => {
    const step = parse(`POST / HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nX: ${"a".repeat(2000)}`);
    expect(refused(step)).toEqual([431, "request trailers too large"]);
  });
});

describe("parseRequest: every malformed shape it refuses", () => {
  const H = "Host: t\r\n";
  const POST = `POST / HTTP/1.1\r\n${H}`;
  const TE = "Transfer-Encoding: chunked\r\n";
  it.each([
    ["a request line of two parts", `GET /\r\n${H}\r\n`, 400, "malformed request line"],
    ["a request line of four parts", `GET / x HTTP/1.1\r\n${H}\r\n`, 400, "malformed request line"],
    ["a method that is no token", `G(T / HTTP/1.1\r\n${H}\r\n`, 400, "malformed request line"],
    ["an unknown protocol", `GET / FTP/1.1\r\n${H}\r\n`, 400, "malformed request line"],
    ["another HTTP version", `GET / HTTP/2.0\r\n${H}\r\n`, 505, "HTTP/2.0 is not supported; use HTTP/1.1"],
    [
      "an absolute-form target",
      `GET http://a/ HTTP/1.1\r\n${H}\r\n`,
      400,
      "the request target must be a path starting with /",
    ],
    ["an asterisk target", `OPTIONS * HTTP/1.1\r\n${H}\r\n`, 400, "the request target must be a path starting with /"],
    [
      "a target with a control byte",
      `GET /a\x01b HTTP/1.1\r\n${H}\r\n`,
      400,
      "the request target must be a path starting with /",
    ],
    ["an HTTP/1.1 request without Host", "GET / HTTP/1.1\r\n\r\n", 400, "an HTTP/1.1 request needs a Host header"],
    ["two different Hosts", `GET / HTTP/1.1\r\n${H}Host: u\r\n\r\n`, 400, "more than one Host header"],
    ["obsolete line folding", `GET / HTTP/1.1\r\n${H}X: a\r\n b\r\n\r\n`, 400, "malformed header line"],
    ["whitespace before the colon", `GET / HTTP/1.1\r\n${H}X : a\r\n\r\n`, 400, "malformed header line"],
    [
      "a bare LF in a value",
      `GET / HTTP/1.1\r\n${H}X: a\nb\r\n\r\n`,
      400,
      "a control character (CR, LF, NUL...) in the value of header x",
    ],
    [
      "a NUL in a value",
      `GET / HTTP/1.1\r\n${H}X: a\x00b\r\n\r\n`,
      400,
      "a control character (CR, LF, NUL...) in the value of header x",
    ],
    [
      "both Transfer-Encoding and Content-Length",
      `${POST}${TE}Content-Length: 1\r\n\r\n`,
      400,
      "both Transfer-Encoding and Content-Length",
    ],
    [
      "a transfer coding other than chunked",
      `${POST}Transfer-Encoding: gzip\r\n\r\n`,
      501,
      "transfer-encoding gzip is not supported",
    ],
    [
      "two different Content-Lengths",
      `${POST}Content-Length: 1\r\nContent-Length: 2\r\n\r\n`,
      400,
      "bad content-length",
    ],
    ["a Content-Length that is not digits", `${POST}Content-Length: 0x5\r\n\r\n`, 400, "bad content-length"],
    ["a signed Content-Length", `${POST}Content-Length: +5\r\n\r\n`, 400, "bad content-length"],
    ["an empty Content-Length", `${POST}Content-Length: \r\n\r\n`, 400, "bad content-length"],
    ["a chunk size that is not hex", `${POST}${TE}\r\nzz\r\n`, 400, "bad chunk size"],
    ["a chunk size over 8 digits", `${POST}${TE}\r\n000000001\r\n`, 400, "bad chunk size"],
    ["a bad chunk extension", `${POST}${TE}\r\n1;=x\r\n`, 400, "bad chunk extension"],
    ["chunk data without its CRLF", `${POST}${TE}\r\n1\r\nab\r\n`, 400, "chunk data not followed by CRLF"],
    ["a malformed trailer", `${POST}${TE}\r\n0\r\nbad trailer\r\n\r\n`, 400, "malformed trailer line"],
  ])("%s", (_what, text, status, message) => {
    expect(refused(parse(text))).toEqual([status, message]);
  });

  it("a refusal after Expect: 100-continue on a chunked body still says a Continue was owed", () => {
    expect(parse(`${POST_T}${CONTINUE}${CHUNKED}\r\nzz\r\n`)).toEqual({
      kind: "refused",
      status: 400,
      message: "bad chunk size",
      sendContinue: true,
    });
  });
});
