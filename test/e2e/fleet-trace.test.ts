/**
 * One trace across the fleet (issue 24), with the compiled binary: node A's home sends (`a2a-node send`) to node
 * B, which runs a model task (the openai executor against the model twins of test/fakes/); both export to one
 * OTLP receiver (the twin of test/fakes/otlp-receiver.ts), each from its own config.toml (otlp_endpoint). The
 * receiver must get ONE trace whose spans cover the client, node B's request and task, and the model call,
 * with every parent link present; the same when B is killed (kill -9) while the model is slow and restarted
 * (the task re-attaches: same trace id), and when two Postgres replicas share the task and one takes it over
 * from the other. Each test prints the trace as a text tree (test/helpers/trace-tree.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { runBinary, serveBinary, type ServedBinary } from "../helpers/binary";
import { makeFleet, type Fleet } from "../helpers/fleet";
import { freshDatabase, type TestDatabase } from "../helpers/postgres";
import { startFakeModel, type FakeModel } from "../fakes/openai";
import { startGatedModel, type GatedModel } from "../fakes/gated-model";
import { startOtlpReceiver, type OtlpReceiver } from "../fakes/otlp-receiver";
import { ancestors, linkProblems, traceTree, waitForTrace, type TracedSpan } from "../helpers/trace-tree";

let fleet: Fleet;
let receiver: OtlpReceiver;
let model: FakeModel;
let gated: GatedModel;
let db: TestDatabase | undefined;
const nodes: ServedBinary[] = [];

const NODES = ["beta", "gamma", "r1", "r2"];
/**
 * The node side of tracing (spans for requests, tasks and model calls, and the otlp_endpoint setting it reads)
 * is another branch's work (tracing-node): until it is merged, a node neither records spans nor accepts
 * otlp_endpoint in its config, and these tests are skipped.
 */
const NODE_SIDE = false;
const SECRET = "the rotation key is under the third plant";

beforeAll(async () => {
  if (!NODE_SIDE) return;
  fleet = await makeFleet(["alpha", ...NODES]);
  receiver = await startOtlpReceiver();
  model = startFakeModel();
  gated = startGatedModel();
  // Every home exports to the receiver, the sender's included: the client's spans come from its config too.
  for (const name of ["alpha", ...NODES])
    writeFileSync(join(fleet.homes[name]!, "config.toml"), `otlp_endpoint = "${receiver.endpoint}"\n`);
});

afterAll(async () => {
  await Promise.all(nodes.map((n) => n.stop("SIGKILL").catch(() => undefined)));
  gated?.release();
  gated?.stop();
  model?.stop();
  await receiver?.close();
  fleet?.cleanup();
  await db?.drop();
});

async function serve(name: string, modelUrl: string, extra: string[] = []): Promise<ServedBinary> {
  const node = await serveBinary(fleet.homes[name]!, [
    "--executor",
    "openai",
    "--model-url",
    modelUrl,
    "--model",
    "test-model",
    ...extra,
  ]);
  nodes.push(node);
  return node;
}

/** The sender's CLI: the compiled binary on alpha's home. */
async function alpha(...args: string[]) {
  return runBinary(["--home", fleet.homes.alpha!, ...args]);
}

async function addPeer(name: string, url: string): Promise<void> {
  const r = await alpha("peers", "add", name, url, "--replace");
  expect(r.code, r.stderr).toBe(0);
}

/** `send --json --verbose`: the task and the trace id, which stderr and the JSON must agree on. */
async function send(peer: string, text: string, ...flags: string[]): Promise<{ task: any; traceId: string }> {
  const r = await alpha("send", "--agent", peer, "--task", text, "--json", "--verbose", ...flags);
  expect(r.code, r.stderr).toBe(0);
  const parsed = JSON.parse(r.stdout);
  const traceId = /^trace ([0-9a-f]{32})$/m.exec(r.stderr)?.[1];
  expect(traceId, r.stderr).toBeDefined();
  expect(parsed.traceId).toBe(traceId);
  const { traceId: _, ...task } = parsed;
  return { task, traceId: traceId! };
}

const isClient = (s: TracedSpan) => s.resource["process.command"] !== undefined;
const fromNode = (s: TracedSpan) => !isClient(s);
const modelCalls = (spans: TracedSpan[]) => spans.filter((s) => s.attributes["gen_ai.request.model"] === "test-model");
/** Node B's span of the task itself, once it ended in `state`. */
const taskSpan = (spans: TracedSpan[], id: string, state = "TASK_STATE_COMPLETED") =>
  spans.find(
    (s) =>
      fromNode(s) && s.kind !== 2 && s.attributes["a2a.task.id"] === id && s.attributes["a2a.task.state"] === state,
  );

/** Prints the trace, and checks it is whole: one root (the command's span), every parent received. */
function expectWhole(spans: TracedSpan[], title: string): TracedSpan {
  console.log(`${title}\n${traceTree(spans)}`);
  expect(linkProblems(spans), traceTree(spans)).toEqual([]);
  const root = spans.find((s) => !s.parentSpanId)!;
  expect(root).toMatchObject({ name: "a2a-node send", kind: 1 });
  expect(isClient(root)).toBe(true);
  return root;
}

/** The node's server span that continued the client's call, for each client call span that reached a node. */
function expectServerUnder(spans: TracedSpan[], clientCall: TracedSpan): TracedSpan {
  const server = spans.find((s) => s.kind === 2 && s.parentSpanId === clientCall.spanId);
  expect(server, `no server span under ${clientCall.name}\n${traceTree(spans)}`).toBeDefined();
  expect(fromNode(server!)).toBe(true);
  return server!;
}

