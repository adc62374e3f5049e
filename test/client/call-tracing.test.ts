/**
 * The client's side of a trace (src/client/call-tracing.ts): both peer clients, against a real node started
 * in-process (beta, the conformance executor, mutual TLS), send `traceparent` (and `tracestate`) on every call,
 * each call is a client span under the caller's span naming the method, the peer and the task, and the headers
 * name that span as the parent. A client given no tracing sends no trace headers at all.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { spanCallTracing, taskFacts, traced, UNTRACED, type CallTracing } from "../../src/client/call-tracing";
import { HttpJsonClient } from "../../src/client/http-json-client";
import { JsonRpcClient } from "../../src/client/jsonrpc-client";
import { mtlsFetch } from "../../src/client/mtls-fetch";
import type { FetchFn, PeerClient } from "../../src/client/peer-client";
import { DEFAULTS } from "../../src/config";
import { createLogger } from "../../src/log";
import { startNode, type RunningNode } from "../../src/node";
import type { Message, StreamResponse } from "../../src/protocol/types";
import { ATTR } from "../../src/tracing/attributes";
import { ParentBasedRatioSampler } from "../../src/tracing/sampler";
import { SpanKind, type FinishedSpan, type Span } from "../../src/tracing/span";
import { parseTraceparent, parseTracestate } from "../../src/tracing/trace-context";
import { RecordingTracer } from "../../src/tracing/tracer";
import { makeFleet, type Fleet } from "../helpers/fleet";

let fleet: Fleet;
let beta: RunningNode;
let urls: { JSONRPC: string; "HTTP+JSON": string };

beforeAll(async () => {
  fleet = await makeFleet(["alpha", "beta"]);
  const quiet = createLogger(() => {}, "warn");
  beta = await startNode(fleet.homes.beta, { ...DEFAULTS, host: "127.0.0.1", port: 0, executor: "conformance" }, quiet);
  const card = await new JsonRpcClient(beta.url, mtlsFetch(fleet.identity("alpha"), { name: "beta" })).getAgentCard(
    beta.url,
  );
  const url = (binding: string) => card.supportedInterfaces.find((i) => i.protocolBinding === binding)!.url;
  urls = { JSONRPC: url("JSONRPC"), "HTTP+JSON": url("HTTP+JSON") };
});
afterAll(async () => {
  await beta?.stop();
  fleet?.cleanup();
});

/** A fetch as alpha that records the headers of every request it sends. */
function recordingFetch(): { fetch: FetchFn; sent: Headers[] } {
  const inner = mtlsFetch(fleet.identity("alpha"), { name: "beta" });
  const sent: Headers[] = [];
  return {
    sent,
    fetch: (url, init) => {
      sent.push(new Headers(init.headers));
      return inner(url, init);
    },
  };
}

/** A recording tracer, the caller's span (with a vendor's tracestate), and the client spans it gets. */
function tracing(): { calls: CallTracing; root: Span; ended: FinishedSpan[] } {
  const ended: FinishedSpan[] = [];
  const tracer = new RecordingTracer(new ParentBasedRatioSampler(1), { onEnd: (s) => ended.push(s) });
  const root = tracer.startSpan("a2a-node send", {
    parent: {
      traceId: "4bf92f3577b34da6a3ce929d0e0e4736",
      spanId: "00f067aa0ba902b7",
      sampled: true,
      remote: true,
      traceState: parseTracestate("vendor=opaque")!,
    },
  });
  return { calls: spanCallTracing(tracer, root, { name: "beta", url: beta.url }), root, ended };
}

const SECRET_TEXT = "the launch code is 0000, tell nobody";
const message = (prefix: string, extra: Partial<Message> = {}): Message => ({
  messageId: `${prefix}-${crypto.randomUUID()}`,
  role: "ROLE_USER",
  parts: [{ text: SECRET_TEXT }],
  ...extra,
});

async function drain(stream: AsyncIterable<StreamResponse>): Promise<StreamResponse[]> {
  const items: StreamResponse[] = [];
  for await (const item of stream) items.push(item);
  return items;
}

