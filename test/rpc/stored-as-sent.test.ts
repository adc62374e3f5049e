/**
 * What a caller stores is what it gets back: a number JSON.parse would change (1e400 read as Infinity and
 * stored as null; a 30-digit integer rounded to a float) is refused with -32602 instead of being changed,
 * on both bindings and on v0.3; and a part's contents are checked as a2a.proto describes them (`raw` is
 * base64 bytes, `url` points to the file's content).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EchoExecutor } from "../../src/executors/echo-executor";
import { JsonRpcTransport } from "../../src/rpc/jsonrpc-transport";
import { HttpJsonTransport } from "../../src/rpc/http-json-transport";
import { matchRoute } from "../../src/rpc/http-json-routes";
import { v1Methods } from "../../src/rpc/v1-methods";
import { v03Methods } from "../../src/rpc/v03/methods";
import { keepsExactly, scanJson } from "../../src/protocol/json-depth";
import { taskFixture, type TaskFixture } from "../helpers/task-fixture";

let fixture: TaskFixture;
let rpc: JsonRpcTransport;
let rest: HttpJsonTransport;
const ctx = { caller: { name: "alpha", fingerprint: "AA" } };

beforeAll(() => {
  fixture = taskFixture({
    executor: new EchoExecutor(),
    runnerOptions: { maxConcurrent: 2, maxQueued: 10, historyMessages: 5 },
    prefix: "a2a-stored-",
  });
  const { handler } = fixture;
  rpc = new JsonRpcTransport({ v1: v1Methods(handler), v03: v03Methods(handler) });
  rest = new HttpJsonTransport(v1Methods(handler));
});
afterAll(() => {
  fixture.close();
});

/** A SendMessage body, as text, with `inner` spliced in as written (so numbers keep their spelling). */
const sendText = (messageJson: string, version: "v1" | "v03" = "v1") =>
  version === "v1"
    ? `{"jsonrpc":"2.0","id":7,"method":"SendMessage","params":{"message":${messageJson}}}`
    : `{"jsonrpc":"2.0","id":7,"method":"message/send","params":{"message":${messageJson}}}`;
const msg = (parts: string, extra = "") =>
  `{"messageId":"${crypto.randomUUID()}","role":"ROLE_USER","parts":[${parts}]${extra}}`;
const msg03 = (parts: string) =>
  `{"kind":"message","messageId":"${crypto.randomUUID()}","role":"user","parts":[${parts}]}`;

async function viaRpc(body: string, version = "1.0") {
  const out = await rpc.handle(body, version, ctx);
  if (out.kind !== "json") throw new Error("expected a JSON answer");
  return JSON.parse(out.body);
}
async function viaRest(body: string) {
  const out = await rest.handle(
    matchRoute("/message:send")!,
    { method: "POST", path: "/message:send", query: "", body, contentType: "application/json", version: "1.0" },
    ctx,
  );
  if (out.kind !== "json") throw new Error("expected a JSON answer");
  return { status: out.status, body: JSON.parse(out.body) };
}

describe("numbers a float cannot hold are refused, not changed", () => {
  const changed = [
    "1e400",
    "-1e400",
    "123456789012345678901234567890",
    "0.30000000000000001",
    "1e-400",
    "9007199254740993",
  ];
  for (const n of changed) {
    it(`${n} in a data part: -32602 naming the number over JSON-RPC, HTTP 400 over HTTP+JSON, nothing stored`, async () => {
      const parts = `{"data":{"n":${n}}}`;
      const before = (await viaRpc(`{"jsonrpc":"2.0","id":1,"method":"ListTasks","params":{}}`)).result.totalSize;
      const r = await viaRpc(sendText(msg(parts)));
      expect(r.id).toBe(7);
      expect(r.error?.code).toBe(-32602);
      expect(r.error.message).toContain(n.slice(0, 20));
      expect(r.error.message).toContain("send it as a string");
      const h = await viaRest(`{"message":${msg(parts)}}`);
      expect(h.status).toBe(400);
      expect(h.body.error.details[0].reason).toBe("INVALID_PARAMS");
      expect(h.body.error.message).toContain(n.slice(0, 20));
      expect((await viaRpc(`{"jsonrpc":"2.0","id":1,"method":"ListTasks","params":{}}`)).result.totalSize).toBe(before);
    });
  }

  it("in message metadata and over v0.3 too", async () => {
    const meta = await viaRpc(sendText(msg(`{"text":"hi"}`, `,"metadata":{"big":123456789012345678901234567890}`)));
    expect(meta.error?.code).toBe(-32602);
    const v03 = await viaRpc(sendText(msg03(`{"kind":"data","data":{"x":1e400}}`), "v03"), "");
    expect(v03.error?.code).toBe(-32602);
  });

  it("keeps every number a float holds, spelled any way, exactly as the caller's value", async () => {
    const kept = [
      "0",
      "-0",
      "0.1",
      "1.5e3",
      "100",
      "1E2",
      "9007199254740991",
      "1e21",
      "1.7976931348623157e308",
      "5e-324",
      "-2.5",
    ];
    const parts = `{"data":{${kept.map((n, i) => `"k${i}":${n}`).join(",")}}}`;
    const r = await viaRpc(sendText(msg(parts)));
    expect(r.error).toBeUndefined();
    const id = r.result.task.id;
    const got = await viaRpc(`{"jsonrpc":"2.0","id":2,"method":"GetTask","params":{"id":"${id}"}}`);
    const data = got.result.history[0].parts[0].data;
    // (-0 is 0 in JSON: the same value.)
    kept.forEach((n, i) => expect(data[`k${i}`] + 0, n).toBe(Number(n) + 0));
  });

  it("a number in the request's own envelope (its id) is judged the same way", async () => {
    const r = await viaRpc(`{"jsonrpc":"2.0","id":1e400,"method":"GetTask","params":{"id":"x"}}`);
    expect(r.error?.code).toBe(-32602);
  });

  it("malformed JSON is still a parse error first, and a notification still gets no answer", async () => {
    expect((await viaRpc(`{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"x":1e400`)).error.code).toBe(
      -32700,
    );
    const none = await rpc.handle(
      `{"jsonrpc":"2.0","method":"SendMessage","params":{"message":${msg(`{"data":1e400}`)}}}`,
      "1.0",
      ctx,
    );
    expect(none.kind).toBe("none");
  });
});

