/**
 * The executor model where a running execution asks a question and waits for the task's next message
 * (ExecutionRequest.input), through the request handler on a real SQLite store: blocking calls return at
 * INPUT_REQUIRED while the execution goes on, answers are checked before they are taken, questions can be
 * withdrawn, cancel and shutdown reach a waiting execution, and a waiting task holds no execution slot.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { AgentExecutor, ExecutionOutcome, ExecutionRequest } from "../../src/executors/executor";
import { ExecutionStopped, messageText, stopCause } from "../../src/executors/executor";
import { A2AError } from "../../src/protocol/errors";
import type { Message, StreamItem, Task } from "../../src/protocol/types";
import type { OpenDatabase } from "../../src/store/database";
import type { SqliteTaskStore } from "../../src/store/sqlite-task-store";
import { untilSettled } from "../helpers/until";
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

beforeEach(() => {
  ({ database, store } = sqliteTaskStore("a2a-input-"));
});
afterEach(() => {
  database.close();
});

/** Resolves when `n` executions have begun; each begun execution is recorded. */
function counter() {
  const waiters: { n: number; resolve(): void }[] = [];
  let count = 0;
  return {
    get count() {
      return count;
    },
    bump() {
      count++;
      for (let i = waiters.length - 1; i >= 0; i--) if (count >= waiters[i]!.n) waiters.splice(i, 1)[0]!.resolve();
    },
    reached: (n: number) =>
      count >= n ? Promise.resolve() : new Promise<void>((resolve) => waiters.push({ n, resolve })),
  };
}

/**
 * Asks "a or b?" (twice when the task says "twice"), refusing other answers; completes with the answers as its
 * artifact. Records how each question's wait ended.
 */
class AskingExecutor implements AgentExecutor {
  readonly kind = "asking";
  readonly started = counter();
  readonly inputErrors: unknown[] = [];
  /** Withdraws the open question when aborted (a remote side that stopped waiting). */
  withdraw?: AbortController;

  async execute(req: ExecutionRequest): Promise<ExecutionOutcome> {
    this.started.bump();
    const answers: string[] = [];
    const rounds = messageText(req.message) === "twice" ? 2 : 1;
    for (let i = 0; i < rounds; i++) {
      try {
        const answer = await req.input({
          text: `question ${i + 1}: a or b?`,
          metadata: { choices: ["a", "b"], round: i + 1 },
          check: (m) => (["a", "b"].includes(messageText(m)) ? undefined : `"${messageText(m)}" is neither a nor b`),
          signal: this.withdraw?.signal,
        });
        answers.push(messageText(answer));
      } catch (err) {
        this.inputErrors.push(err);
        if (req.signal.aborted) return { state: "TASK_STATE_CANCELED", message: "stopped while asking" };
        answers.push("(withdrawn)");
      }
    }
    return {
      state: "TASK_STATE_COMPLETED",
      artifacts: [{ artifactId: "answers", parts: [{ text: answers.join(",") }] }],
    };
  }
}

