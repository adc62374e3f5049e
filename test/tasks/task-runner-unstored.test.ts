/**
 * What callers hear when a task cannot be stored, through the request handler and runner on a real SQLite
 * file whose triggers make chosen writes fail (as a disk error would): never COMPLETED for a task that is not
 * on disk. A task whose outcome cannot be stored ends FAILED saying so; one whose creation cannot be stored
 * gets its caller -32603; a task that lost part of its record does not end COMPLETED; the tasks sharing those
 * commits are unaffected.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { AgentExecutor, ExecutionOutcome, ExecutionRequest } from "../../src/executors/executor";
import { messageText, stopCause } from "../../src/executors/executor";
import { createLogger } from "../../src/log";
import { A2AError } from "../../src/protocol/errors";
import { DefaultRequestHandler } from "../../src/protocol/request-handler";
import type { Message, StreamItem, Task } from "../../src/protocol/types";
import { openDatabase, type OpenDatabase } from "../../src/store/database";
import { SqliteTaskStore } from "../../src/store/sqlite-task-store";
import { TaskRunner } from "../../src/tasks/task-runner";

let dir: string;
let database: OpenDatabase;
let store: SqliteTaskStore;
let handler: DefaultRequestHandler;
let executor: NotingExecutor;
let log: string;

const alpha = { caller: { name: "alpha", fingerprint: "AA" } };
const message = (text: string): Message => ({ messageId: crypto.randomUUID(), role: "ROLE_USER", parts: [{ text }] });

/**
 * Echoes the text. With "noted" in it, it first notes something in the task's metadata and waits until that
 * is durable, so its outcome is written in a later commit than its creation; with "progress", it then
 * reports progress saying "lose-me", in a commit of its own. Records how each execution was stopped, if it was.
 */
class NotingExecutor implements AgentExecutor {
  readonly kind = "noting";
  readonly stops: (string | undefined)[] = [];

  async execute(req: ExecutionRequest): Promise<ExecutionOutcome> {
    const text = messageText(req.message);
    if (text.includes("noted")) await req.events.note({ step: 1 }).catch(() => {});
    if (text.includes("progress")) {
      req.events.progress("lose-me");
      await req.events.note({ step: 2 }).catch(() => {});
    }
    this.stops.push(stopCause(req.signal));
    return { state: "TASK_STATE_COMPLETED", artifacts: [{ artifactId: "answer", parts: [{ text: `echo: ${text}` }] }] };
  }
}

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), "a2a-unstored-"));
  database = openDatabase(join(dir, "db.sqlite"));
  log = "";
  store = new SqliteTaskStore(database, { log: createLogger((line) => (log += line)) });
  executor = new NotingExecutor();
  const runner = new TaskRunner(store, executor, { maxConcurrent: 64, maxQueued: 100, historyMessages: 20 });
  handler = new DefaultRequestHandler(store, runner);
});
afterEach(() => {
  database.close();
  rmSync(dir, { recursive: true, force: true });
});

/** A trigger that fails writes to `table` whose new row matches `when` (SQL over NEW), as a disk error would. */
function failWrites(table: "tasks" | "task_events", op: "INSERT" | "UPDATE", when: string): void {
  database.sqlite.exec(`CREATE TRIGGER fail_${table}_${op} BEFORE ${op} ON ${table} WHEN ${when} BEGIN SELECT RAISE(ABORT, 'injected disk error'); END`);
}

async function a2aError(p: Promise<unknown>): Promise<A2AError> {
  const err = await p.then(
    () => undefined,
    (e) => e,
  );
  expect(err).toBeInstanceOf(A2AError);
  return err as A2AError;
}

const taskOf = (r: unknown) => (r as { task: Task }).task;
const text = (t: Task | undefined) => t?.status.message?.parts.map((p) => ("text" in p ? p.text : "")).join("") ?? "";
const firstText = (t: Task) => messageText(t.history?.[0] as Message);

/** Every stored event of a task, checked numbered 1, 2, 3, ... with no gap. */
async function storedEvents(taskId: string) {
  const events = await store.eventsAfter(taskId, 0);
  expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
  return events.map((e) => e.response);
}

