import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { OpenDatabase } from "../../src/store/database";
import type { SqliteTaskStore } from "../../src/store/sqlite-task-store";
import { EchoExecutor } from "../../src/executors/echo-executor";
import { OpenAiCompatibleExecutor } from "../../src/executors/openai-executor";
import type { AgentExecutor } from "../../src/executors/executor";
import { A2AError } from "../../src/protocol/errors";
import type { Message, Task } from "../../src/protocol/types";
import { ConformanceExecutor } from "../../src/executors/conformance-executor";
import { startFakeModel, type FakeModel } from "../fakes/openai";
import { sqliteTaskStore, taskFixture } from "../helpers/task-fixture";

let database: OpenDatabase;
let store: SqliteTaskStore;
let model: FakeModel | undefined;

const alpha = { caller: { name: "alpha", fingerprint: "AA" } };
const gamma = { caller: { name: "gamma", fingerprint: "CC" } };
const message = (text: string, extra: Partial<Message> = {}): Message => ({
  messageId: crypto.randomUUID(),
  role: "ROLE_USER",
  parts: [{ text }],
  ...extra,
});

function handlerWith(executor: AgentExecutor, opts: { maxConcurrent?: number; maxQueued?: number } = {}) {
  const { runner, handler } = taskFixture({
    store,
    executor,
    runnerOptions: { maxConcurrent: opts.maxConcurrent ?? 4, maxQueued: opts.maxQueued ?? 100, historyMessages: 20 },
  });
  return { runner, handler };
}

async function expectA2AError(p: Promise<unknown>, code: number): Promise<A2AError> {
  const err = await p.then(
    () => undefined,
    (e) => e,
  );
  expect(err).toBeInstanceOf(A2AError);
  expect((err as A2AError).code).toBe(code);
  return err as A2AError;
}

beforeEach(() => {
  ({ database, store } = sqliteTaskStore("a2a-handler-"));
});
afterEach(() => {
  model?.stop();
  model = undefined;
  database.close();
});

describe("DefaultRequestHandler with the echo executor", () => {
  it("blocks until completion by default and returns the stored task", async () => {
    const { handler } = handlerWith(new EchoExecutor());
    const result = await handler.sendMessage({ message: message("hello") }, alpha);
    expect("task" in result).toBe(true);
    const task = (result as { task: Task }).task;
    expect(task.status.state).toBe("TASK_STATE_COMPLETED");
    expect(task.artifacts?.[0].parts[0].text).toBe("hello");
    expect(task.id).toMatch(/^[0-9A-HJKMNP-TV-Z]{26}$/); // a ULID
    expect(task.contextId).toBe(task.id); // a new conversation is named after the task that starts it
    expect(await handler.getTask({ id: task.id }, alpha)).toEqual(await store.get(task.id, "alpha"));
    expect((await handler.getTask({ id: task.id }, alpha)).status.state).toBe("TASK_STATE_COMPLETED");
  });

  it("keeps the caller's contextId and trims history as asked", async () => {
    const { handler } = handlerWith(new EchoExecutor());
    const r = (await handler.sendMessage(
      { message: message("a", { contextId: "ctx-1" }), configuration: { historyLength: 0 } },
      alpha,
    )) as { task: Task };
    expect(r.task.contextId).toBe("ctx-1");
    expect(r.task.history).toBeUndefined();
  });

  it("answers a repeated messageId with the same task instead of running it again", async () => {
    const { handler } = handlerWith(new EchoExecutor());
    const m = message("once");
    const first = (await handler.sendMessage({ message: m }, alpha)) as { task: Task };
    const second = (await handler.sendMessage({ message: { ...m } }, alpha)) as { task: Task };
    expect(second.task.id).toBe(first.task.id);
    expect((await store.list("alpha", {})).totalSize).toBe(1);
  });

  it("scopes every read to the caller: another peer's task looks like no task", async () => {
    const { handler } = handlerWith(new EchoExecutor());
    const { task } = (await handler.sendMessage({ message: message("mine") }, alpha)) as { task: Task };
    const theirs = await expectA2AError(handler.getTask({ id: task.id }, gamma), -32001);
    const missing = await expectA2AError(handler.getTask({ id: "01ZZZZZZZZZZZZZZZZZZZZZZZZ" }, gamma), -32001);
    expect(theirs.reason).toBe(missing.reason);
    await expectA2AError(handler.cancelTask({ id: task.id }, gamma), -32001);
    expect((await handler.listTasks({}, gamma)).tasks).toEqual([]);
    expect((await handler.listTasks({}, alpha)).tasks.map((t) => t.id)).toEqual([task.id]);
  });

  it("refuses to cancel a terminal task with -32002", async () => {
    const { handler } = handlerWith(new EchoExecutor());
    const { task } = (await handler.sendMessage({ message: message("x") }, alpha)) as { task: Task };
    await expectA2AError(handler.cancelTask({ id: task.id }, alpha), -32002);
  });

  it("refuses a message to a terminal task (-32004), to an unknown task (-32001), and a mismatched context (-32602)", async () => {
    const { handler } = handlerWith(new EchoExecutor());
    const { task } = (await handler.sendMessage({ message: message("x") }, alpha)) as { task: Task };
    await expectA2AError(handler.sendMessage({ message: message("more", { taskId: task.id }) }, alpha), -32004);
    await expectA2AError(handler.sendMessage({ message: message("more", { taskId: "nope" }) }, alpha), -32001);
    await expectA2AError(
      handler.sendMessage({ message: message("more", { taskId: task.id, contextId: "other" }) }, alpha),
      -32602,
    );
  });
});

