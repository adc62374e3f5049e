/**
 * Bounded work, end to end: compiled a2a-node binaries served over mutual TLS, driven with raw JSON-RPC, each
 * in front of a fake OpenAI-compatible model (the only fake). Queue overflow, deadline, output cap, the
 * per-context task cap, file parts refused, readiness, and cancel mid-stream.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { serveBinary, type ServedBinary } from "../helpers/binary";
import { startFakeModel, type FakeModel, type FakeModelOptions } from "../fakes/openai";
import { startGatedModel, type GatedModel } from "../fakes/gated-model";
import { makeFleet, type Fleet, type TlsIdentity } from "../helpers/fleet";
import { get, rpc, userMessage, type RpcReply } from "../helpers/rpc";
import { openSse } from "../helpers/sse";

let fleet: Fleet;
let who: TlsIdentity;
const served: ServedBinary[] = [];
const models: FakeModel[] = [];
const gated: GatedModel[] = [];

/** A loopback port where nothing listens (the OS gave it to us, then we closed it). */
function deadPort(): number {
  const s = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: () => new Response() });
  const port = s.port as number;
  s.stop(true);
  return port;
}

function model(options: FakeModelOptions): FakeModel {
  const m = startFakeModel(options);
  models.push(m);
  return m;
}

async function serve(name: string, modelUrl: string, extra: string[] = []): Promise<ServedBinary> {
  const node = await serveBinary(fleet.homes[name]!, [
    "--executor",
    "openai",
    "--model-url",
    modelUrl,
    "--model",
    "fake",
    ...extra,
  ]);
  served.push(node);
  return node;
}

/** The JSON-RPC result, failing the test (with the body) if the call answered an error. */
function result(r: RpcReply): any {
  expect(r.status, r.text).toBe(200);
  expect(r.body?.error, r.text).toBeUndefined();
  return r.body.result;
}

function rpcError(r: RpcReply): { code: number; message: string; data: any[] } {
  expect(r.status, r.text).toBe(200);
  expect(r.body?.result, r.text).toBeUndefined();
  return r.body.error;
}

const textOf = (task: any): string =>
  (task.artifacts ?? []).flatMap((a: any) => a.parts.map((p: any) => p.text ?? "")).join("");

// 1,000 tokens of 8 bytes: 8,000 bytes, well over the 2,048-byte cap.
const LONG_TOKENS = Array.from({ length: 1000 }, (_, i) => `word${String(i).padStart(3, "0")} `);

let cap: { node: ServedBinary; model: FakeModel };
let deadline: { node: ServedBinary; model: FakeModel };
let main: { node: ServedBinary; model: FakeModel };
let dead: ServedBinary;
let cancel: { node: ServedBinary; model: FakeModel };
let fair: { node: ServedBinary; model: GatedModel };

beforeAll(async () => {
  fleet = await makeFleet(["alpha", "gamma", "cap", "deadline", "main", "dead", "cancel", "fair"]);
  who = fleet.identity("alpha");
  const capModel = model({ hold: true });
  const deadlineModel = model({ tokens: ["thinking ", "about ", "it"], stallAfterTokens: 1 });
  const mainModel = model({ tokens: LONG_TOKENS });
  const cancelModel = model({ tokens: ["one ", "two ", "three ", "four"], tokenDelayMs: 5, stallAfterTokens: 2 });
  const fairModel = startGatedModel(); // holds the requests whose text contains "[hold]"
  gated.push(fairModel);
  const [capNode, deadlineNode, mainNode, deadNode, cancelNode, fairNode] = await Promise.all([
    serve("cap", capModel.url, ["--max-concurrent", "1", "--max-queued", "1"]),
    serve("deadline", deadlineModel.url, ["--deadline", "1"]),
    serve("main", mainModel.url, ["--output-cap", "2048", "--max-tasks-per-context", "2"]),
    serve("dead", `http://127.0.0.1:${deadPort()}/v1`),
    serve("cancel", cancelModel.url),
    serve("fair", fairModel.url, ["--max-concurrent", "2", "--max-queued", "4", "--caller-share", "0.5"]),
  ]);
  cap = { node: capNode, model: capModel };
  deadline = { node: deadlineNode, model: deadlineModel };
  main = { node: mainNode, model: mainModel };
  dead = deadNode;
  cancel = { node: cancelNode, model: cancelModel };
  fair = { node: fairNode, model: fairModel };
});

afterAll(async () => {
  for (const m of models) m.release();
  for (const g of gated) g.release();
  await Promise.all(served.map((n) => n.stop("SIGKILL").catch(() => undefined)));
  for (const m of models) m.stop();
  for (const g of gated) g.stop();
  fleet?.cleanup();
});