const clients: [string, "jsonrpc" | "http", (f: FetchFn, t?: CallTracing) => PeerClient][] = [
  ["JsonRpcClient", "jsonrpc", (f, t) => new JsonRpcClient(urls.JSONRPC, f, "1.0", undefined, t)],
  ["HttpJsonClient", "http", (f, t) => new HttpJsonClient(urls["HTTP+JSON"], f, undefined, t)],
];

describe.each(clients)("%s", (_name, rpcSystem, make) => {
  it("every call carries traceparent naming its own client span, child of the caller's span", async () => {
    const { fetch, sent } = recordingFetch();
    const { calls, root, ended } = tracing();
    const client = make(fetch, calls);

    const sentTask = await client.sendMessage({ message: message("tck-complete-task") });
    const taskId = "task" in sentTask ? sentTask.task.id : "";
    expect(taskId).not.toBe("");
    await client.getTask({ id: taskId });
    await client.listTasks({ pageSize: 5 });
    const streamed = await drain(client.sendStreamingMessage({ message: message("tck-stream-001") }));
    const streamedId = "task" in streamed[0]! ? streamed[0].task.id : "";
    const waiting = await client.sendMessage({
      message: message("tck-input-required"),
      configuration: { returnImmediately: true },
    });
    const waitingId = "task" in waiting ? waiting.task.id : "";
    await client.cancelTask(waitingId);

    const methods = ["SendMessage", "GetTask", "ListTasks", "SendStreamingMessage", "SendMessage", "CancelTask"];
    expect(ended.map((s) => s.attributes[ATTR.rpcMethod])).toEqual(methods);
    expect(sent).toHaveLength(methods.length);
    for (const [i, span] of ended.entries()) {
      expect(span).toMatchObject({
        name: `a2a ${methods[i]}`,
        kind: SpanKind.Client,
        parentSpanId: root.context.spanId,
      });
      expect(span.context.traceId).toBe("4bf92f3577b34da6a3ce929d0e0e4736");
      expect(span.attributes).toMatchObject({
        [ATTR.rpcSystem]: rpcSystem,
        [ATTR.a2aPeer]: "beta",
        [ATTR.serverAddress]: "127.0.0.1",
        [ATTR.serverPort]: Number(new URL(beta.url).port),
      });
      // The request carried this very span as the parent, and the vendor's state unchanged.
      const header = parseTraceparent(sent[i]!.get("traceparent"));
      expect(header).toMatchObject({ traceId: span.context.traceId, spanId: span.context.spanId, sampled: true });
      expect(sent[i]!.get("tracestate")).toBe("vendor=opaque");
    }
    // The task each call was about: from the answer (SendMessage, the stream) or the request (GetTask, CancelTask).
    expect(ended.map((s) => s.attributes[ATTR.a2aTaskId])).toEqual([
      taskId,
      taskId,
      undefined,
      streamedId,
      waitingId,
      waitingId,
    ]);
    expect(ended.map((s) => s.attributes[ATTR.a2aTaskState])).toEqual([
      "TASK_STATE_COMPLETED",
      "TASK_STATE_COMPLETED",
      undefined,
      "TASK_STATE_COMPLETED",
      expect.stringMatching(/^TASK_STATE_(SUBMITTED|WORKING|INPUT_REQUIRED)$/), // returned at once, still going
      "TASK_STATE_CANCELED",
    ]);
    expect(
      ended.every((s) => typeof s.attributes[ATTR.a2aContextId] === "string" || !s.attributes[ATTR.a2aTaskId]),
    ).toBe(true);
    // Never the message text, which every answer above echoed or held in its history.
    expect(JSON.stringify(ended)).not.toContain("launch code");
  });

  it("a refused call ends its span failed, with the error's name only", async () => {
    const { fetch } = recordingFetch();
    const { calls, ended } = tracing();
    const client = make(fetch, calls);
    await expect(client.getTask({ id: "no-such-task" })).rejects.toThrow();
    expect(ended).toHaveLength(1);
    expect(ended[0]).toMatchObject({
      status: { code: 2 },
      attributes: { [ATTR.errorType]: "RemoteError", [ATTR.a2aTaskId]: "no-such-task" },
    });
    expect(ended[0]!.status.message).toBeUndefined();
  });

  it("a subscription's span lasts until its reader stops, and names the task", async () => {
    const { fetch, sent } = recordingFetch();
    const { calls, ended } = tracing();
    const client = make(fetch, calls);
    const waiting = await client.sendMessage({
      message: message("tck-input-required"),
      configuration: { returnImmediately: true },
    });
    const id = "task" in waiting ? waiting.task.id : "";
    for await (const item of client.subscribeToTask(id)) {
      expect(item).toBeDefined();
      expect(ended).toHaveLength(1); // the subscription's span is still open while items come
      break;
    }
    expect(ended.map((s) => s.attributes[ATTR.rpcMethod])).toEqual(["SendMessage", "SubscribeToTask"]);
    expect(ended[1]!.attributes[ATTR.a2aTaskId]).toBe(id);
    expect(parseTraceparent(sent[1]!.get("traceparent"))?.spanId).toBe(ended[1]!.context.spanId);
    await client.cancelTask(id);
  });

  it("without tracing, no trace header is sent", async () => {
    const { fetch, sent } = recordingFetch();
    const client = make(fetch);
    await client.sendMessage({ message: message("tck-complete-task") });
    await drain(client.sendStreamingMessage({ message: message("tck-stream-001") }));
    expect(sent).toHaveLength(2);
    for (const h of sent) {
      expect(h.get("traceparent")).toBeNull();
      expect(h.get("tracestate")).toBeNull();
    }
  });
});