describe("DefaultRequestHandler with a model behind it", () => {
  it("returns at once with returnImmediately, the task committed and WORKING, and completes later", async () => {
    model = startFakeModel({ hold: true });
    const executor = new OpenAiCompatibleExecutor({ baseUrl: model.url, model: "m" });
    const { handler, runner } = handlerWith(executor);
    const r = (await handler.sendMessage(
      { message: message("slow one"), configuration: { returnImmediately: true } },
      alpha,
    )) as { task: Task };
    expect(r.task.status.state).toBe("TASK_STATE_WORKING");
    expect((await store.get(r.task.id, "alpha"))?.status.state).toBe("TASK_STATE_WORKING");
    await model.received(1);
    model.release();
    const done = await runner.settledOf(r.task.id);
    expect(done?.status.state).toBe("TASK_STATE_COMPLETED");
    expect((await store.get(r.task.id, "alpha"))?.artifacts?.[0].parts[0].text).toBe("echo: slow one");
  });

  it("cancels a running task: the model request is aborted and the task ends CANCELED", async () => {
    model = startFakeModel({ hold: true });
    const { handler } = handlerWith(new OpenAiCompatibleExecutor({ baseUrl: model.url, model: "m" }));
    const r = (await handler.sendMessage(
      { message: message("never"), configuration: { returnImmediately: true } },
      alpha,
    )) as { task: Task };
    await model.received(1);
    const aborted = model.aborted();
    const canceled = await handler.cancelTask({ id: r.task.id }, alpha);
    await aborted;
    expect(canceled.status.state).toBe("TASK_STATE_CANCELED");
    expect((await store.get(r.task.id, "alpha"))?.status.state).toBe("TASK_STATE_CANCELED");
  });

  it("runs at most maxConcurrent at once, queues the rest as SUBMITTED, and refuses beyond the queue", async () => {
    model = startFakeModel({ hold: true });
    const { handler, runner } = handlerWith(new OpenAiCompatibleExecutor({ baseUrl: model.url, model: "m" }), {
      maxConcurrent: 1,
      maxQueued: 1,
    });
    const first = (await handler.sendMessage(
      { message: message("1"), configuration: { returnImmediately: true } },
      alpha,
    )) as { task: Task };
    const second = (await handler.sendMessage(
      { message: message("2"), configuration: { returnImmediately: true } },
      alpha,
    )) as { task: Task };
    expect(first.task.status.state).toBe("TASK_STATE_WORKING");
    expect(second.task.status.state).toBe("TASK_STATE_SUBMITTED");
    const refused = await expectA2AError(handler.sendMessage({ message: message("3") }, alpha), -32603);
    expect(refused.message).toMatch(/capacity.*retry later/);
    expect((await store.list("alpha", {})).totalSize).toBe(2); // the refused one was never committed
    await model.received(1);
    model.release();
    expect((await runner.settledOf(first.task.id))?.status.state).toBe("TASK_STATE_COMPLETED");
    expect((await runner.settledOf(second.task.id))?.status.state).toBe("TASK_STATE_COMPLETED");
    expect(model.requests.length).toBe(2);
  });

  it("ends the task FAILED, naming the endpoint, when the model server is down", async () => {
    const dead = startFakeModel();
    const url = dead.url;
    dead.stop();
    const { handler } = handlerWith(new OpenAiCompatibleExecutor({ baseUrl: url, model: "m" }));
    const { task } = (await handler.sendMessage({ message: message("anyone?") }, alpha)) as { task: Task };
    expect(task.status.state).toBe("TASK_STATE_FAILED");
    expect(task.status.message?.parts[0].text).toContain(`${url}/chat/completions`);
    expect((await store.get(task.id, "alpha"))?.status.state).toBe("TASK_STATE_FAILED");
  });

  it("ends the task FAILED with the model's HTTP error", async () => {
    model = startFakeModel({ fail: { status: 500, body: "model exploded" } });
    const { handler } = handlerWith(new OpenAiCompatibleExecutor({ baseUrl: model.url, model: "m" }));
    const { task } = (await handler.sendMessage({ message: message("x") }, alpha)) as { task: Task };
    expect(task.status.state).toBe("TASK_STATE_FAILED");
    expect(task.status.message?.parts[0].text).toMatch(/HTTP 500: model exploded/);
  });

  it("sends the context's earlier turns as chat history, and the usage lands in metadata", async () => {
    model = startFakeModel();
    const { handler } = handlerWith(
      new OpenAiCompatibleExecutor({ baseUrl: model.url, model: "m", systemPrompt: "be brief" }),
    );
    await handler.sendMessage({ message: message("first", { contextId: "conv" }) }, alpha);
    const { task } = (await handler.sendMessage({ message: message("second", { contextId: "conv" }) }, alpha)) as {
      task: Task;
    };
    expect(model.requests[1].body.messages).toEqual([
      { role: "system", content: "be brief" },
      { role: "user", content: "first" },
      { role: "user", content: "second" },
    ]);
    expect(task.metadata?.usage).toMatchObject({ total_tokens: expect.any(Number) });
  });

  it("replays a quick task's events after it ended exactly as a live stream delivered them", async () => {
    const { handler } = handlerWith(new EchoExecutor());
    const live: unknown[] = [];
    for await (const item of await handler.sendStreamingMessage({ message: message("replay me") }, alpha))
      live.push(item);
    const [opening, ...events] = live as { seq?: number; response: { task?: Task } }[];
    const taskId = opening.response.task!.id;
    expect(events.map((e) => e.seq)).toEqual([1, 2, 3]);
    const replayed: unknown[] = [];
    for await (const item of await handler.subscribeToTask({ id: taskId }, alpha, 0)) replayed.push(item);
    expect(JSON.stringify(replayed.slice(1))).toBe(JSON.stringify(events));
    // The same for a blocking call, whose events nobody streamed: WORKING, the artifact whole, COMPLETED.
    const done = ((await handler.sendMessage({ message: message("blocking") }, alpha)) as { task: Task }).task;
    const after: { seq?: number; response: Record<string, any> }[] = [];
    for await (const item of await handler.subscribeToTask({ id: done.id }, alpha, 1)) after.push(item as never);
    expect(after.slice(1).map((e) => e.seq)).toEqual([2, 3]);
    expect(after[1].response.artifactUpdate).toEqual({
      taskId: done.id,
      contextId: done.contextId,
      artifact: done.artifacts![0],
      lastChunk: true,
    });
    expect(after[2].response.statusUpdate).toEqual({ taskId: done.id, contextId: done.contextId, status: done.status });
  });

  it("continues a conversation the node named (no contextId at first, then the returned one)", async () => {
    model = startFakeModel();
    const { handler } = handlerWith(new OpenAiCompatibleExecutor({ baseUrl: model.url, model: "m" }));
    const first = (await handler.sendMessage({ message: message("first") }, alpha)) as { task: Task };
    const { task } = (await handler.sendMessage(
      { message: message("second", { contextId: first.task.contextId }) },
      alpha,
    )) as { task: Task };
    expect(task.contextId).toBe(first.task.id);
    expect(task.id).not.toBe(first.task.id);
    expect(model.requests[1].body.messages.map((m: { content: string }) => m.content)).toEqual(["first", "second"]);
    expect((await handler.listTasks({ contextId: first.task.contextId }, alpha)).tasks.map((t) => t.id).sort()).toEqual(
      [first.task.id, task.id].sort(),
    );
  });

  it("on shutdown, lets running tasks finish within the grace period, and fails queued ones", async () => {
    model = startFakeModel({ hold: true });
    const { handler, runner } = handlerWith(new OpenAiCompatibleExecutor({ baseUrl: model.url, model: "m" }), {
      maxConcurrent: 1,
    });
    const a = (await handler.sendMessage(
      { message: message("a"), configuration: { returnImmediately: true } },
      alpha,
    )) as { task: Task };
    const b = (await handler.sendMessage(
      { message: message("b"), configuration: { returnImmediately: true } },
      alpha,
    )) as { task: Task };
    await model.received(1);
    const stopping = runner.shutdown(60_000);
    await expectA2AError(handler.sendMessage({ message: message("c") }, alpha), -32603);
    model.release();
    await stopping;
    expect((await store.get(a.task.id, "alpha"))?.status.state).toBe("TASK_STATE_COMPLETED");
    const queued = await store.get(b.task.id, "alpha");
    expect(queued?.status.state).toBe("TASK_STATE_FAILED");
    expect(queued?.status.message?.parts[0].text).toMatch(/interrupted/);
  });

  it("records tasks left SUBMITTED/WORKING by a previous run as FAILED (interrupted)", async () => {
    await (
      await store.create({
        id: "old",
        contextId: "c",
        owner: "alpha",
        message: message("lost"),
        executor: "openai",
        timestamp: new Date().toISOString(),
      })
    ).committed;
    await store.record("old", { status: { state: "TASK_STATE_WORKING" } });
    const { runner } = handlerWith(new EchoExecutor());
    expect(await runner.recover()).toEqual({ resumed: 0, failed: 1 }); // an openai task, and this runner runs echo
    const t = await store.get("old", "alpha");
    expect(t?.status.state).toBe("TASK_STATE_FAILED");
    expect(t?.status.message?.parts[0].text).toMatch(/interrupted/);
    expect(await store.unfinished()).toEqual([]);
  });
});

