import { chmodSync, mkdtempSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ATTR } from "../../src/tracing/attributes";
import { createTracing, readOtlpHeaders, TracingOptionsError, validateTracingOptions } from "../../src/tracing/options";
import {
  backoffMs,
  OtlpHttpExporter,
  retryAfterMs,
  tracesUrl,
  type OtlpExporterOptions,
} from "../../src/tracing/otlp-exporter";
import { msToNanos } from "../../src/tracing/otlp-json";
import { ParentBasedRatioSampler } from "../../src/tracing/sampler";
import { SpanKind } from "../../src/tracing/span";
import { parseTraceparent } from "../../src/tracing/trace-context";
import { hasValidContext, NoopTracer, RecordingTracer } from "../../src/tracing/tracer";
import { startOtlpReceiver, type OtlpReceiver } from "../fakes/otlp-receiver";

let receiver: OtlpReceiver;
beforeEach(async () => {
  receiver = await startOtlpReceiver();
});
afterEach(async () => {
  await receiver.close();
});

const RESOURCE = { "service.name": "a2a-node", "service.version": "0.1.0", "service.instance.id": "alpha" };

/** An exporter whose waits between tries are recorded and skipped, so a test never sleeps on a timer. */
function exporter(over: Partial<OtlpExporterOptions> = {}) {
  const waits: number[] = [];
  const errors: string[] = [];
  const e = new OtlpHttpExporter({
    endpoint: receiver.endpoint,
    resource: RESOURCE,
    scopeVersion: "0.1.0",
    scheduleDelayMs: 60_000,
    wait: async (ms) => void waits.push(ms),
    onError: (m) => errors.push(m),
    ...over,
  });
  return { e, waits, errors, tracer: new RecordingTracer(new ParentBasedRatioSampler(1), e) };
}