describe("traced (the one-call helper a gRPC client uses too)", () => {
  it("gives the call its headers, and passes the answer and the error on unchanged", async () => {
    const { calls, ended } = tracing();
    let headers: Readonly<Record<string, string>> = {};
    const answer = await traced(calls, { method: "GetTask", rpcSystem: "grpc", taskId: "t1" }, async (h) => {
      headers = h;
      return { id: "t1", contextId: "c1", status: { state: "TASK_STATE_WORKING" } };
    });
    expect(answer.id).toBe("t1");
    expect(parseTraceparent(headers.traceparent)?.spanId).toBe(ended[0]!.context.spanId);
    const boom = Object.assign(new Error("peer said: secret words"), { name: "PeerTimeoutError" });
    await expect(traced(calls, { method: "GetTask", rpcSystem: "grpc" }, () => Promise.reject(boom))).rejects.toBe(
      boom,
    );
    expect(ended[1]).toMatchObject({ attributes: { [ATTR.errorType]: "PeerTimeoutError" }, status: { code: 2 } });
    expect(JSON.stringify(ended)).not.toContain("secret words");
  });

  it("untraced: no headers, nothing recorded", async () => {
    expect(UNTRACED.begin({ method: "GetTask", rpcSystem: "grpc" }).headers).toEqual({});
    expect(await traced(UNTRACED, { method: "GetTask", rpcSystem: "grpc" }, async (h) => h)).toEqual({});
  });
});

describe("taskFacts", () => {
  const task = { id: "t", contextId: "c", status: { state: "TASK_STATE_WORKING" }, history: [{ parts: [] }] };
  const facts = { [ATTR.a2aTaskId]: "t", [ATTR.a2aContextId]: "c", [ATTR.a2aTaskState]: "TASK_STATE_WORKING" };

  it("reads a task's id, context and state from every shape an answer takes", () => {
    expect(taskFacts(task)).toEqual(facts);
    expect(taskFacts({ task })).toEqual(facts);
    expect(
      taskFacts({ statusUpdate: { taskId: "t", contextId: "c", status: { state: "TASK_STATE_WORKING" } } }),
    ).toEqual(facts);
    expect(taskFacts({ artifactUpdate: { taskId: "t", contextId: "c", artifact: { parts: [] } } })).toEqual({
      [ATTR.a2aTaskId]: "t",
      [ATTR.a2aContextId]: "c",
    });
  });

  it("reads nothing from a message, a list, a card or something that is no object", () => {
    expect(taskFacts({ message: { messageId: "m", parts: [{ text: "hi" }] } })).toEqual({});
    expect(taskFacts({ tasks: [task] })).toEqual({});
    expect(taskFacts({ name: "beta", id: "not a task" })).toEqual({});
    for (const v of [undefined, null, "t", 3]) expect(taskFacts(v)).toEqual({});
  });
});
