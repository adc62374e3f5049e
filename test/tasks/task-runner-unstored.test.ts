/**
 * What callers hear when a task cannot be stored, through the request handler and runner on a real SQLite
 * file whose triggers make chosen writes fail (as a disk error would): never COMPLETED for a task that is not
 * on disk. A task whose outcome cannot be stored ends FAILED saying so; one whose creation cannot be stored
 * gets its caller -32603; a task that lost part of its record does not end COMPLETED; the tasks sharing those
 * commits are unaffected. A task of which nothing more can be stored is not left behind: it is run again as
 * after a restart once the database takes writes. On a real Postgres, a write cut in flight (its connection
 * ended) leaves no gap in the task's events: what the task wrote after it is dropped, and its FAILED follows the
 * last stored event.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { AgentExecutor, ExecutionOutcome, ExecutionRequest } from "../../src/executors/executor";
import { messageText, stopCause } from "../../src/executors/executor";
import { createLogger } from "../../src/log";
import { A2AError } from "../../src/protocol/errors";
import { DefaultRequestHandler } from "../../src/rpc/request-handler";
import type { Message, StreamItem, Task } from "../../src/protocol/types";
import type { OpenDatabase } from "../../src/store/database";
import type { SqliteTaskStore } from "../../src/store/sqlite-task-store";
import { PostgresTaskStore } from "../../src/store/postgres/postgres-task-store";
import type { TaskLifecycle } from "../../src/tasks/lifecycle";
import { taskLog } from "../../src/tasks/task-log";
import { TaskRunner } from "../../src/tasks/task-runner";
import { emptyPostgres } from "../helpers/postgres-stores";
import { taskFixture, type SqliteTaskFixture } from "../helpers/task-fixture";

let fixture: SqliteTaskFixture;
let database: OpenDatabase;
let store: SqliteTaskStore;
let handler: DefaultRequestHandler;
let runner: TaskRunner;
let executor: NotingExecutor;
let log: string;
/** Resolves once the log holds `n` lines matching `pattern` (the lines are the events a test waits for). */
let logged: (pattern: RegExp, n: number) => Promise<void>;
/** Resolves with the task once the runner reports it finished (an outcome stored). */
let finished: (taskId: string) => Promise<Task>;

const alpha = { caller: { name: "alpha", fingerprint: "AA" } };
const message = (text: string): Message => ({ messageId: crypto.randomUUID(), role: "ROLE_USER", parts: [{ text }] });

/**
 * Echoes the text. With "noted" in it, it first notes something in the task's metadata and waits until that
 * is durable, so its outcome is written in a later commit than its creation; with "progress", it then
 * reports progress saying "lose-me", in a commit of its own. Records how each execution was stopped, if it was.
 */
class NotingExecutor implements AgentExecutor {
  readonly kind = "noting";
  /** Run again after an interruption, as echo and openai are. */
  readonly onRestart = "rerun" as const;
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
  log = "";
  const waiters: { ready: () => boolean; resolve: () => void }[] = [];
  const write = (line: string) => {
    log += line;
    for (let i = waiters.length - 1; i >= 0; i--) if (waiters[i]!.ready()) waiters.splice(i, 1)[0]!.resolve();
  };
  logged = (pattern, n) => {
    const g = new RegExp(pattern.source, "g");
    const ready = () => (log.match(g)?.length ?? 0) >= n;
    return ready() ? Promise.resolve() : new Promise((resolve) => waiters.push({ ready, resolve }));
  };
  executor = new NotingExecutor();
  const ends = watchEnds();
  finished = ends.finished;
  const lifecycle = { ...taskLog(createLogger(write)), ...ends.lifecycle };
  fixture = taskFixture({
    executor,
    storeOptions: { log: createLogger(write) },
    runnerOptions: { maxConcurrent: 64, maxQueued: 100, historyMessages: 20, lifecycle },
    prefix: "a2a-unstored-",
  });
  ({ database, store, runner, handler } = fixture);
});
afterEach(() => {
  fixture.close();
});

/** A lifecycle watcher whose `finished(id)` resolves when the runner reports that task finished. */
function watchEnds(): { lifecycle: Pick<TaskLifecycle, "finished">; finished: (taskId: string) => Promise<Task> } {
  const done = new Map<string, Task>();
  const waiting = new Map<string, (t: Task) => void>();
  return {
    lifecycle: {
      finished(task) {
        done.set(task.id, task);
        waiting.get(task.id)?.(task);
      },
    },
    finished: (id) =>
      done.has(id) ? Promise.resolve(done.get(id)!) : new Promise((resolve) => waiting.set(id, resolve)),
  };
}