describe("the OTLP/HTTP exporter, against the receiver twin over a socket", () => {
  it("delivers spans as OTLP JSON with their parent links, resource and headers", async () => {
    const { e, tracer } = exporter({ headers: { "x-api-key": "k1" } });
    const remote = parseTraceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")!;
    const server = tracer.startSpan("a2a SendMessage", {
      kind: SpanKind.Server,
      parent: remote,
      attributes: { [ATTR.rpcSystem]: "jsonrpc" },
    });
    const model = tracer.startSpan("chat llama3", {
      kind: SpanKind.Client,
      parent: server,
      attributes: { [ATTR.genAiRequestModel]: "llama3" },
    });
    model.end();
    server.fail("timeout", "the model did not answer").end();
    await e.flush();

    expect(receiver.requests).toHaveLength(1);
    const [req] = receiver.requests;
    expect(req.headers["content-type"]).toBe("application/json");
    expect(req.headers["x-api-key"]).toBe("k1");
    expect(req.resource).toMatchObject({ "service.name": "a2a-node", "service.instance.id": "alpha" });
    expect(req.scope).toEqual({ name: "a2a-node", version: "0.1.0" });
    const [m, s] = req.spans;
    expect(s).toMatchObject({
      traceId: remote.traceId,
      parentSpanId: remote.spanId,
      kind: SpanKind.Server,
      status: { code: 2, message: "the model did not answer" },
    });
    expect(s.flags).toBe(0x301); // sampled, parent known, parent remote
    expect(m).toMatchObject({
      traceId: remote.traceId,
      parentSpanId: s.spanId,
      kind: SpanKind.Client,
      attributes: { [ATTR.genAiRequestModel]: "llama3" },
    });
    expect(BigInt(m.endTimeUnixNano) >= BigInt(m.startTimeUnixNano)).toBe(true);
    expect(e.stats()).toEqual({ exported: 2, dropped: 0, failed: 0, rejected: 0, queued: 0 });
  });

  it("sends a full batch without waiting for the schedule", async () => {
    const { tracer } = exporter({ maxBatch: 3 });
    for (let i = 0; i < 3; i++) tracer.startSpan(`s${i}`).end();
    expect((await receiver.waitForSpans(3)).map((s) => s.name)).toEqual(["s0", "s1", "s2"]);
  });

  it("retries 429 and 503 after the Retry-After the collector asks for, then delivers", async () => {
    receiver.script({ status: 503, retryAfter: "7" }, { status: 429, retryAfter: "0" }, { status: 502 });
    const { e, tracer, waits } = exporter();
    tracer.startSpan("one").end();
    await e.flush();
    expect(receiver.answered).toEqual([503, 429, 502, 200]);
    expect(waits.slice(0, 2)).toEqual([7000, 0]);
    expect(waits[2]).toBeGreaterThan(0); // no Retry-After: its own backoff
    expect(e.stats()).toMatchObject({ exported: 1, failed: 0 });
  });

  it("caps a long Retry-After, and gives up after its tries, counting the spans", async () => {
    receiver.script({ status: 503, retryAfter: "3600" }, { status: 503 }, { status: 504 });
    const { e, tracer, waits, errors } = exporter({ maxAttempts: 3, maxBackoffMs: 5000 });
    tracer.startSpan("one").end();
    tracer.startSpan("two").end();
    await e.flush();
    expect(receiver.answered).toEqual([503, 503, 504]);
    expect(waits[0]).toBe(5000);
    expect(e.stats()).toMatchObject({ exported: 0, failed: 2 });
    expect(errors).toEqual([
      `2 spans not exported: the collector at ${receiver.endpoint}/v1/traces answered HTTP 504 (3 tries)`,
    ]);
  });

  it("does not retry what the spec calls final (400, 401, 500)", async () => {
    receiver.script({ status: 400 }, { status: 401 }, { status: 500 });
    const { e, tracer, errors } = exporter({ maxBatch: 1 });
    for (const n of ["a", "b", "c"]) tracer.startSpan(n).end();
    await e.flush();
    expect(receiver.answered).toEqual([400, 401, 500]);
    expect(e.stats()).toMatchObject({ failed: 3, exported: 0 });
    expect(errors[0]).toMatch(/answered HTTP 400: scripted$/);
  });

  it("counts the spans a partial success rejects", async () => {
    receiver.script({ rejectSpans: 1, message: "attribute too long" });
    const { e, tracer, errors } = exporter();
    for (const n of ["a", "b", "c"]) tracer.startSpan(n).end();
    await e.flush();
    expect(e.stats()).toMatchObject({ exported: 2, rejected: 1 });
    expect(errors).toEqual(["the collector refused 1 of 3 spans: attribute too long"]);
  });

  it("never blocks the caller: a hung collector costs a bounded export, a full queue drops and counts", async () => {
    receiver.hold();
    const { e, tracer } = exporter({ maxQueue: 4, maxBatch: 4, exportTimeoutMs: 300, maxAttempts: 2 });
    // onEnd is synchronous: all ten return before the exporter runs at all, so exactly six find the queue full.
    for (let i = 0; i < 10; i++) tracer.startSpan(`s${i}`).end();
    expect(e.stats()).toMatchObject({ queued: 4, dropped: 6 });
    await e.flush(); // bounded: two tries of 300 ms each, though the collector never answers
    expect(e.stats()).toMatchObject({ queued: 0, dropped: 6, failed: 4, exported: 0 });
  });

  it("gives up on a collector that is not there, saying so", async () => {
    const port = await closedPort();
    const { e, tracer, errors } = exporter({ endpoint: `http://127.0.0.1:${port}`, maxAttempts: 2 });
    tracer.startSpan("lost").end();
    await e.flush();
    expect(e.stats()).toMatchObject({ failed: 1 });
    expect(errors[0]).toMatch(
      new RegExp(`^1 spans not exported: cannot reach http://127.0.0.1:${port}/v1/traces: .* \\(2 tries\\)$`),
    );
  });

  it("after shutdown takes no more spans", async () => {
    const { e, tracer } = exporter();
    tracer.startSpan("before").end();
    await e.shutdown();
    tracer.startSpan("after").end();
    expect(receiver.spans().map((s) => s.name)).toEqual(["before"]);
    expect(e.stats()).toMatchObject({ exported: 1, dropped: 1 });
  });
});

describe("sampling through the tracer", () => {
  it("records nothing of an unsampled trace but still passes its context on", async () => {
    const { e } = exporter();
    const tracer = new RecordingTracer(new ParentBasedRatioSampler(0), e);
    const root = tracer.startSpan("root");
    expect(root.recording).toBe(false);
    expect(hasValidContext(root)).toBe(true);
    const child = tracer.startSpan("child", { parent: root });
    expect(child.context).toMatchObject({ traceId: root.context.traceId, sampled: false });
    child.end();
    root.end();
    await e.flush();
    expect(receiver.requests).toEqual([]);
    // A sampled caller wins over our ratio of 0.
    const remote = parseTraceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")!;
    expect(tracer.startSpan("server", { parent: remote }).recording).toBe(true);
  });
});