describe("keepsExactly and scanJson", () => {
  it("tells the numbers apart by value, not spelling", () => {
    for (const n of ["0", "1", "-1", "0.1", "1.0", "1e2", "100", "1.25E-3", "1e21", "123456789012345", "0.000001"])
      expect(keepsExactly(n), n).toBe(true);
    for (const n of ["1e400", "1e-400", "123456789012345678", "3.14159265358979323846", "2e308"])
      expect(keepsExactly(n), n).toBe(false);
  });

  it("finds numbers outside strings only, and reports depth as before", () => {
    expect(scanJson(`{"s":"1e400","n":[1,2,3]}`)).toEqual({ tooDeep: false });
    expect(scanJson(`{"s":"x\\"1e400","n":1e400}`)).toEqual({ tooDeep: false, inexact: "1e400" });
    expect(scanJson("[[[1]]]", 2)).toEqual({ tooDeep: true });
  });
});

describe("part contents are checked as a2a.proto describes them", () => {
  const refused: [string, string, string][] = [
    ["raw that is not base64", `{"raw":"this is not base64!"}`, "raw must be the file's bytes as base64"],
    ["raw of an impossible length", `{"raw":"QUJDR"}`, "raw must be the file's bytes as base64"],
    ["raw mixing both alphabets", `{"raw":"ab+_"}`, "raw must be the file's bytes as base64"],
    ["raw with padding in the middle", `{"raw":"QQ==QUJD"}`, "raw must be the file's bytes as base64"],
    ["a javascript: url", `{"url":"javascript:alert(1)"}`, "scheme javascript:"],
    ["a file: url", `{"url":"file:///etc/passwd"}`, "scheme file:"],
    ["a relative url", `{"url":"/etc/passwd"}`, "must be an absolute URL"],
    ["a filename that is not a string", `{"text":"x","filename":{"a":1}}`, "filename must be a string"],
    ["a mediaType that is not a string", `{"text":"x","mediaType":7}`, "mediaType must be a string"],
  ];
  for (const [what, part, fragment] of refused)
    it(`refuses ${what} with -32602 naming the field`, async () => {
      const r = await viaRpc(sendText(msg(part)));
      expect(r.error?.code).toBe(-32602);
      expect(r.error.message).toContain("params.message.parts[0]");
      expect(r.error.message).toContain(fragment);
    });

  it("takes base64 of either alphabet, with or without padding, and http(s) and data: URLs", async () => {
    const parts = [
      `{"raw":"aGVsbG8=","filename":"h.txt","mediaType":"text/plain"}`,
      `{"raw":"aGVsbG8"}`,
      `{"raw":"-_-_"}`,
      `{"raw":""}`,
      `{"url":"https://example.com/f.pdf"}`,
      `{"url":"http://10.0.0.7:8080/x"}`,
      `{"url":"data:text/plain;base64,aGk="}`,
    ];
    const r = await viaRpc(sendText(msg(parts.join(","))));
    expect(r.error).toBeUndefined();
    const got = await viaRpc(`{"jsonrpc":"2.0","id":2,"method":"GetTask","params":{"id":"${r.result.task.id}"}}`);
    expect(got.result.history[0].parts).toEqual(parts.map((p) => JSON.parse(p)));
  });
});