describe("subscribing to a task that waits for input", () => {
  it("keeps the subscriber until the task runs again and ends, and delivers every event in order", async () => {
    const { handler } = handlerWith(new ConformanceExecutor());
    const first = (await handler.sendMessage(
      {
        message: {
          messageId: `tck-input-required-${crypto.randomUUID()}`,
          role: "ROLE_USER",
          parts: [{ text: "ask me" }],
        },
      },
      alpha,
    )) as { task: Task };
    expect(first.task.status.state).toBe("TASK_STATE_INPUT_REQUIRED");
    const stream = await handler.subscribeToTask({ id: first.task.id }, alpha);
    const seen: string[] = [];
    const done = (async () => {
      for await (const item of stream) {
        const r = item.response as Record<string, any>;
        seen.push(
          r.task
            ? `task:${r.task.status.state}`
            : r.statusUpdate
              ? `status:${r.statusUpdate.status.state}`
              : "artifact",
        );
      }
    })();
    await handler.sendMessage(
      {
        message: {
          messageId: `tck-complete-task-${crypto.randomUUID()}`,
          taskId: first.task.id,
          role: "ROLE_USER",
          parts: [{ text: "go on" }],
        },
      },
      alpha,
    );
    await done;
    expect(seen[0]).toBe("task:TASK_STATE_INPUT_REQUIRED");
    expect(seen.at(-1)).toBe("status:TASK_STATE_COMPLETED");
    expect(seen).toContain("status:TASK_STATE_WORKING");
  });
});