describe("tracing off", () => {
  it("is the no-op tracer: no exporter, no ids drawn, an incoming context passed through", async () => {
    const off = createTracing({}, RESOURCE);
    expect(off.tracer).toBeInstanceOf(NoopTracer);
    expect(off.stats()).toBeUndefined();
    const none = off.tracer.startSpan("x");
    expect(hasValidContext(none)).toBe(false);
    expect(off.tracer.startSpan("y")).toBe(none); // one shared object: no allocation per span
    const remote = parseTraceparent("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")!;
    const through = off.tracer.startSpan("z", { parent: remote });
    expect(through.context).toBe(remote);
    through.setAttribute(ATTR.a2aTaskId, "t").end();
    await off.shutdown();
  });

  it("turns on with an endpoint, a headers file and a ratio", async () => {
    const dir = mkdtempSync(join(tmpdir(), "otlp-headers-"));
    const file = join(dir, "headers");
    writeFileSync(file, "# the collector's key\nX-Api-Key: k-123\n\nx-tenant: fleet\n", { mode: 0o600 });
    const on = createTracing(
      { otlp_endpoint: receiver.endpoint, otlp_headers_file: file, trace_sampling_ratio: 1 },
      RESOURCE,
    );
    on.tracer.startSpan("hello").end();
    await on.shutdown();
    expect(receiver.requests[0].headers).toMatchObject({ "x-api-key": "k-123", "x-tenant": "fleet" });
    expect(on.stats()).toMatchObject({ exported: 1 });
  });
});

describe("tracing options", () => {
  it("refuses bad settings with the setting's name", () => {
    expect(() => validateTracingOptions({ otlp_endpoint: "ftp://x" })).toThrow(/^otlp_endpoint: must be an http/);
    expect(() => validateTracingOptions({ otlp_endpoint: "not a url" })).toThrow(TracingOptionsError);
    expect(() => validateTracingOptions({ otlp_endpoint: "http://x", trace_sampling_ratio: 2 })).toThrow(
      /trace_sampling_ratio must be a number from 0 to 1/,
    );
    expect(() => validateTracingOptions({ otlp_headers_file: "/h" })).toThrow(/otlp_endpoint is not/);
  });

  it("reads a headers file, naming a bad line by number and never its value", () => {
    const dir = mkdtempSync(join(tmpdir(), "otlp-headers-"));
    const file = join(dir, "headers");
    writeFileSync(file, "Authorization: Bearer s3cret\n");
    chmodSync(file, 0o644);
    expect(readOtlpHeaders(file)).toEqual({ headers: { authorization: "Bearer s3cret" }, readableByOthers: true });
    writeFileSync(file, "ok: 1\nBearer s3cret\n");
    expect(() => readOtlpHeaders(file)).toThrow(`otlp_headers_file ${file} line 2 is not a 'Name: value' header line`);
    writeFileSync(file, "Content-Type: text/plain\n");
    expect(() => readOtlpHeaders(file)).toThrow(/line 1 sets Content-Type, which the exporter sets itself/);
    expect(() => readOtlpHeaders(join(dir, "missing"))).toThrow(/cannot be read \(ENOENT\)/);
  });

  it("resolves the endpoint as the OTLP exporter spec does", () => {
    expect(tracesUrl("http://collector:4318")).toBe("http://collector:4318/v1/traces");
    expect(tracesUrl("https://collector/")).toBe("https://collector/v1/traces");
    expect(tracesUrl("https://collector/custom/traces")).toBe("https://collector/custom/traces");
  });

  it("reads Retry-After as seconds or a date, and backs off more each try", () => {
    expect(retryAfterMs("120")).toBe(120_000);
    expect(retryAfterMs("Wed, 21 Oct 2015 07:28:30 GMT", Date.parse("Wed, 21 Oct 2015 07:28:00 GMT"))).toBe(30_000);
    expect(retryAfterMs("soon")).toBeUndefined();
    expect(retryAfterMs(null)).toBeUndefined();
    expect(backoffMs(1)).toBeLessThanOrEqual(1000);
    expect(backoffMs(4)).toBeGreaterThanOrEqual(4000);
    expect(msToNanos(1_700_000_000_123.456789)).toMatch(/^1700000000123456\d{3}$/);
  });
});

/** A port nothing listens on: bound, then closed. */
function closedPort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer();
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });
}
