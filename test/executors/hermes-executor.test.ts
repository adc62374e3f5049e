/**
 * HermesExecutor against a fake Hermes Agent runs API on loopback (real HTTP, real SSE): each mapping of
 * issue 4 with the executor alone and a recording events sink, then the approval round trip and a restart
 * re-attach through TaskRunner and the request handler on a real SQLite store.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { APPROVAL_KEY, HermesExecutor, RUN_KEY } from "../../src/executors/hermes-executor";
import type { ExecutionEvents, ExecutionRequest } from "../../src/executors/executor";
import { DefaultRequestHandler } from "../../src/protocol/request-handler";
import type { Artifact, Message, Task } from "../../src/protocol/types";
import { openDatabase, type OpenDatabase } from "../../src/store/database";
import { SqliteTaskStore } from "../../src/store/sqlite-task-store";
import { TaskRunner } from "../../src/tasks/task-runner";
import { hermes, startFakeHermes, type FakeHermes, type FakeHermesOptions } from "../helpers/fake-hermes";

const fakes: FakeHermes[] = [];
function fake(options: FakeHermesOptions = {}): FakeHermes {
  const f = startFakeHermes(options);
  fakes.push(f);
  return f;
}
afterEach(() => {
  for (const f of fakes.splice(0)) f.stop();
});

const API_KEY = "hermes-test-key";
const message = (text: string, extra: Partial<Message> = {}): Message => ({ messageId: crypto.randomUUID(), role: "ROLE_USER", parts: [{ text }], ...extra });

interface Chunk {
  artifact: Artifact;
  append?: boolean;
  lastChunk?: boolean;
}

/** An ExecutionEvents sink that records every call, and lets a test await the n-th artifact chunk. */
function recorder() {
  const chunks: Chunk[] = [];
  const progress: { text: string; metadata?: Record<string, unknown> }[] = [];
  const notes: Record<string, unknown>[] = [];
  const waiters: { n: number; resolve(): void }[] = [];
  const events: ExecutionEvents = {
    progress: (text, metadata) => progress.push({ text, metadata }),
    artifact: (artifact, options = {}) => {
      chunks.push({ artifact, ...options });
      for (let i = waiters.length - 1; i >= 0; i--) if (chunks.length >= waiters[i]!.n) waiters.splice(i, 1)[0]!.resolve();
    },
    note: (m) => notes.push(m),
  };
  return {
    events,
    chunks,
    progress,
    notes,
    text: () => chunks.map((c) => c.artifact.parts.map((p) => p.text ?? "").join("")).join(""),
    /** Every note merged, as the task's metadata would hold them. */
    noted: () => Object.assign({}, ...notes) as Record<string, unknown>,
    chunk: (n: number) => (chunks.length >= n ? Promise.resolve() : new Promise<void>((resolve) => waiters.push({ n, resolve }))),
  };
}

function requestFor(text: string, events: ExecutionEvents, extra: Partial<ExecutionRequest> = {}): ExecutionRequest {
  return {
    taskId: "TASK-1",
    contextId: "CTX-1",
    message: message(text),
    history: () => [],
    caller: "alpha",
    signal: new AbortController().signal,
    events,
    metadata: {},
    resumed: false,
    ...extra,
  };
}

const executorFor = (f: FakeHermes) => new HermesExecutor({ baseUrl: f.url, apiKey: API_KEY });