describe.runIf(NODE_SIDE)("one send from node A to node B running a model task", () => {
  it("is one trace: the client, B's request and task, the model call, each under its parent", async () => {
    const beta = await serve("beta", model.url);
    await addPeer("beta", beta.url);
    const { task, traceId } = await send("beta", SECRET, "--wait");
    expect(task.status.state).toBe("TASK_STATE_COMPLETED");

    const spans = await waitForTrace(
      receiver,
      traceId,
      (s) => taskSpan(s, task.id) !== undefined && modelCalls(s).length > 0 && s.some((x) => !x.parentSpanId),
    );
    const root = expectWhole(spans, "trace of one send, alpha -> beta (openai executor):");

    // The client: its own spans, a client span per call, each naming the peer.
    const sendCall = spans.find((s) => isClient(s) && s.name === "a2a SendMessage")!;
    expect(sendCall).toMatchObject({ kind: 3, parentSpanId: root.spanId });
    expect(sendCall.attributes).toMatchObject({
      "rpc.method": "SendMessage",
      "a2a.peer.name": "beta",
      "a2a.task.id": task.id,
    });
    // Node B continued it: its request span is the client call's child, its task and model call below that.
    const server = expectServerUnder(spans, sendCall);
    const done = taskSpan(spans, task.id)!;
    expect(ancestors(spans, done)).toContain(server);
    const [call] = modelCalls(spans);
    expect(call!.kind).toBe(3);
    expect(ancestors(spans, call!).map((s) => s.spanId)).toContain(done.spanId);
    // Every call the client made while it waited (GetTask, SubscribeToTask) was continued by node B as well.
    for (const c of spans.filter((s) => isClient(s) && s.kind === 3 && s.name !== "a2a GetAgentCard"))
      expectServerUnder(spans, c);
    // Nothing of the message text anywhere in what was exported, by the client or the node.
    expect(JSON.stringify(receiver.requests)).not.toContain("rotation key");
  });
});

describe.runIf(NODE_SIDE)("across a restart", () => {
  it("kill -9 while the model is slow, restart: the task re-attaches to the same trace", async () => {
    const gamma = await serve("gamma", gated.url);
    await addPeer("gamma", gamma.url);
    const text = `[hold] survive a crash ${crypto.randomUUID()}`;
    const { task, traceId } = await send("gamma", text);
    await gated.arrival(text);
    // What gamma recorded of the request is exported before it dies (its task span is still open, and lost).
    await waitForTrace(receiver, traceId, (s) => s.some((x) => fromNode(x) && x.kind === 2));
    await gamma.stop("SIGKILL");
    const restarted = await serve("gamma", gated.url);
    await addPeer("gamma", restarted.url);
    await gated.arrivals(text, 2); // the openai executor runs an interrupted task again
    gated.release(text);
    const waited = await alpha("status", "--agent", "gamma", "--task-id", task.id, "--wait", "--json");
    expect(waited.code, waited.stderr).toBe(0);
    expect(JSON.parse(waited.stdout).status.state).toBe("TASK_STATE_COMPLETED");

    const spans = await waitForTrace(
      receiver,
      traceId,
      (s) => taskSpan(s, task.id) !== undefined && modelCalls(s).length > 0,
    );
    expectWhole(spans, "trace of one send across kill -9 and a restart of gamma:");
    // The model call after the restart, and the task's end, are in the send's trace, under the send's call.
    const sendCall = spans.find((s) => isClient(s) && s.name === "a2a SendMessage")!;
    const done = taskSpan(spans, task.id)!;
    expect(ancestors(spans, done)).toContain(sendCall);
    expect(ancestors(spans, modelCalls(spans).at(-1)!)).toContain(done);
  });
});

describe.runIf(NODE_SIDE)("across Postgres replicas", () => {
  it("the replica that takes a task over continues its trace", async () => {
    db = await freshDatabase("trace");
    const replica = (name: string) => serve(name, gated.url, ["--database", db!.url, "--lease", "1"]);
    const [r1, r2] = [await replica("r1"), await replica("r2")];
    await addPeer("r1", r1.url);
    await addPeer("r2", r2.url);
    const text = `[hold] taken over ${crypto.randomUUID()}`;
    const { task, traceId } = await send("r1", text);
    await gated.arrival(text);
    const before = await waitForTrace(receiver, traceId, (s) => s.some((x) => fromNode(x) && x.kind === 2));
    const r1Resource = JSON.stringify(before.find((x) => fromNode(x))!.resource);
    await r1.stop("SIGKILL");
    await gated.arrivals(text, 2); // r2 took the task over once r1's lease ran out
    gated.release(text);
    const waited = await alpha("status", "--agent", "r2", "--task-id", task.id, "--wait", "--json");
    expect(waited.code, waited.stderr).toBe(0);
    expect(JSON.parse(waited.stdout).status.state).toBe("TASK_STATE_COMPLETED");

    const spans = await waitForTrace(receiver, traceId, (s) => taskSpan(s, task.id) !== undefined);
    expectWhole(spans, "trace of one send to r1, taken over by r2 (two replicas on one Postgres):");
    const done = taskSpan(spans, task.id)!;
    // r2 ended it (another process than r1), in the trace r1's request started, under the client's call.
    expect(JSON.stringify(done.resource)).not.toBe(r1Resource);
    const sendCall = spans.find((s) => isClient(s) && s.name === "a2a SendMessage")!;
    expect(ancestors(spans, done)).toContain(sendCall);
    expect(ancestors(spans, modelCalls(spans).at(-1)!)).toContain(done);
  });
});
