/**
 * What the runner tells its watchers (the daemon's task log and metrics): a task accepted, waiting for input,
 * answered, finished with its state, its duration and the executor's share of it, on a real SQLite store.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { AgentExecutor, ExecutionOutcome, ExecutionRequest } from "../../src/executors/executor";
import { messageText } from "../../src/executors/executor";
import { createLogger } from "../../src/log";
import type { Message, SendMessageResult, Task } from "../../src/protocol/types";
import type { OpenDatabase } from "../../src/store/database";
import type { SqliteTaskStore } from "../../src/store/sqlite-task-store";
import { allOf, type TaskLifecycle } from "../../src/tasks/lifecycle";
import { taskLog } from "../../src/tasks/task-log";
import { sqliteTaskStore, taskFixture } from "../helpers/task-fixture";

let database: OpenDatabase;
let store: SqliteTaskStore;
const alpha = { caller: { name: "alpha", fingerprint: "AA" } };
const message = (text: string, extra: Partial<Message> = {}): Message => ({
  messageId: crypto.randomUUID(),
  role: "ROLE_USER",
  parts: [{ text }],
  ...extra,
});
const taskOf = (r: SendMessageResult): Task => (r as { task: Task }).task;

beforeEach(() => {
  ({ database, store } = sqliteTaskStore("a2a-lifecycle-"));
});
afterEach(() => {
  database.close();
});

/** Asks a question when the task says "ask", fails when it says "fail", otherwise answers at once. */
class Executor implements AgentExecutor {
  readonly kind = "test";
  async execute(req: ExecutionRequest): Promise<ExecutionOutcome> {
    const text = messageText(req.message);
    if (text === "fail") return { state: "TASK_STATE_FAILED", message: "asked to fail" };
    if (text === "ask") {
      const answer = await req.input({ text: "yes or no?" });
      return { state: "TASK_STATE_COMPLETED", message: `got ${messageText(answer)}` };
    }
    return { state: "TASK_STATE_COMPLETED", message: "done" };
  }
}

function setup() {
  const events: unknown[][] = [];
  const at = { waiting: 0, answered: 0 };
  const recorder: TaskLifecycle = {
    accepted: (t, p, a) => events.push(["accepted", t.id, p, a]),
    waitingForInput: (t, p) => {
      at.waiting = performance.now();
      events.push(["waiting", t.id, p]);
    },
    answered: (t, p) => {
      at.answered = performance.now();
      events.push(["answered", t.id, p]);
    },
    finished: (t, p, s, sec, ex) => events.push(["finished", t.id, p, s, sec, ex]),
    leftForRestart: (t, p) => events.push(["left", t.id, p]),
  };
  let log = "";
  const lifecycle = allOf(recorder, taskLog(createLogger((l) => (log += l), "info", "json")));
  const { runner, handler } = taskFixture({
    store,
    executor: new Executor(),
    runnerOptions: { maxConcurrent: 2, maxQueued: 10, historyMessages: 10, lifecycle },
  });
  return { events, at, log: () => log, handler, runner };
}

describe("the task lifecycle", () => {
  it("a task: accepted, then finished with its final state, the time since it was taken, and the executor's", async () => {
    const { events, handler } = setup();
    const t = taskOf(await handler.sendMessage({ message: message("hello") }, alpha));
    const failed = taskOf(await handler.sendMessage({ message: message("fail") }, alpha));
    expect(events).toEqual([
      ["accepted", t.id, "alpha", "new"],
      ["finished", t.id, "alpha", "TASK_STATE_COMPLETED", expect.any(Number), expect.any(Number)],
      ["accepted", failed.id, "alpha", "new"],
      ["finished", failed.id, "alpha", "TASK_STATE_FAILED", expect.any(Number), expect.any(Number)],
    ]);
    const [, , , , seconds, executor] = events[1] as number[];
    expect(executor).toBeGreaterThanOrEqual(0);
    expect(executor).toBeLessThanOrEqual(seconds);
  });

  it("a question: waiting, answered, finished; the wait for the answer is not the executor's time", async () => {
    const { events, handler, at } = setup();
    const asked = taskOf(await handler.sendMessage({ message: message("ask") }, alpha));
    expect(asked.status.state).toBe("TASK_STATE_INPUT_REQUIRED");
    await new Promise((r) => setTimeout(r, 50)); // the answer comes a moment later
    const done = taskOf(await handler.sendMessage({ message: message("yes", { taskId: asked.id }) }, alpha));
    expect(done.status.state).toBe("TASK_STATE_COMPLETED");
    expect(events.map((e) => e[0])).toEqual(["accepted", "waiting", "answered", "finished"]);
    const [, , , , seconds, executor] = events[3] as number[];
    // The runner's view of the wait starts no later and ends no earlier than the events that frame it, so the
    // executor's share is at most the task's time less the wait between those events (no clock margin needed).
    const waited = (at.answered - at.waiting) / 1000;
    expect(waited).toBeGreaterThan(0);
    expect(executor).toBeLessThanOrEqual(seconds - waited + 1e-9);
  });

  it("the task log: one JSON line per event, with task_id, context_id and peer, never the task's text", async () => {
    const { handler, log } = setup();
    const secret = `secret ${crypto.randomUUID()}`;
    const t = taskOf(await handler.sendMessage({ message: message(secret) }, alpha));
    const lines = log()
      .trimEnd()
      .split("\n")
      .map((l) => JSON.parse(l));
    expect(lines).toEqual([
      {
        time: expect.any(String),
        level: "info",
        msg: "task accepted",
        task_id: t.id,
        context_id: t.contextId,
        peer: "alpha",
      },
      {
        time: expect.any(String),
        level: "info",
        msg: "task finished",
        task_id: t.id,
        context_id: t.contextId,
        peer: "alpha",
        state: "completed",
        duration_ms: expect.any(Number),
        executor_ms: expect.any(Number),
      },
    ]);
    expect(log()).not.toContain(secret);
  });

  it("the runner's load: running, queued and waiting for input", async () => {
    const { handler, runner } = setup();
    expect(runner.load()).toEqual({ running: 0, queued: 0, waitingForInput: 0 });
    await handler.sendMessage({ message: message("ask") }, alpha);
    expect(runner.load()).toEqual({ running: 0, queued: 0, waitingForInput: 1 });
  });
});
