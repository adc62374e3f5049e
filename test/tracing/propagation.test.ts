import { describe, expect, it } from "vitest";
import { ATTR } from "../../src/tracing/attributes";
import { inSpan, outgoingHeaders, serverSpan } from "../../src/tracing/propagation";
import { ParentBasedRatioSampler } from "../../src/tracing/sampler";
import { SpanKind, type FinishedSpan } from "../../src/tracing/span";
import { NoopTracer, RecordingTracer } from "../../src/tracing/tracer";

const TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

function recording() {
  const ended: FinishedSpan[] = [];
  return { ended, tracer: new RecordingTracer(new ParentBasedRatioSampler(1), { onEnd: (s) => ended.push(s) }) };
}

describe("propagation across a hop", () => {
  it("continues the caller's trace and passes it on with our span as the parent", async () => {
    const { tracer, ended } = recording();
    const incoming = new Headers({ traceparent: TRACEPARENT, tracestate: "rojo=1" });
    const server = serverSpan(tracer, "a2a SendMessage", (n) => incoming.get(n), { [ATTR.rpcMethod]: "SendMessage" });
    const headers = await inSpan(tracer, "chat m", { kind: SpanKind.Client, parent: server }, async (model) =>
      outgoingHeaders(model),
    );
    server.end();
    const [model, srv] = ended;
    expect(srv).toMatchObject({ kind: SpanKind.Server, parentSpanId: "00f067aa0ba902b7", parentRemote: true });
    expect(model).toMatchObject({ kind: SpanKind.Client, parentSpanId: srv.context.spanId });
    expect(headers).toEqual({
      traceparent: `00-4bf92f3577b34da6a3ce929d0e0e4736-${model.context.spanId}-01`,
      tracestate: "rojo=1",
    });
  });

  it("starts a new trace when the caller's header is malformed", () => {
    const { tracer } = recording();
    const span = serverSpan(tracer, "x", (n) => (n === "traceparent" ? TRACEPARENT.toUpperCase() : null));
    expect(span.context.traceId).not.toBe("4bf92f3577b34da6a3ce929d0e0e4736");
    expect(span.recording).toBe(true);
  });

  it("marks a failed call with the error's name only, never its message, and rethrows", async () => {
    const { tracer, ended } = recording();
    class ModelError extends Error {
      override name = "ModelError";
    }
    await expect(
      inSpan(tracer, "chat m", {}, async () => Promise.reject(new ModelError("the model said: SECRET PLAN"))),
    ).rejects.toThrow("SECRET PLAN");
    expect(ended[0]).toMatchObject({ status: { code: 2 }, attributes: { [ATTR.errorType]: "ModelError" } });
    expect(JSON.stringify(ended[0])).not.toContain("SECRET");
  });

  it("off: passes a caller's trace through unchanged, and sends nothing of its own", () => {
    const off = new NoopTracer();
    const through = serverSpan(off, "x", (n) => (n === "traceparent" ? TRACEPARENT : null));
    expect(outgoingHeaders(through)).toEqual({ traceparent: TRACEPARENT });
    expect(outgoingHeaders(serverSpan(off, "x", () => null))).toEqual({});
  });
});