function handlerWith(executor: AgentExecutor, opts: { maxConcurrent?: number } = {}) {
  const { runner, handler } = taskFixture({
    store,
    executor,
    runnerOptions: { maxConcurrent: opts.maxConcurrent ?? 4, maxQueued: 100, historyMessages: 20 },
  });
  return { runner, handler };
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

describe("an execution that asks for input and waits for the answer", () => {
  it("returns a blocking call at INPUT_REQUIRED with the question, then takes the answer into the same execution", async () => {
    const exec = new AskingExecutor();
    const { handler } = handlerWith(exec);
    const asked = taskOf(await handler.sendMessage({ message: message("once") }, alpha));
    expect(asked.status.state).toBe("TASK_STATE_INPUT_REQUIRED");
    expect(asked.status.message?.parts[0]?.text).toBe("question 1: a or b?");
    expect(asked.status.message?.metadata).toEqual({ choices: ["a", "b"], round: 1 });
    expect((await store.get(asked.id, "alpha"))?.status.state).toBe("TASK_STATE_INPUT_REQUIRED");

    const done = taskOf(await handler.sendMessage({ message: message("b", { taskId: asked.id }) }, alpha));
    expect(done.status.state).toBe("TASK_STATE_COMPLETED");
    expect(done.artifacts?.[0]?.parts[0]?.text).toBe("b");
    expect(exec.started.count).toBe(1); // the same execution went on; nothing ran twice
    const stored = (await store.get(asked.id, "alpha")) as Task;
    expect(stored.history?.map((m) => `${m.role}:${m.parts[0]?.text}`)).toEqual([
      "ROLE_USER:once",
      "ROLE_AGENT:question 1: a or b?",
      "ROLE_USER:b",
    ]);
  });

  it("refuses an answer the question's check turns down with -32602, keeping the task INPUT_REQUIRED and its history unchanged", async () => {
    const exec = new AskingExecutor();
    const { handler } = handlerWith(exec);
    const asked = taskOf(await handler.sendMessage({ message: message("once") }, alpha));
    const err = await a2aError(handler.sendMessage({ message: message("maybe", { taskId: asked.id }) }, alpha));
    expect(err.code).toBe(-32602);
    expect(err.message).toBe('"maybe" is neither a nor b');
    const stored = (await store.get(asked.id, "alpha")) as Task;
    expect(stored.status.state).toBe("TASK_STATE_INPUT_REQUIRED");
    expect(stored.history).toHaveLength(2);
    const done = taskOf(await handler.sendMessage({ message: message("a", { taskId: asked.id }) }, alpha));
    expect(done.artifacts?.[0]?.parts[0]?.text).toBe("a");
  });

  it("a retry of the message (same messageId) of a task waiting for input returns that task at once, as the first call did", async () => {
    // Hermes's A2A client sends its message again with SendMessage when a stream ends without a terminal
    // state, INPUT_REQUIRED included: the retry must not wait for an answer that only its caller could give.
    const exec = new AskingExecutor();
    const { handler } = handlerWith(exec);
    const first = message("once");
    const asked = taskOf(await handler.sendMessage({ message: first }, alpha));
    expect(asked.status.state).toBe("TASK_STATE_INPUT_REQUIRED");
    const again = taskOf(await handler.sendMessage({ message: { ...first } }, alpha));
    expect(again.id).toBe(asked.id);
    expect(again.status.state).toBe("TASK_STATE_INPUT_REQUIRED");
    expect(again.status.message?.parts[0]?.text).toBe("question 1: a or b?");
    expect(exec.started.count).toBe(1);
    // The task still takes its answer, in the same execution.
    const done = taskOf(await handler.sendMessage({ message: message("a", { taskId: asked.id }) }, alpha));
    expect([done.id, done.status.state, done.artifacts?.[0]?.parts[0]?.text]).toEqual([
      asked.id,
      "TASK_STATE_COMPLETED",
      "a",
    ]);
  });

  it("a retry of the message of a task still working waits for it to settle, as the first call would", async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const started = counter();
    const exec: AgentExecutor = {
      kind: "gated",
      async execute(req) {
        started.bump();
        await gate;
        return {
          state: "TASK_STATE_COMPLETED",
          artifacts: [{ artifactId: "a", parts: [{ text: messageText(req.message) }] }],
        };
      },
    };
    const { handler } = handlerWith(exec);
    const first = message("slow");
    const receipt = taskOf(
      await handler.sendMessage({ message: first, configuration: { returnImmediately: true } }, alpha),
    );
    await started.reached(1);
    const retry = handler.sendMessage({ message: { ...first } }, alpha);
    release();
    const done = taskOf(await retry);
    expect([done.id, done.status.state, done.artifacts?.[0]?.parts[0]?.text]).toEqual([
      receipt.id,
      "TASK_STATE_COMPLETED",
      "slow",
    ]);
    expect(started.count).toBe(1);
  });

  it("asks twice in one execution, each question settling a blocking call", async () => {
    const exec = new AskingExecutor();
    const { handler } = handlerWith(exec);
    const first = taskOf(await handler.sendMessage({ message: message("twice") }, alpha));
    const second = taskOf(await handler.sendMessage({ message: message("a", { taskId: first.id }) }, alpha));
    expect(second.status.state).toBe("TASK_STATE_INPUT_REQUIRED");
    expect(second.status.message?.parts[0]?.text).toBe("question 2: a or b?");
    const done = taskOf(await handler.sendMessage({ message: message("b", { taskId: first.id }) }, alpha));
    expect(done.artifacts?.[0]?.parts[0]?.text).toBe("a,b");
    expect(exec.started.count).toBe(1);
  });

  it("a canceled task stops the waiting execution: input() rejects with the cancel, and the task ends CANCELED", async () => {
    const exec = new AskingExecutor();
    const { handler } = handlerWith(exec);
    const asked = taskOf(await handler.sendMessage({ message: message("once") }, alpha));
    const canceled = await handler.cancelTask({ id: asked.id }, alpha);
    expect(canceled.status.state).toBe("TASK_STATE_CANCELED");
    expect(canceled.status.message?.parts[0]?.text).toBe("canceled by alpha");
    expect(exec.inputErrors).toHaveLength(1);
    expect(exec.inputErrors[0]).toBeInstanceOf(ExecutionStopped);
    expect((exec.inputErrors[0] as ExecutionStopped).stopCause).toBe("canceled");
  });

  it("a withdrawn question puts the task back to WORKING, and a late answer hears why", async () => {
    const exec = new AskingExecutor();
    let release!: () => void;
    const hold = new Promise<void>((r) => (release = r));
    let goOn!: () => void;
    const gate = new Promise<void>((r) => (goOn = r));
    // An executor that asks, withdraws its question when the test says so, then completes when it says so.
    const withdrawing: AgentExecutor = {
      kind: "withdrawing",
      async execute(req) {
        const withdraw = new AbortController();
        const answer = req.input({ text: "approve?", signal: withdraw.signal });
        await gate;
        withdraw.abort(new Error("the other side stopped waiting"));
        await answer.catch((e) => exec.inputErrors.push(e));
        await hold;
        return { state: "TASK_STATE_COMPLETED" };
      },
    };
    const { handler } = handlerWith(withdrawing);
    const r = taskOf(await handler.sendMessage({ message: message("x") }, alpha));
    expect(r.status.state).toBe("TASK_STATE_INPUT_REQUIRED");
    const stream = await handler.subscribeToTask({ id: r.id }, alpha);
    const states: string[] = [];
    const texts: string[] = [];
    const reading = (async () => {
      for await (const item of stream as AsyncIterable<StreamItem>) {
        const r = item.response as any;
        if (r.task) states.push(`task:${r.task.status.state}`);
        const u = r.statusUpdate;
        if (u) {
          states.push(u.status.state);
          if (u.status.message) texts.push(u.status.message.parts[0].text);
        }
      }
    })();
    goOn();
    await untilSettled(() => exec.inputErrors.length === 1);
    await untilSettled(async () => {
      const t = await store.get(r.id, "alpha");
      return t?.status.state === "TASK_STATE_WORKING" && (t.history?.length ?? 0) >= 2;
    });
    expect((exec.inputErrors[0] as Error).message).toBe("the other side stopped waiting");
    const late = await a2aError(handler.sendMessage({ message: message("yes", { taskId: r.id }) }, alpha));
    expect(late.code).toBe(-32004);
    expect(late.message).toContain("no longer waits for input (the other side stopped waiting)");
    release();
    await reading;
    expect(states).toEqual(["task:TASK_STATE_INPUT_REQUIRED", "TASK_STATE_WORKING", "TASK_STATE_COMPLETED"]);
    expect(texts).toEqual(["no longer waiting for an answer: the other side stopped waiting"]);
  });

  it("a task waiting for input holds no execution slot: with one slot, another task runs meanwhile", async () => {
    const exec = new AskingExecutor();
    const { handler } = handlerWith(exec, { maxConcurrent: 1 });
    const asked = taskOf(await handler.sendMessage({ message: message("once") }, alpha));
    const other = taskOf(await handler.sendMessage({ message: message("once") }, alpha));
    expect(other.status.state).toBe("TASK_STATE_INPUT_REQUIRED"); // it ran: the waiting task left the slot free
    const [a, b] = await Promise.all([
      handler.sendMessage({ message: message("a", { taskId: asked.id }) }, alpha),
      handler.sendMessage({ message: message("b", { taskId: other.id }) }, alpha),
    ]);
    expect(taskOf(a).artifacts?.[0]?.parts[0]?.text).toBe("a");
    expect(taskOf(b).artifacts?.[0]?.parts[0]?.text).toBe("b");
  });

  it("a stream that answers follows the task from the answer to its next settled state", async () => {
    const exec = new AskingExecutor();
    const { handler } = handlerWith(exec);
    const asked = taskOf(await handler.sendMessage({ message: message("twice") }, alpha));
    const stream = await handler.sendStreamingMessage({ message: message("a", { taskId: asked.id }) }, alpha);
    const seen: string[] = [];
    for await (const item of stream) {
      const r = item.response as any;
      seen.push(
        r.task ? `task:${r.task.status.state}` : r.statusUpdate ? `status:${r.statusUpdate.status.state}` : "artifact",
      );
    }
    // The stream opens with the task the answer left (going on), not with the question it answered.
    expect(seen).toEqual(["task:TASK_STATE_WORKING", "status:TASK_STATE_WORKING", "status:TASK_STATE_INPUT_REQUIRED"]);
  });

  it("a subscriber of a waiting task stays through the answer to the end", async () => {
    const exec = new AskingExecutor();
    const { handler } = handlerWith(exec);
    const asked = taskOf(await handler.sendMessage({ message: message("twice") }, alpha));
    const stream = await handler.subscribeToTask({ id: asked.id }, alpha);
    const seen: string[] = [];
    const reading = (async () => {
      for await (const item of stream) {
        const r = item.response as any;
        seen.push(
          r.task
            ? `task:${r.task.status.state}`
            : r.statusUpdate
              ? `status:${r.statusUpdate.status.state}`
              : "artifact",
        );
      }
    })();
    await handler.sendMessage({ message: message("a", { taskId: asked.id }) }, alpha);
    await handler.sendMessage({ message: message("b", { taskId: asked.id }) }, alpha);
    await reading;
    expect(seen).toEqual([
      "task:TASK_STATE_INPUT_REQUIRED",
      "status:TASK_STATE_WORKING",
      "status:TASK_STATE_INPUT_REQUIRED",
      "status:TASK_STATE_WORKING",
      "artifact",
      "status:TASK_STATE_COMPLETED",
    ]);
  });

  it("at shutdown a waiting execution is stopped as 'shutdown' and its task stays INPUT_REQUIRED for the next start", async () => {
    const exec = new AskingExecutor();
    const { handler, runner } = handlerWith(exec);
    const asked = taskOf(await handler.sendMessage({ message: message("once") }, alpha));
    await runner.shutdown(50);
    expect(exec.inputErrors).toHaveLength(1);
    expect((exec.inputErrors[0] as ExecutionStopped).stopCause).toBe("shutdown");
    const stored = (await store.get(asked.id, "alpha")) as Task;
    expect(stored.status.state).toBe("TASK_STATE_INPUT_REQUIRED");
    expect(stored.status.message?.parts[0]?.text).toBe("question 1: a or b?");

    // The next start of the node: the answer starts a new execution of the task.
    const restarted = handlerWith(exec);
    const done = taskOf(await restarted.handler.sendMessage({ message: message("a", { taskId: asked.id }) }, alpha));
    // a fresh execution asks again: this one knows nothing of the old
    expect(done.status.state).toBe("TASK_STATE_INPUT_REQUIRED");
    expect(exec.started.count).toBe(2);
  });

  it("stopCause() tells a cancel from a shutdown", () => {
    const a = new AbortController();
    expect(stopCause(a.signal)).toBeUndefined();
    a.abort(new ExecutionStopped("deadline", "deadline"));
    expect(stopCause(a.signal)).toBe("deadline");
    const b = new AbortController();
    b.abort(new Error("other"));
    expect(stopCause(b.signal)).toBeUndefined();
  });
});

