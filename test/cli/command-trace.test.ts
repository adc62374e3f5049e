/**
 * A client command's trace (src/cli/command-trace.ts) against the OTLP receiver twin: with an endpoint, the
 * command's span and its calls' spans are exported when it ends; without one, the trace is still started and
 * passed on with the sampling decision of the home's ratio; a command that reached no peer exports nothing.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startCommandTrace, tracedCommand } from "../../src/cli/command-trace";
import { bufferIo } from "../../src/cli/io";
import { parseTraceparent } from "../../src/tracing/trace-context";
import { startOtlpReceiver, type OtlpReceiver } from "../fakes/otlp-receiver";

let receiver: OtlpReceiver;
beforeAll(async () => {
  receiver = await startOtlpReceiver();
});
afterAll(async () => {
  await receiver?.close();
});

describe("startCommandTrace", () => {
  it("exports the command's span and its calls' spans when it ends, in one trace", async () => {
    const before = receiver.requests.length;
    const trace = startCommandTrace("status", { endpoint: receiver.endpoint, samplingRatio: 1 });
    expect(trace.exporting).toBe(true);
    const call = trace.calls({ name: "beta", url: "https://10.0.0.7:9443" }).begin({
      method: "GetTask",
      rpcSystem: "jsonrpc",
      taskId: "T1",
    });
    expect(parseTraceparent(call.headers.traceparent)).toMatchObject({ traceId: trace.traceId, sampled: true });
    call.end({ result: { id: "T1", contextId: "C1", status: { state: "TASK_STATE_WORKING" } } });
    await trace.end();
    expect(receiver.requests.length).toBe(before + 1);
    const { resource, spans } = receiver.requests.at(-1)!;
    expect(resource).toMatchObject({ "service.name": "a2a-node", "process.command": "a2a-node status" });
    const root = spans.find((s) => s.name === "a2a-node status")!;
    expect(root).toMatchObject({ traceId: trace.traceId, kind: 1 });
    expect(root.parentSpanId).toBeUndefined();
    expect(spans.find((s) => s.name === "a2a GetTask")).toMatchObject({
      traceId: trace.traceId,
      parentSpanId: root.spanId,
      kind: 3,
      attributes: {
        "a2a.peer.name": "beta",
        "server.address": "10.0.0.7",
        "server.port": 9443,
        "a2a.task.id": "T1",
        "a2a.context.id": "C1",
        "a2a.task.state": "TASK_STATE_WORKING",
      },
    });
    expect(call.headers.traceparent).toContain(spans.find((s) => s.name === "a2a GetTask")!.spanId);
  });

  it("without an endpoint: a trace id and headers all the same, sampled as the ratio says, nothing exported", async () => {
    const before = receiver.requests.length;
    for (const [ratio, sampled] of [
      [1, true],
      [0, false],
    ] as const) {
      const trace = startCommandTrace("send", { samplingRatio: ratio });
      expect(trace.exporting).toBe(false);
      const a = trace.calls({ name: "beta" }).begin({ method: "SendMessage", rpcSystem: "jsonrpc" });
      const b = trace.calls({ name: "beta" }).begin({ method: "GetTask", rpcSystem: "jsonrpc" });
      for (const call of [a, b])
        expect(parseTraceparent(call.headers.traceparent)).toMatchObject({ traceId: trace.traceId, sampled });
      a.end();
      b.end();
      await trace.end();
    }
    expect(receiver.requests.length).toBe(before);
  });

  it("a command that reached no peer exports nothing", async () => {
    const before = receiver.requests.length;
    const trace = startCommandTrace("send", { endpoint: receiver.endpoint, samplingRatio: 1 });
    await trace.end(new Error("usage"));
    expect(receiver.requests.length).toBe(before);
  });

  it("a collector nobody listens at: the command's end still comes, and nothing is thrown", async () => {
    const trace = startCommandTrace("send", { endpoint: "http://127.0.0.1:9", samplingRatio: 1 });
    trace.calls({ name: "beta" }).begin({ method: "SendMessage", rpcSystem: "jsonrpc" }).end();
    await expect(trace.end()).resolves.toBeUndefined();
  });
});

describe("tracedCommand", () => {
  const ctx = { io: bufferIo(), home: "/nonexistent" };

  it("passes the command's exit code on, and marks the command's span failed by the error's name when it throws", async () => {
    const settings = { endpoint: receiver.endpoint, samplingRatio: 1 };
    expect(
      await tracedCommand(
        "cancel",
        ctx,
        async (trace) => {
          trace.calls({ name: "beta" }).begin({ method: "CancelTask", rpcSystem: "jsonrpc" }).end();
          return 7;
        },
        settings,
      ),
    ).toBe(7);
    class PeerGone extends Error {
      override name = "PeerGone";
    }
    let traceId = "";
    await expect(
      tracedCommand(
        "cancel",
        ctx,
        async (trace) => {
          traceId = trace.traceId;
          trace.calls({ name: "beta" }).begin({ method: "CancelTask", rpcSystem: "jsonrpc" }).end();
          throw new PeerGone("beta said: go away, secret words");
        },
        settings,
      ),
    ).rejects.toThrow("go away");
    const root = receiver.spans().find((s) => s.traceId === traceId && s.name === "a2a-node cancel")!;
    expect(root).toMatchObject({ status: { code: 2 }, attributes: { "error.type": "PeerGone" } });
    expect(JSON.stringify(receiver.requests)).not.toContain("secret words");
  });

  it("reads no tracing from a home without a config: tracing off, the trace still started", async () => {
    let exporting: boolean | undefined;
    await tracedCommand("send", ctx, async (trace) => {
      exporting = trace.exporting;
      expect(trace.traceId).toMatch(/^[0-9a-f]{32}$/);
      return 0;
    });
    expect(exporting).toBe(false);
  });
});