describe("a bounded queue (--max-concurrent 1 --max-queued 1)", () => {
  it("runs one task, queues one as SUBMITTED, refuses the third with a retry-later error, and frees the slots", async () => {
    const { node, model: m } = cap;
    const first = result(
      await rpc(node.url, who, "SendMessage", {
        message: userMessage("first"),
        configuration: { returnImmediately: true },
      }),
    ).task;
    await m.received(1);
    const second = result(
      await rpc(node.url, who, "SendMessage", {
        message: userMessage("second"),
        configuration: { returnImmediately: true },
      }),
    ).task;
    expect(first.status.state).toBe("TASK_STATE_WORKING");
    expect(second.status.state).toBe("TASK_STATE_SUBMITTED");
    expect(result(await rpc(node.url, who, "GetTask", { id: first.id })).status.state).toBe("TASK_STATE_WORKING");
    expect(result(await rpc(node.url, who, "GetTask", { id: second.id })).status.state).toBe("TASK_STATE_SUBMITTED");

    const refused = rpcError(await rpc(node.url, who, "SendMessage", { message: userMessage("third") }));
    expect(refused.code).toBe(-32603);
    expect(refused.message).toMatch(/capacity/);
    expect(refused.message).toMatch(/retry later/);
    expect(refused.data).toContainEqual(
      expect.objectContaining({ "@type": "type.googleapis.com/google.rpc.ErrorInfo", reason: "RESOURCE_EXHAUSTED" }),
    );
    // The refused message never became a task, and the model was asked only once.
    expect(result(await rpc(node.url, who, "ListTasks", {})).totalSize).toBe(2);
    expect(m.requests).toHaveLength(1);

    // Cancel both; the node takes work again.
    expect(result(await rpc(node.url, who, "CancelTask", { id: second.id })).status.state).toBe("TASK_STATE_CANCELED");
    expect(result(await rpc(node.url, who, "CancelTask", { id: first.id })).status.state).toBe("TASK_STATE_CANCELED");
    m.release();
    const again = result(await rpc(node.url, who, "SendMessage", { message: userMessage("fourth") })).task;
    expect(again.status.state).toBe("TASK_STATE_COMPLETED");
    expect(textOf(again)).toBe("echo: fourth");
  });
});

describe("a caller's share of the node (--max-concurrent 2 --max-queued 4 --caller-share 0.5)", () => {
  it("gamma's stuck tasks hold only its share: alpha's task still runs at once, and gamma past its share is refused by name", async () => {
    const { node, model: m } = fair;
    const gamma = fleet.identity("gamma");
    const stuck = [];
    for (let i = 1; i <= 3; i++)
      stuck.push(
        result(
          await rpc(node.url, gamma, "SendMessage", {
            message: userMessage(`[hold] gamma ${i}`),
            configuration: { returnImmediately: true },
          }),
        ).task,
      );
    await m.received(1);
    // One of gamma's tasks runs (its share of two slots); the other two wait.
    expect(result(await rpc(node.url, gamma, "GetTask", { id: stuck[1].id })).status.state).toBe(
      "TASK_STATE_SUBMITTED",
    );
    const refused = rpcError(await rpc(node.url, gamma, "SendMessage", { message: userMessage("[hold] gamma 4") }));
    expect(refused.code).toBe(-32603);
    expect(refused.message).toBe(
      "gamma already has 1 tasks running and 2 waiting on this node, its share of it; retry when some have finished",
    );

    // alpha is not locked out: its task takes the other slot and completes while gamma's are still stuck.
    const mine = result(await rpc(node.url, who, "SendMessage", { message: userMessage("quick one") })).task;
    expect(mine.status.state).toBe("TASK_STATE_COMPLETED");
    expect(textOf(mine)).toBe("echo: quick one");
    expect(m.requests).toHaveLength(2);

    m.release();
    for (const t of stuck) {
      // Followed to its end (its whole event log, then live): each of gamma's tasks completes in turn.
      const events = await (
        await openSse(node.url, gamma, "SubscribeToTask", { id: t.id }, { "last-event-id": "0" })
      ).rest();
      expect(events.at(-1)?.data.result.statusUpdate.status.state).toBe("TASK_STATE_COMPLETED");
    }
  });
});

describe("a per-task deadline (--deadline 1)", () => {
  it("ends a task whose model stalls FAILED, saying it hit the deadline, and aborts the model request", async () => {
    const { node, model: m } = deadline;
    const task = result(await rpc(node.url, who, "SendMessage", { message: userMessage("think hard") })).task;
    expect(task.status.state).toBe("TASK_STATE_FAILED");
    expect(task.status.message.parts[0].text).toMatch(/deadline/);
    await m.sawAbort();
    expect(m.abortCount).toBe(1);
    const stored = result(await rpc(node.url, who, "GetTask", { id: task.id }));
    expect(stored.status.state).toBe("TASK_STATE_FAILED");
  });
});

describe("an output cap (--output-cap 2048)", () => {
  it("cuts a longer answer at the cap, completes the task, and marks it truncated", async () => {
    const { node } = main;
    const task = result(await rpc(node.url, who, "SendMessage", { message: userMessage("write a lot") })).task;
    expect(task.status.state).toBe("TASK_STATE_COMPLETED");
    const text = textOf(task);
    expect(Buffer.byteLength(text)).toBeLessThanOrEqual(2048);
    expect(Buffer.byteLength(text)).toBeGreaterThan(1024);
    expect(LONG_TOKENS.join("").startsWith(text)).toBe(true);
    expect(task.metadata?.truncated).toBe(true);
    const stored = result(await rpc(node.url, who, "GetTask", { id: task.id }));
    expect(textOf(stored)).toBe(text);
    expect(stored.metadata?.truncated).toBe(true);
  });
});

