/**
 * What a task's execution is given again when it is resumed after the node stopped mid-way (restart recovery):
 * the A2A extensions its message activated, and, for a retry of a task that was AUTH_REQUIRED, the refused
 * message rather than the follow-up that asked for the retry.
 */
import { describe, expect, it } from "vitest";
import type { AgentExecutor, ExecutionRequest } from "../../src/executors/executor";
import type { Message } from "../../src/protocol/types";
import { MemoryTaskStore } from "../../src/store/memory-task-store";
import { AUTH_RETRY_KEY } from "../../src/tasks/auth-retry";
import { EXTENSIONS_KEY, TaskRunner } from "../../src/tasks/task-runner";

const msg = (text: string, role: Message["role"] = "ROLE_USER"): Message => ({
  messageId: crypto.randomUUID(),
  role,
  parts: [{ text }],
  taskId: "t1",
  contextId: "c1",
});

function setup() {
  const store = new MemoryTaskStore();
  const seen: { req: ExecutionRequest; history: Message[] }[] = [];
  const executor: AgentExecutor = {
    kind: "echo",
    onRestart: "rerun",
    async execute(req) {
      seen.push({ req, history: await req.history() });
      return { state: "TASK_STATE_COMPLETED" };
    },
  };
  const runner = new TaskRunner(store, executor, { maxConcurrent: 2, maxQueued: 10, historyMessages: 10 });
  return { store, runner, seen };
}

describe("restart recovery", () => {
  it("hands a resumed execution the extensions its message activated (kept in the task's node state)", async () => {
    const { store, runner, seen } = setup();
    const first = msg("cite this");
    await (
      await store.create({
        id: "t1",
        contextId: "c1",
        owner: "alpha",
        message: first,
        executor: "echo",
        state: { [EXTENSIONS_KEY]: ["urn:x:1"] },
        timestamp: new Date().toISOString(),
      })
    ).committed;
    await store.record("t1", { status: { state: "TASK_STATE_WORKING" } });
    expect(await runner.recover()).toEqual({ resumed: 1, failed: 0 });
    await runner.shutdown(1000);
    expect(seen.map((s) => [s.req.resumed, s.req.extensions, s.req.message.messageId])).toEqual([
      [false, ["urn:x:1"], first.messageId],
    ]); // "rerun": run again from its message
  });

  it("resumes the retry of an AUTH_REQUIRED task with the refused message, the messages about the authorization out of its history", async () => {
    const { store, runner, seen } = setup();
    const earlier = { ...msg("an earlier turn"), taskId: "t0" };
    await (
      await store.create({
        id: "t0",
        contextId: "c1",
        owner: "alpha",
        message: earlier,
        executor: "echo",
        timestamp: new Date().toISOString(),
      })
    ).committed;
    await store.record("t0", { status: { state: "TASK_STATE_COMPLETED" } });
    const refused = msg("name three primes");
    const status = msg("model endpoint refused this node's API key", "ROLE_AGENT");
    const retry = msg("retry");
    await (
      await store.create({
        id: "t1",
        contextId: "c1",
        owner: "alpha",
        message: refused,
        executor: "echo",
        timestamp: new Date().toISOString(),
      })
    ).committed;
    await store.record("t1", {
      history: [status, retry],
      status: { state: "TASK_STATE_WORKING" },
      state: { [AUTH_RETRY_KEY]: { messageId: refused.messageId } },
    });
    expect(await runner.recover()).toEqual({ resumed: 1, failed: 0 });
    await runner.shutdown(1000);
    expect(seen).toHaveLength(1);
    expect(seen[0].req.message.messageId).toBe(refused.messageId);
    expect(seen[0].history.map((m) => m.parts[0].text)).toEqual(["an earlier turn"]);
    const done = await store.get("t1", "alpha");
    expect(done?.status.state).toBe("TASK_STATE_COMPLETED");
    expect(done?.metadata?.[AUTH_RETRY_KEY]).toBeNull();
  });

  it("reads none of the node's own keys from the metadata a caller sent: restarts, extensions, the auth retry", async () => {
    const { store, runner, seen } = setup();
    const first = msg("hello");
    const other = msg("someone else's message");
    // What a caller could put in SendMessage's metadata: the node's own keys, with values that would steer it.
    const forged = {
      "a2a-node/restarts": 99,
      [EXTENSIONS_KEY]: ["urn:forged"],
      [AUTH_RETRY_KEY]: { messageId: other.messageId },
    };
    await (
      await store.create({
        id: "t1",
        contextId: "c1",
        owner: "alpha",
        message: first,
        executor: "echo",
        metadata: forged,
        timestamp: new Date().toISOString(),
      })
    ).committed;
    await store.record("t1", { status: { state: "TASK_STATE_WORKING" } });
    // 99 restarts would end it FAILED; it is resumed, as a task never resumed before is.
    expect(await runner.recover()).toEqual({ resumed: 1, failed: 0 });
    await runner.shutdown(1000);
    expect(seen.map((s) => [s.req.message.messageId, s.req.extensions, s.req.state])).toEqual([
      [first.messageId, [], { "a2a-node/restarts": 1 }],
    ]);
    // The caller's metadata is handed on as the caller's, and shown as the node counted.
    expect(seen[0].req.metadata).toMatchObject({ [EXTENSIONS_KEY]: ["urn:forged"], "a2a-node/restarts": 1 });
    expect((await store.get("t1", "alpha"))?.metadata?.["a2a-node/restarts"]).toBe(1);
  });
});
