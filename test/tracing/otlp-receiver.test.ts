/** The receiver twin answers as the OTLP/HTTP spec says a collector does, so the exporter's tests mean something. */
import { gzipSync } from "node:zlib";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { startOtlpReceiver, type OtlpReceiver } from "../fakes/otlp-receiver";

let receiver: OtlpReceiver;
beforeEach(async () => {
  receiver = await startOtlpReceiver();
});
afterEach(async () => {
  await receiver.close();
});

const span = {
  traceId: "4bf92f3577b34da6a3ce929d0e0e4736",
  spanId: "00f067aa0ba902b7",
  name: "s",
  kind: 2,
  startTimeUnixNano: "1",
  endTimeUnixNano: "2",
};
const body = (spans: unknown[]) =>
  JSON.stringify({ resourceSpans: [{ resource: { attributes: [] }, scopeSpans: [{ scope: { name: "t" }, spans }] }] });
const post = (init: { body?: string | Uint8Array; headers?: Record<string, string>; path?: string; method?: string }) =>
  fetch(`${receiver.endpoint}${init.path ?? "/v1/traces"}`, {
    method: init.method ?? "POST",
    headers: { "content-type": "application/json", ...init.headers },
    body: init.body,
  });

describe("the OTLP/HTTP receiver twin", () => {
  it("takes JSON and gzip'd JSON, answering 200 with an empty response in JSON", async () => {
    const plain = await post({ body: body([span]) });
    expect([plain.status, plain.headers.get("content-type"), await plain.json()]).toEqual([
      200,
      "application/json",
      {},
    ]);
    const zipped = await post({
      body: gzipSync(body([{ ...span, spanId: "00f067aa0ba902b8" }])),
      headers: { "content-encoding": "gzip" },
    });
    expect(zipped.status).toBe(200);
    expect(receiver.spans().map((s) => s.spanId)).toEqual(["00f067aa0ba902b7", "00f067aa0ba902b8"]);
  });

  it("refuses other paths, methods and encodings, and malformed requests with a Status", async () => {
    expect((await post({ path: "/v1/metrics", body: body([]) })).status).toBe(404);
    const get = await post({ method: "GET" });
    expect([get.status, get.headers.get("allow")]).toEqual([405, "POST"]);
    expect((await post({ body: "x", headers: { "content-type": "application/x-protobuf" } })).status).toBe(415);
    const bad = await post({ body: body([{ ...span, traceId: "0".repeat(32) }]) });
    expect([bad.status, await bad.json()]).toEqual([400, { code: 3, message: `invalid traceId '${"0".repeat(32)}'` }]);
    expect((await post({ body: body([{ ...span, startTimeUnixNano: 1.5 }]) })).status).toBe(400);
    expect(receiver.requests).toEqual([]);
    expect(receiver.answered).toEqual([404, 405, 415, 400, 400]);
  });

  it("answers as scripted: throttling with Retry-After, then a partial success", async () => {
    receiver.script({ status: 429, retryAfter: "3" }, { rejectSpans: 1, message: "too long" });
    const throttled = await post({ body: body([span]) });
    expect([throttled.status, throttled.headers.get("retry-after")]).toEqual([429, "3"]);
    const partial = await post({ body: body([span, { ...span, spanId: "00f067aa0ba902b9" }]) });
    expect(await partial.json()).toEqual({ partialSuccess: { rejectedSpans: "1", errorMessage: "too long" } });
    expect(receiver.spans()).toHaveLength(1);
  });
});