describe("a task whose outcome cannot be stored", () => {
  it("ends FAILED saying so (blocking caller, GetTask and the event log agree), never COMPLETED; the others of the commit complete", async () => {
    failWrites("tasks", "UPDATE", "NEW.state = 'TASK_STATE_COMPLETED' AND NEW.history LIKE '%poison%'");
    const texts = ["noted good 1", "noted poison", "noted good 2", "noted good 3"];
    const results = await Promise.all(texts.map((t) => handler.sendMessage({ message: message(t) }, alpha)));
    for (const [i, r] of results.entries()) {
      const task = taskOf(r);
      const stored = await store.get(task.id, "alpha") as Task;
      if (texts[i].includes("poison")) {
        expect(task.status.state).toBe("TASK_STATE_FAILED");
        expect(text(task)).toMatch(/could not store this task's outcome, so its result is not kept: injected disk error/);
        expect(task.artifacts ?? []).toEqual([]); // what the caller is shown is what is stored
        expect(stored.status).toEqual(task.status);
        expect(stored.artifacts).toBeUndefined();
        const events = await storedEvents(task.id);
        expect(events.at(-1)).toMatchObject({ statusUpdate: { status: { state: "TASK_STATE_FAILED" } } });
        expect(events.some((e) => "statusUpdate" in e && e.statusUpdate.status.state === "TASK_STATE_COMPLETED")).toBe(false);
      } else {
        expect(task.status.state).toBe("TASK_STATE_COMPLETED");
        expect(stored.status.state).toBe("TASK_STATE_COMPLETED");
        expect(stored.artifacts?.[0]?.parts[0]).toEqual({ text: `echo: ${texts[i]}` });
      }
    }
    expect(log).toMatch(/could not store a task's writes; its callers get an error task_id=\S+ reason="injected disk error"/);
    expect(log).not.toMatch(/noted/); // ids and reasons only, never what the tasks hold
  });

  it("a streaming caller sees the FAILED status last, and no COMPLETED", async () => {
    failWrites("tasks", "UPDATE", "NEW.state = 'TASK_STATE_COMPLETED'");
    const items: StreamItem[] = [];
    for await (const item of await handler.sendStreamingMessage({ message: message("noted stream") }, alpha)) items.push(item);
    const states = items.flatMap((i) => ("statusUpdate" in i.response ? [i.response.statusUpdate.status.state] : []));
    expect(states.at(-1)).toBe("TASK_STATE_FAILED");
    expect(states).not.toContain("TASK_STATE_COMPLETED");
  });

  it("when even FAILED cannot be stored, the blocking caller gets -32603 naming the task", async () => {
    failWrites("tasks", "UPDATE", "NEW.state IN ('TASK_STATE_COMPLETED', 'TASK_STATE_FAILED')");
    const err = await a2aError(handler.sendMessage({ message: message("noted twice unlucky") }, alpha));
    expect(err.code).toBe(-32603);
    expect(err.message).toMatch(/^the node could not store task \S+, so it is not kept: injected disk error$/);
    const [task] = (await store.list("alpha", {})).tasks;
    expect(task.status.state).toBe("TASK_STATE_WORKING"); // as last stored: the next start of the node ends it
  });
});

describe("a task whose creation cannot be stored", () => {
  it("gets its blocking caller -32603 while 20 others sent at the same moment complete and are stored", async () => {
    failWrites("tasks", "INSERT", "NEW.history LIKE '%poison%'");
    const texts = Array.from({ length: 21 }, (_, i) => (i === 10 ? "poison" : `good ${i}`));
    const settled = await Promise.allSettled(texts.map((t) => handler.sendMessage({ message: message(t) }, alpha)));
    const poisoned = settled[10];
    expect(poisoned.status).toBe("rejected");
    expect((poisoned as PromiseRejectedResult).reason).toBeInstanceOf(A2AError);
    expect((poisoned as PromiseRejectedResult).reason.code).toBe(-32603);
    expect((poisoned as PromiseRejectedResult).reason.message).toMatch(/could not store task \S+, so it is not kept: injected disk error/);
    const stored = (await store.list("alpha", { pageSize: 100, historyLength: 1 })).tasks;
    expect(stored.map(firstText).sort()).toEqual(texts.filter((t) => t !== "poison").sort());
    for (const [i, s] of settled.entries()) {
      if (i === 10) continue;
      expect(s.status).toBe("fulfilled");
      const task = taskOf((s as PromiseFulfilledResult<unknown>).value);
      expect(task.status.state).toBe("TASK_STATE_COMPLETED");
      expect((await store.get(task.id, "alpha"))?.status.state).toBe("TASK_STATE_COMPLETED");
    }
  });

  it("gets a returnImmediately caller -32603 instead of a SUBMITTED task, and a streaming caller -32603 before any event", async () => {
    failWrites("tasks", "INSERT", "1");
    const immediate = await a2aError(handler.sendMessage({ message: message("noted a"), configuration: { returnImmediately: true } }, alpha));
    expect(immediate.code).toBe(-32603);
    expect(immediate.message).toMatch(/could not store task .*injected disk error/);
    const streaming = await a2aError(handler.sendStreamingMessage({ message: message("noted b") }, alpha));
    expect(streaming.code).toBe(-32603);
    expect((await store.list("alpha", {})).totalSize).toBe(0);
  });

  it("stops the execution (it cannot be kept) instead of letting it run on", async () => {
    failWrites("tasks", "INSERT", "1");
    await a2aError(handler.sendMessage({ message: message("noted c") }, alpha));
    expect(executor.stops).toEqual(["unstored"]);
  });
});

describe("a task that lost part of its record", () => {
  it("does not end COMPLETED when one of its events could not be stored: it ends FAILED saying so", async () => {
    failWrites("task_events", "INSERT", "NEW.events LIKE '%lose-me%'");
    const task = taskOf(await handler.sendMessage({ message: message("noted progress") }, alpha));
    expect(task.status.state).toBe("TASK_STATE_FAILED");
    expect(text(task)).toMatch(/could not store part of this task, so its result is not kept: injected disk error/);
    expect((await store.get(task.id, "alpha"))?.status.state).toBe("TASK_STATE_FAILED");
    expect(executor.stops).toEqual(["unstored"]);
  });
});