/** Awaits a condition that becomes true after commits settle (checked after each macrotask, no fixed sleep). */

/**
 * An executor whose execution ends INPUT_REQUIRED (the conformance kit's kind, and any executor without input()):
 * "ask" ends asking, "hold" works until released, anything else completes echoing its text.
 */
class SteppedExecutor implements AgentExecutor {
  readonly kind = "stepped";
  private readonly held: (() => void)[] = [];
  readonly holding = counter();

  async execute(req: ExecutionRequest): Promise<ExecutionOutcome> {
    const text = messageText(req.message);
    if (text === "ask") return { state: "TASK_STATE_INPUT_REQUIRED", message: "say more" };
    if (text === "hold") {
      await new Promise<void>((resolve) => {
        this.held.push(resolve);
        this.holding.bump();
      });
    }
    return { state: "TASK_STATE_COMPLETED", artifacts: [{ artifactId: "echo", parts: [{ text }] }] };
  }

  release(): void {
    for (const r of this.held.splice(0)) r();
  }
}

describe("the reply to a message that answers a task is never the question it answered", () => {
  it("an execution waiting in input(): a non-blocking answer is told WORKING (the answer in the history), a blocking one waits for the next settled state", async () => {
    const exec = new AskingExecutor();
    const { handler, runner } = handlerWith(exec);
    const asked = taskOf(await handler.sendMessage({ message: message("once") }, alpha));
    const reply = taskOf(
      await handler.sendMessage(
        { message: message("a", { taskId: asked.id }), configuration: { returnImmediately: true } },
        alpha,
      ),
    );
    expect(reply.status.state).toBe("TASK_STATE_WORKING");
    expect(reply.status.message).toBeUndefined();
    expect(reply.history?.map((m) => m.parts[0]?.text)).toEqual(["once", "question 1: a or b?", "a"]);
    await runner.settledOf(asked.id); // (undefined once it ended)
    expect((await store.get(asked.id, "alpha"))?.status.state).toBe("TASK_STATE_COMPLETED");
    // Blocking: the answer's call returns at the state after it.
    const twice = taskOf(await handler.sendMessage({ message: message("twice") }, alpha));
    const second = taskOf(await handler.sendMessage({ message: message("b", { taskId: twice.id }) }, alpha));
    expect(second.status.state).toBe("TASK_STATE_INPUT_REQUIRED");
    expect(second.status.message?.parts[0]?.text).toBe("question 2: a or b?");
  });

  it("an execution that ended INPUT_REQUIRED: the message runs it again, and the reply is WORKING, not the old INPUT_REQUIRED", async () => {
    const exec = new SteppedExecutor();
    const { handler } = handlerWith(exec);
    const asked = taskOf(await handler.sendMessage({ message: message("ask") }, alpha));
    expect(asked.status.state).toBe("TASK_STATE_INPUT_REQUIRED");
    const reply = taskOf(
      await handler.sendMessage(
        { message: message("go on", { taskId: asked.id }), configuration: { returnImmediately: true } },
        alpha,
      ),
    );
    expect(reply.status.state).toBe("TASK_STATE_WORKING");
    expect(reply.status.message).toBeUndefined();
    expect(reply.history?.at(-1)?.parts[0]?.text).toBe("go on");
    const blocking = taskOf(await handler.sendMessage({ message: message("ask") }, alpha));
    const done = taskOf(await handler.sendMessage({ message: message("finished", { taskId: blocking.id }) }, alpha));
    expect(done.status.state).toBe("TASK_STATE_COMPLETED");
    expect(done.artifacts?.[0]?.parts[0]?.text).toBe("finished");
  });

  it("with every execution slot busy, the answered task reads WORKING at once (reply and store), then runs when a slot frees", async () => {
    const exec = new SteppedExecutor();
    const { handler, runner } = handlerWith(exec, { maxConcurrent: 1 });
    const asked = taskOf(await handler.sendMessage({ message: message("ask") }, alpha));
    const busy = taskOf(
      await handler.sendMessage({ message: message("hold"), configuration: { returnImmediately: true } }, alpha),
    );
    await exec.holding.reached(1);
    const reply = taskOf(
      await handler.sendMessage(
        { message: message("queued answer", { taskId: asked.id }), configuration: { returnImmediately: true } },
        alpha,
      ),
    );
    expect(reply.status.state).toBe("TASK_STATE_WORKING");
    expect((await store.get(asked.id, "alpha"))?.status.state).toBe("TASK_STATE_WORKING");
    const settled = runner.settledOf(asked.id)!;
    exec.release();
    expect((await settled).status.state).toBe("TASK_STATE_COMPLETED");
    expect((await store.get(busy.id, "alpha"))?.status.state).toBe("TASK_STATE_COMPLETED");
  });
});