/** A trigger that fails writes to `table` whose new row matches `when` (SQL over NEW), as a disk error would. */
function failWrites(table: "tasks" | "task_events", op: "INSERT" | "UPDATE", when: string): void {
  database.sqlite.exec(
    `CREATE TRIGGER fail_${table}_${op} BEFORE ${op} ON ${table} WHEN ${when} BEGIN SELECT RAISE(ABORT, 'injected disk error'); END`,
  );
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
      const stored = (await store.get(task.id, "alpha")) as Task;
      if (texts[i].includes("poison")) {
        expect(task.status.state).toBe("TASK_STATE_FAILED");
        expect(text(task)).toMatch(
          /could not store this task's outcome, so its result is not kept: injected disk error/,
        );
        expect(task.artifacts ?? []).toEqual([]); // what the caller is shown is what is stored
        expect(stored.status).toEqual(task.status);
        expect(stored.artifacts).toBeUndefined();
        const events = await storedEvents(task.id);
        expect(events.at(-1)).toMatchObject({ statusUpdate: { status: { state: "TASK_STATE_FAILED" } } });
        expect(events.some((e) => "statusUpdate" in e && e.statusUpdate.status.state === "TASK_STATE_COMPLETED")).toBe(
          false,
        );
      } else {
        expect(task.status.state).toBe("TASK_STATE_COMPLETED");
        expect(stored.status.state).toBe("TASK_STATE_COMPLETED");
        expect(stored.artifacts?.[0]?.parts[0]).toEqual({ text: `echo: ${texts[i]}` });
      }
    }
    expect(log).toMatch(
      /could not store a task's writes; its callers get an error task_id=\S+ reason="injected disk error"/,
    );
    expect(log).not.toMatch(/noted/); // ids and reasons only, never what the tasks hold
  });

  it("a streaming caller sees the FAILED status last, and no COMPLETED", async () => {
    failWrites("tasks", "UPDATE", "NEW.state = 'TASK_STATE_COMPLETED'");
    const items: StreamItem[] = [];
    for await (const item of await handler.sendStreamingMessage({ message: message("noted stream") }, alpha))
      items.push(item);
    const states = items.flatMap((i) => ("statusUpdate" in i.response ? [i.response.statusUpdate.status.state] : []));
    expect(states.at(-1)).toBe("TASK_STATE_FAILED");
    expect(states).not.toContain("TASK_STATE_COMPLETED");
  });

  it("when even FAILED cannot be stored, the blocking caller gets -32603 naming the task, left as stored and never run while writes fail", async () => {
    failWrites("tasks", "UPDATE", "NEW.state IN ('TASK_STATE_COMPLETED', 'TASK_STATE_FAILED')");
    const err = await a2aError(handler.sendMessage({ message: message("noted twice unlucky") }, alpha));
    expect(err.code).toBe(-32603);
    expect(err.message).toMatch(
      /^the node could not store task \S+ \(injected disk error\); it is taken up again as after a restart once the database takes writes/,
    );
    const [task] = (await store.list("alpha", {})).tasks;
    expect(task.status.state).toBe("TASK_STATE_WORKING"); // as last stored
    expect(runner.unstoredTasks()).toEqual({ count: 1, reason: "injected disk error" });
    expect(log).toMatch(
      new RegExp(
        `could not store a task's outcome; it is taken up again as after a restart once the database takes writes task_id=${task.id}`,
      ),
    );
  });

  it("a task of which nothing can be stored any more is run again as after a restart once the database takes writes, and ends once, events gapless", async () => {
    failWrites("tasks", "UPDATE", "1"); // no task's row can change: not its WORKING, FAILED, nor a restart
    const err = await a2aError(handler.sendMessage({ message: message("noted recovered") }, alpha));
    expect(err.code).toBe(-32603);
    const [stranded] = (await store.list("alpha", {})).tasks;
    expect(stranded.status.state).toBe("TASK_STATE_WORKING"); // inserted WORKING, nothing after
    expect(runner.unstoredTasks().count).toBe(1);
    // Its restart is tried (and refused by the disk) twice more: it is not run again meanwhile.
    const failedWrite = new RegExp(`could not store a task's writes; its callers get an error task_id=${stranded.id}`);
    const before = log.match(new RegExp(failedWrite.source, "g"))!.length;
    await logged(failedWrite, before + 2);
    expect(executor.stops).toEqual([undefined]); // the one execution, whose outcome was not stored
    expect(runner.unstoredTasks().count).toBe(1);

    database.sqlite.exec("DROP TRIGGER fail_tasks_UPDATE"); // the disk takes writes again
    const ended = await finished(stranded.id);
    expect(ended.status.state).toBe("TASK_STATE_COMPLETED");
    const stored = (await store.get(stranded.id, "alpha")) as Task;
    expect(stored.status.state).toBe("TASK_STATE_COMPLETED");
    expect(stored.metadata?.["a2a-node/restarts"]).toBe(1);
    expect(stored.artifacts?.[0]?.parts[0]).toEqual({ text: "echo: noted recovered" });
    const events = await storedEvents(stranded.id);
    const states = events.flatMap((e) => ("statusUpdate" in e ? [e.statusUpdate.status.state] : []));
    expect(states.filter((s) => s === "TASK_STATE_COMPLETED" || s === "TASK_STATE_FAILED")).toEqual([
      "TASK_STATE_COMPLETED",
    ]);
    expect(states.at(-1)).toBe("TASK_STATE_COMPLETED");
    expect(executor.stops).toEqual([undefined, undefined]); // run once more, and only once
    expect(runner.unstoredTasks().count).toBe(0);
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
    expect((poisoned as PromiseRejectedResult).reason.message).toMatch(
      /could not store task \S+, so it is not kept: injected disk error/,
    );
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
    const immediate = await a2aError(
      handler.sendMessage({ message: message("noted a"), configuration: { returnImmediately: true } }, alpha),
    );
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

// A statement canceled in the server fails as it is; one whose connection the server ended is sent again on a
// live one (test/store/postgres-connections.test.ts).
describe("on Postgres, a task whose write fails in flight (its statement canceled in the server)", () => {
  it("keeps its events gapless: what it wrote after the cut write is dropped, and it ends FAILED after the last stored event", async () => {
    const pg = await emptyPostgres(4);
    const holder = await pg.sql.reserve();
    try {
      const pgStore = new PostgresTaskStore(pg, { log: createLogger(() => {}) });
      const working = Promise.withResolvers<void>();
      const locked = Promise.withResolvers<void>();
      const gate = Promise.withResolvers<void>();
      const streamed = Promise.withResolvers<void>();
      const returned = Promise.withResolvers<void>();
      // Once WORKING is stored, streams "x" (its write is the one cut), waits, then "y", "z" and COMPLETED, which
      // queue behind it.
      const cutting: AgentExecutor = {
        kind: "cutting",
        async execute(req) {
          await req.events.note({ step: 1 });
          working.resolve();
          await locked.promise;
          req.events.artifact({ artifactId: "a", parts: [{ text: "x" }] });
          streamed.resolve();
          await gate.promise;
          req.events.artifact({ artifactId: "a", parts: [{ text: "y" }] }, { append: true });
          req.events.artifact({ artifactId: "a", parts: [{ text: "z" }] }, { append: true, lastChunk: true });
          returned.resolve();
          return { state: "TASK_STATE_COMPLETED" };
        },
      };
      const ends = watchEnds();
      const pgRunner = new TaskRunner(pgStore, cutting, {
        maxConcurrent: 4,
        maxQueued: 10,
        historyMessages: 20,
        lifecycle: { ...taskLog(createLogger(() => {})), ...ends.lifecycle },
      });
      const pgHandler = new DefaultRequestHandler(pgStore, pgRunner);
      const sent = taskOf(
        await pgHandler.sendMessage({ message: message("cut"), configuration: { returnImmediately: true } }, alpha),
      );
      await working.promise;
      // The events table locked: the write of "x" waits in the server.
      await holder`BEGIN`;
      await holder`LOCK TABLE task_events IN ACCESS EXCLUSIVE MODE`;
      const [{ pid: holderPid }] = (await holder`SELECT pg_backend_pid() AS pid`) as { pid: number }[];
      locked.resolve();
      await streamed.promise;
      // No event tells when a statement waits in the server: its state is polled there.
      let waiting: number | undefined;
      while (waiting === undefined) {
        const [row] =
          (await pg.sql`SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND pid <> ${holderPid}`) as {
            pid: number;
          }[];
        waiting = row?.pid;
        if (waiting === undefined) await Bun.sleep(10);
      }
      gate.resolve();
      await returned.promise;
      await new Promise((resolve) => setImmediate(resolve)); // the outcome's writes queued behind the waiting one
      await pg.sql`SELECT pg_cancel_backend(${waiting})`;
      await holder`ROLLBACK`;

      const ended = await ends.finished(sent.id);
      expect(ended.status.state).toBe("TASK_STATE_FAILED");
      const events = await pgStore.eventsAfter(sent.id, 0);
      expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
      const states = events.flatMap((e) =>
        "statusUpdate" in e.response ? [e.response.statusUpdate.status.state] : [],
      );
      expect(states).toEqual(["TASK_STATE_WORKING", "TASK_STATE_FAILED"]);
      // "x" was cut; "y" and "z" not stored after it
      expect(events.some((e) => "artifactUpdate" in e.response)).toBe(false);
      const stored = (await pgStore.get(sent.id, "alpha")) as Task;
      expect(stored.status.state).toBe("TASK_STATE_FAILED");
      expect(text(stored)).toMatch(/could not store part of this task, so its result is not kept/);
      await pgStore.flush();
    } finally {
      holder.release();
      await pg.close();
    }
  });
});