describe("HermesExecutor, alone", () => {
  it("starts a run with the task id as Idempotency-Key and the bearer key, and notes the run id at once", async () => {
    const f = fake({ apiKey: API_KEY });
    const rec = recorder();
    const outcome = await executorFor(f).execute(requestFor("check the disks", rec.events, { taskId: "01TASKIDEMPOTENT" }));
    expect(outcome.state).toBe("TASK_STATE_COMPLETED");
    const start = f.requests.find((r) => r.method === "POST" && r.path === "/v1/runs")!;
    expect(start.headers["idempotency-key"]).toBe("01TASKIDEMPOTENT");
    expect(start.bearer).toBe(API_KEY);
    expect(start.body).toMatchObject({ input: "check the disks", metadata: { a2a_task_id: "01TASKIDEMPOTENT", a2a_context_id: "CTX-1" } });
    const run = await f.runCreated();
    expect(rec.notes[0]).toEqual({ [RUN_KEY]: run.id });
    // Every call to Hermes carries the key.
    expect(f.requests.filter((r) => r.path.startsWith("/v1/")).every((r) => r.bearer === API_KEY)).toBe(true);
    expect(f.runsCreated).toBe(1);
  });

  it("turns message.delta events into artifact chunks (append false, then true), closed by a lastChunk on run.completed", async () => {
    const f = fake({ script: [hermes.delta("Disks "), hermes.delta("are "), hermes.delta("fine."), hermes.completed()], eventDelayMs: 2 });
    const rec = recorder();
    const outcome = await executorFor(f).execute(requestFor("check", rec.events));
    expect(outcome.state).toBe("TASK_STATE_COMPLETED");
    expect(rec.chunks.map((c) => c.artifact.parts[0]!.text)).toEqual(["Disks ", "are ", "fine.", ""]);
    expect(rec.chunks.map((c) => c.append === true)).toEqual([false, true, true, true]);
    expect(rec.chunks.map((c) => c.lastChunk === true)).toEqual([false, false, false, true]);
    expect(rec.text()).toBe("Disks are fine.");
  });

  it("takes the answer from run.completed's output when no delta came", async () => {
    const f = fake({ script: [hermes.completed("all in one")] });
    const rec = recorder();
    expect((await executorFor(f).execute(requestFor("x", rec.events))).state).toBe("TASK_STATE_COMPLETED");
    expect(rec.chunks).toHaveLength(1);
    expect(rec.chunks[0]).toMatchObject({ lastChunk: true, artifact: { parts: [{ text: "all in one" }] } });
  });

  it("reports tool and reasoning events as progress with metadata, never as tokens", async () => {
    const f = fake({
      script: [
        hermes.toolCall("terminal", { command: "df -h" }),
        hermes.toolResult("terminal", "/dev/sda1 40%"),
        hermes.reasoning("the disk is fine"),
        hermes.delta("40% used"),
        hermes.completed(),
      ],
    });
    const rec = recorder();
    const outcome = await executorFor(f).execute(requestFor("disk?", rec.events));
    expect(outcome.state).toBe("TASK_STATE_COMPLETED");
    expect(rec.progress.map((p) => p.text)).toEqual(["tool.call: terminal", "tool.result: terminal", "reasoning.available"]);
    expect(rec.progress[0]!.metadata).toMatchObject({ hermes: { event: "tool.call", tool: "terminal", args: { command: "df -h" } } });
    expect(rec.progress[1]!.metadata).toMatchObject({ hermes: { event: "tool.result", tool: "terminal", result: "/dev/sda1 40%" } });
    expect(rec.progress[2]!.metadata).toMatchObject({ hermes: { event: "reasoning.available" } });
    expect(rec.text()).toBe("40% used");
    expect(rec.text()).not.toContain("df -h");
  });

  it("pauses on approval.request as INPUT_REQUIRED with the prompt and choices, noting the run and the pending approval", async () => {
    const f = fake({ script: [hermes.delta("Ready to deploy. "), hermes.approval("appr-1", "Deploy to production?"), hermes.delta("Deployed."), hermes.completed()] });
    const rec = recorder();
    const outcome = await executorFor(f).execute(requestFor("deploy it", rec.events));
    const run = await f.waitingForApproval();
    expect(outcome.state).toBe("TASK_STATE_INPUT_REQUIRED");
    expect(outcome.message).toContain("Deploy to production?");
    expect(outcome.message).toMatch(/yes \/ no/);
    expect(rec.noted()).toMatchObject({ [RUN_KEY]: run.id, [APPROVAL_KEY]: { approval_id: "appr-1", prompt: "Deploy to production?" } });
    expect(rec.text()).toBe("Ready to deploy. ");
    expect(run.approvals).toEqual([]);
  });

  it("answers the approval with the next message's text as the choice, then follows the run to COMPLETED", async () => {
    const f = fake({
      script: [hermes.approval("appr-7", "Restart nginx?", ["yes", "no"], { yes: [hermes.toolCall("systemctl")], no: [hermes.failed("declined")] }), hermes.delta("Restarted."), hermes.completed()],
    });
    const first = recorder();
    expect((await executorFor(f).execute(requestFor("restart nginx", first.events))).state).toBe("TASK_STATE_INPUT_REQUIRED");
    const run = await f.waitingForApproval();

    const second = recorder();
    const outcome = await executorFor(f).execute(requestFor("yes", second.events, { metadata: first.noted() }));
    const answer = await f.approvalAnswered(run.id);
    expect(answer).toMatchObject({ approval_id: "appr-7", choice: "yes" });
    expect(outcome.state).toBe("TASK_STATE_COMPLETED");
    expect(second.progress.map((p) => p.text)).toEqual(["tool.call: systemctl"]);
    expect(second.text()).toBe("Restarted.");
    expect(second.noted()[APPROVAL_KEY]).toBeNull(); // the pending approval is cleared
    expect(f.runsCreated).toBe(1); // the same run continued, not a new one
    const approvalPost = f.requests.find((r) => r.path === `/v1/runs/${run.id}/approval`)!;
    expect(approvalPost.bearer).toBe(API_KEY);
    expect(run.eventStreams).toBe(2);
  });

  it("ends FAILED with the reason on run.failed", async () => {
    const f = fake({ script: [hermes.delta("Trying... "), hermes.failed("tool 'terminal' is not allowed on this host")] });
    const rec = recorder();
    const outcome = await executorFor(f).execute(requestFor("x", rec.events));
    expect(outcome.state).toBe("TASK_STATE_FAILED");
    expect(outcome.message).toContain("tool 'terminal' is not allowed on this host");
  });

  it("on abort, stops the run (POST /v1/runs/{id}/stop) and ends CANCELED", async () => {
    const f = fake({ script: [hermes.delta("working on it"), hermes.stall()] });
    const rec = recorder();
    const abort = new AbortController();
    const running = executorFor(f).execute(requestFor("long job", rec.events, { signal: abort.signal }));
    await rec.chunk(1);
    abort.abort(new Error("canceled by alpha"));
    const outcome = await running;
    const run = await f.stopped();
    expect(outcome.state).toBe("TASK_STATE_CANCELED");
    expect(run.status).toBe("stopped");
    const stop = f.requests.find((r) => r.method === "POST" && r.path === `/v1/runs/${run.id}/stop`)!;
    expect(stop.bearer).toBe(API_KEY);
  });

  it("re-attaches to a noted run after a restart (resumed) without starting a new one", async () => {
    const f = fake({ script: [hermes.delta("resumed "), hermes.delta("output"), hermes.completed()] });
    const run = f.createRun("earlier input", "TASK-R");
    const rec = recorder();
    const outcome = await executorFor(f).execute(requestFor("earlier input", rec.events, { taskId: "TASK-R", metadata: { [RUN_KEY]: run.id }, resumed: true }));
    expect(outcome.state).toBe("TASK_STATE_COMPLETED");
    expect(rec.text()).toBe("resumed output");
    expect(f.requests.filter((r) => r.method === "POST" && r.path === "/v1/runs")).toHaveLength(0);
    expect(f.requests.some((r) => r.method === "GET" && r.path === `/v1/runs/${run.id}/events`)).toBe(true);
    expect(f.runsCreated).toBe(1);
  });

  it("reports readiness from GET /health", async () => {
    const f = fake();
    expect(await executorFor(f).ready(AbortSignal.timeout(5000))).toMatchObject({ ready: true });
    const url = f.url;
    f.stop();
    expect((await new HermesExecutor({ baseUrl: url }).ready(AbortSignal.timeout(5000))).ready).toBe(false);
  });
});

