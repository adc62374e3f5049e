/**
 * A node's task core around a HermesExecutor, in-process: a real SQLite store, the TaskRunner and the request
 * handler, pointed at a Hermes server (the fake twin, or the real one of test/helpers/real-hermes.ts). `restart()`
 * stops this core as the daemon does on SIGTERM and starts a new one on the same database (the next process of the
 * node), which re-attaches to unfinished tasks.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { HermesExecutor } from "../../src/executors/hermes-executor";
import type { HermesTiming } from "../../src/executors/hermes/hermes-task";
import { DefaultRequestHandler } from "../../src/rpc/request-handler";
import type { Message, SendMessageParams, StreamItem, Task } from "../../src/protocol/types";
import { openDatabase, type OpenDatabase } from "../../src/store/database";
import { SqliteTaskStore } from "../../src/store/sqlite-task-store";
import { TaskRunner } from "../../src/tasks/task-runner";

/** Short waits, so retries and polling take milliseconds in tests. */
export const FAST: Partial<HermesTiming> = {
  maxRetryDelayMs: 20,
  pollFirstMs: 5,
  pollMaxMs: 20,
  capacityWaitMs: 60_000,
  stopWaitMs: 10_000,
};

export const who = (name: string) => ({ caller: { name, fingerprint: name.toUpperCase() } });

export function userMessage(text: string, extra: Partial<Message> = {}): Message {
  return { messageId: crypto.randomUUID(), role: "ROLE_USER", parts: [{ text }], ...extra };
}

export interface HermesNode {
  handler: DefaultRequestHandler;
  runner: TaskRunner;
  store: SqliteTaskStore;
  /** A blocking SendMessage; returns the task (as the caller sees it at its next settled state). */
  send(text: string, extra?: Partial<Message>, caller?: string): Promise<Task>;
  /** SendMessage that answers the question task `taskId` waits on. */
  answer(taskId: string, text: string, caller?: string): Promise<Task>;
  /** SendStreamingMessage, read to its end. */
  stream(params: SendMessageParams, caller?: string): Promise<StreamItem[]>;
  get(taskId: string, caller?: string): Promise<Task>;
  /** Resolves with the task once `test` holds for it, following its events (no polling, no timers). */
  reach(taskId: string, test: (task: Task) => boolean, caller?: string): Promise<Task>;
  /** Stops this core as on SIGTERM (grace `graceMs`) and starts the next one on the same database. */
  restart(graceMs?: number): Promise<{ resumed: number; failed: number }>;
  close(): Promise<void>;
}

/** `hermes`: the fake Hermes, or any Hermes server by its URL (the real one, test/helpers/real-hermes.ts). */
export async function startHermesNode(
  hermes: { url: string },
  options: { apiKey?: string; timing?: Partial<HermesTiming>; maxConcurrent?: number } = {},
): Promise<HermesNode> {
  const dir = mkdtempSync(join(tmpdir(), "a2a-hermes-node-"));
  let database: OpenDatabase = openDatabase(join(dir, "db.sqlite"));
  const make = () => {
    const store = new SqliteTaskStore(database);
    const executor = new HermesExecutor({
      baseUrl: hermes.url,
      apiKey: options.apiKey,
      timing: { ...FAST, ...options.timing },
    });
    const runner = new TaskRunner(store, executor, {
      maxConcurrent: options.maxConcurrent ?? 4,
      maxQueued: 100,
      historyMessages: 20,
    });
    return { store, runner, handler: new DefaultRequestHandler(store, runner) };
  };
  let core = make();
  const node: HermesNode = {
    get handler() {
      return core.handler;
    },
    get runner() {
      return core.runner;
    },
    get store() {
      return core.store;
    },
    async send(text, extra = {}, caller = "alpha") {
      const r = await core.handler.sendMessage({ message: userMessage(text, extra) }, who(caller));
      if (!("task" in r)) throw new Error("expected a task, got a message");
      return r.task;
    },
    answer(taskId, text, caller = "alpha") {
      return node.send(text, { taskId }, caller);
    },
    async stream(params, caller = "alpha") {
      const items: StreamItem[] = [];
      for await (const item of await core.handler.sendStreamingMessage(params, who(caller))) items.push(item);
      return items;
    },
    async get(taskId, caller = "alpha") {
      const t = await core.store.get(taskId, caller);
      if (!t) throw new Error(`no task ${taskId}`);
      return t;
    },
    async reach(taskId, test, caller = "alpha") {
      const now = await node.get(taskId, caller);
      if (test(now)) return now;
      const stream = await core.handler.subscribeToTask({ id: taskId }, who(caller), 0);
      for await (const _ of stream) {
        const t = await node.get(taskId, caller);
        if (test(t)) return t;
      }
      const t = await node.get(taskId, caller);
      if (!test(t)) throw new Error(`task ${taskId} ended ${t.status.state} without reaching what the test waits for`);
      return t;
    },
    async restart(graceMs = 0) {
      await core.runner.shutdown(graceMs);
      core.store.flush();
      database.close();
      database = openDatabase(join(dir, "db.sqlite"));
      core = make();
      return core.runner.recover();
    },
    async close() {
      await core.runner.shutdown(0);
      core.store.flush();
      database.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return node;
}

/** The text of a task's answer artifact. */
export function answerText(task: Task): string {
  return (task.artifacts ?? []).flatMap((a) => a.parts.map((p) => p.text ?? "")).join("");
}