describe("a per-context task cap (--max-tasks-per-context 2)", () => {
  it("refuses a third task in the same contextId with -32004, and takes one in another context", async () => {
    const { node } = main;
    const contextId = `ctx-${crypto.randomUUID()}`;
    for (const n of [1, 2]) {
      const t = result(
        await rpc(node.url, who, "SendMessage", { message: userMessage(`turn ${n}`, { contextId }) }),
      ).task;
      expect(t.contextId).toBe(contextId);
      expect(t.status.state).toBe("TASK_STATE_COMPLETED");
    }
    const before = result(await rpc(node.url, who, "ListTasks", {})).totalSize;
    const refused = rpcError(
      await rpc(node.url, who, "SendMessage", { message: userMessage("turn 3", { contextId }) }),
    );
    expect(refused.code).toBe(-32004);
    expect(refused.message).toContain(contextId);
    expect(result(await rpc(node.url, who, "ListTasks", {})).totalSize).toBe(before);
    expect(result(await rpc(node.url, who, "ListTasks", { contextId })).tasks).toHaveLength(2);
    const elsewhere = result(
      await rpc(node.url, who, "SendMessage", {
        message: userMessage("fresh", { contextId: `ctx-${crypto.randomUUID()}` }),
      }),
    ).task;
    expect(elsewhere.status.state).toBe("TASK_STATE_COMPLETED");
  });
});

describe("file parts the model cannot take", () => {
  it.each([
    [
      "raw bytes",
      { raw: Buffer.from("%PDF-1.7 fake").toString("base64"), mediaType: "application/pdf", filename: "report.pdf" },
    ],
    ["a url", { url: "https://example.com/photo.png", mediaType: "image/png" }],
  ])("refuses a message with %s with -32005, and creates no task", async (_label, part) => {
    const { node, model: m } = main;
    const before = result(await rpc(node.url, who, "ListTasks", {})).totalSize;
    const asked = m.requests.length;
    const message = { messageId: crypto.randomUUID(), role: "ROLE_USER", parts: [{ text: "read this" }, part] };
    const refused = rpcError(await rpc(node.url, who, "SendMessage", { message }));
    expect(refused.code).toBe(-32005);
    expect(refused.data).toContainEqual(expect.objectContaining({ reason: "CONTENT_TYPE_NOT_SUPPORTED" }));
    expect(result(await rpc(node.url, who, "ListTasks", {})).totalSize).toBe(before);
    expect(m.requests.length).toBe(asked);
  });
});

describe("GET /health/ready", () => {
  it("answers 200 when the model endpoint answers", async () => {
    const r = await get(`${main.node.url}/health/ready`, who);
    expect(r.status, r.text).toBe(200);
    expect(r.body).toMatchObject({ ready: true, executor: "openai" });
  });

  it("answers 503 naming the endpoint when the model URL is dead", async () => {
    const r = await get(`${dead.url}/health/ready`, who);
    expect(r.status, r.text).toBe(503);
    expect(r.body).toMatchObject({ ready: false, executor: "openai" });
    expect(r.body.detail).toMatch(/http:\/\/127\.0\.0\.1:\d+\/v1\/models/);
  });
});

describe("cancel mid-stream", () => {
  it("CancelTask while tokens stream: the model sees the abort, the task and the stream end CANCELED", async () => {
    const { node, model: m } = cancel;
    const sse = await openSse(node.url, who, "SendStreamingMessage", { message: userMessage("stream please") });
    expect(sse.status).toBe(200);
    const first = await sse.next();
    const taskId = first!.data.result.task.id as string;
    // Read until both tokens the model sends before stalling came through the node: the task is mid-stream.
    const tokens: string[] = [];
    while (tokens.length < 2) {
      const event = await sse.next();
      expect(event, "the stream ended before two tokens").toBeDefined();
      if (event!.data.result.artifactUpdate) tokens.push(event!.data.result.artifactUpdate.artifact.parts[0].text);
    }
    expect(tokens).toEqual(["one ", "two "]);

    const canceled = result(await rpc(node.url, who, "CancelTask", { id: taskId }));
    expect(canceled.status.state).toBe("TASK_STATE_CANCELED");
    await m.sawAbort();
    expect(m.abortCount).toBe(1);
    const rest = await sse.rest();
    const last = rest.at(-1)!.data.result;
    expect(last.statusUpdate.status.state).toBe("TASK_STATE_CANCELED");
    const stored = result(await rpc(node.url, who, "GetTask", { id: taskId }));
    expect(stored.status.state).toBe("TASK_STATE_CANCELED");
    expect(textOf(stored)).toBe("one two ");
  });
});