describe("HermesExecutor, through TaskRunner on SQLite", () => {
  let dir: string;
  let database: OpenDatabase;
  let store: SqliteTaskStore;
  const alpha = { caller: { name: "alpha", fingerprint: "AA" } };

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "a2a-hermes-exec-"));
    database = openDatabase(join(dir, "db.sqlite"));
    store = new SqliteTaskStore(database);
  });
  afterEach(() => {
    database.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const runnerFor = (f: FakeHermes) => new TaskRunner(store, executorFor(f), { maxConcurrent: 4, maxQueued: 10, historyMessages: 20 });

  it("an approval round trip: INPUT_REQUIRED, then the follow-up message completes the same run with the whole answer", async () => {
    const f = fake({ script: [hermes.delta("Plan: deploy v2. "), hermes.approval("a1", "Proceed with the deploy?"), hermes.delta("Deployed v2."), hermes.completed()] });
    const handler = new DefaultRequestHandler(store, runnerFor(f));
    const first = (await handler.sendMessage({ message: message("deploy it") }, alpha)) as { task: Task };
    expect(first.task.status.state).toBe("TASK_STATE_INPUT_REQUIRED");
    expect(first.task.status.message?.parts[0]!.text).toContain("Proceed with the deploy?");
    const run = await f.runCreated();
    expect(store.get(first.task.id, "alpha")!.metadata).toMatchObject({ [RUN_KEY]: run.id, [APPROVAL_KEY]: { approval_id: "a1" } });

    const second = (await handler.sendMessage({ message: message("yes", { taskId: first.task.id }) }, alpha)) as { task: Task };
    expect(second.task.status.state).toBe("TASK_STATE_COMPLETED");
    expect((await f.approvalAnswered(run.id)).choice).toBe("yes");
    expect(f.runsCreated).toBe(1);
    const stored = store.get(first.task.id, "alpha")!;
    expect(stored.metadata?.[APPROVAL_KEY]).toBeNull();
    // Everything the agent streamed over the task's life is kept: nothing said before the approval is lost.
    const text = (stored.artifacts ?? []).flatMap((a) => a.parts.map((p) => p.text ?? "")).join("");
    expect(text).toContain("Plan: deploy v2. ");
    expect(text).toContain("Deployed v2.");
  });

  it("a node restarted mid-run re-attaches to the noted run instead of starting it again", async () => {
    const f = fake({ script: [hermes.delta("picked "), hermes.delta("up"), hermes.completed()] });
    const id = "01HERMESRESTARTED000000000";
    const run = f.createRun("long job", id);
    await store.create({ id, contextId: "c", owner: "alpha", message: message("long job", { taskId: id, contextId: "c" }), executor: "hermes", timestamp: new Date().toISOString() })
      .committed;
    await store.setStatus(id, { state: "TASK_STATE_WORKING", timestamp: new Date().toISOString() });
    await store.finish(id, { state: "TASK_STATE_WORKING", timestamp: new Date().toISOString() }, [], { [RUN_KEY]: run.id });

    const runner = runnerFor(f);
    expect(await runner.recover()).toEqual({ resumed: 1, failed: 0 });
    const done = await runner.settledOf(id)!;
    expect(done.status.state).toBe("TASK_STATE_COMPLETED");
    expect(f.requests.filter((r) => r.method === "POST" && r.path === "/v1/runs")).toHaveLength(0);
    expect(store.get(id, "alpha")!.artifacts![0]!.parts[0]!.text).toBe("picked up");
  });

  it("CancelTask mid-run stops the Hermes run and the task ends CANCELED", async () => {
    const f = fake({ script: [hermes.delta("step 1 "), hermes.stall()] });
    const runner = runnerFor(f);
    const handler = new DefaultRequestHandler(store, runner);
    const r = (await handler.sendMessage({ message: message("forever"), configuration: { returnImmediately: true } }, alpha)) as { task: Task };
    const run = await f.runCreated();
    // Wait until the run's first event went out, so the cancel lands mid-stream.
    await f.eventsSent(run.id, 1);
    const canceled = await handler.cancelTask({ id: r.task.id }, alpha);
    expect(canceled.status.state).toBe("TASK_STATE_CANCELED");
    expect((await f.stopped(run.id)).status).toBe("stopped");
  });
});
