/**
 * One caller cannot lock the others out of a node: FairQueue takes turns across callers, and the runner caps
 * each caller's share of the execution slots and of the queue (TaskRunnerOptions.callerShare).
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { AgentExecutor, ExecutionOutcome, ExecutionRequest } from "../../src/executors/executor";
import { messageText } from "../../src/executors/executor";
import { A2AError } from "../../src/protocol/errors";
import type { Message, Task } from "../../src/protocol/types";
// Fairness is the runner's alone: the in-memory store (held to the same contract as SQLite) keeps this fast.
import { MemoryTaskStore } from "../../src/store/memory-task-store";
import { FairQueue } from "../../src/tasks/fair-queue";
import { taskFixture } from "../helpers/task-fixture";
import { untilSettled } from "../helpers/until";

describe("FairQueue", () => {
  const q = () => new FairQueue<{ who: string; n: number }>((x) => x.who);

  it("takes turns across parties, keeping each party's order", () => {
    const f = q();
    for (let n = 1; n <= 3; n++) f.push({ who: "gamma", n });
    f.push({ who: "alpha", n: 1 });
    f.push({ who: "beta", n: 1 });
    f.push({ who: "alpha", n: 2 });
    expect(f.size).toBe(6);
    expect(f.sizeOf("gamma")).toBe(3);
    const order: string[] = [];
    for (let x = f.shift(); x; x = f.shift()) order.push(`${x.who}${x.n}`);
    expect(order).toEqual(["gamma1", "alpha1", "beta1", "gamma2", "alpha2", "gamma3"]);
    expect(f.size).toBe(0);
  });

  it("skips a party that is not eligible, without losing its place in its own order", () => {
    const f = q();
    f.push({ who: "gamma", n: 1 });
    f.push({ who: "gamma", n: 2 });
    f.push({ who: "alpha", n: 1 });
    expect(f.shift((p) => p !== "gamma")).toEqual({ who: "alpha", n: 1 });
    expect(f.shift((p) => p !== "gamma")).toBeUndefined();
    expect(f.shift()).toEqual({ who: "gamma", n: 1 });
  });

  it("removes an item wherever it waits, and drains everything", () => {
    const f = q();
    const a = { who: "alpha", n: 1 };
    const g = { who: "gamma", n: 1 };
    f.push(a);
    f.push(g);
    expect(f.remove(a)).toBe(true);
    expect(f.remove(a)).toBe(false);
    expect(f.sizeOf("alpha")).toBe(0);
    f.push({ who: "gamma", n: 2 });
    expect(f.drain().map((x) => x.n)).toEqual([1, 2]);
    expect(f.size).toBe(0);
    expect(f.shift()).toBeUndefined();
  });
});

let store: MemoryTaskStore;

beforeEach(() => {
  store = new MemoryTaskStore();
});
afterEach(() => {
  store.flush();
});

/** Tasks whose text is "stuck" wait until released; others complete at once. Records the order of starts. */
class GatedExecutor implements AgentExecutor {
  readonly kind = "gated";
  readonly starts: string[] = [];
  private readonly gates: (() => void)[] = [];

  async execute(req: ExecutionRequest): Promise<ExecutionOutcome> {
    const text = messageText(req.message);
    this.starts.push(`${req.caller}:${text}`);
    if (text.startsWith("stuck")) await new Promise<void>((resolve) => this.gates.push(resolve));
    return { state: "TASK_STATE_COMPLETED", message: text };
  }

  releaseOne(): void {
    this.gates.shift()?.();
  }

  releaseAll(): void {
    for (const g of this.gates.splice(0)) g();
  }
}

const ctx = (name: string) => ({ caller: { name, fingerprint: name.toUpperCase() } });
const msg = (text: string): Message => ({ messageId: crypto.randomUUID(), role: "ROLE_USER", parts: [{ text }] });
const later = { configuration: { returnImmediately: true } };

function setup(opts: { maxConcurrent: number; maxQueued: number; callerShare?: number }) {
  const exec = new GatedExecutor();
  const { runner, handler } = taskFixture({ store, executor: exec, runnerOptions: { ...opts, historyMessages: 5 } });
  return { exec, runner, handler };
}

describe("a caller's share of the node", () => {
  it("one caller's stuck tasks leave a slot for another caller, whose task completes at once", async () => {
    const { exec, handler } = setup({ maxConcurrent: 2, maxQueued: 10, callerShare: 0.5 });
    const stuck: Task[] = [];
    for (let i = 1; i <= 3; i++)
      stuck.push(
        ((await handler.sendMessage({ message: msg(`stuck-${i}`), ...later }, ctx("gamma"))) as { task: Task }).task,
      );
    expect(exec.starts).toEqual(["gamma:stuck-1"]); // gamma's share is one of the two slots
    expect((await store.get(stuck[1]!.id, "gamma"))?.status.state).toBe("TASK_STATE_SUBMITTED");

    const quick = (await handler.sendMessage({ message: msg("quick") }, ctx("alpha"))) as { task: Task };
    expect(quick.task.status.state).toBe("TASK_STATE_COMPLETED");
    expect(exec.starts).toEqual(["gamma:stuck-1", "alpha:quick"]);

    exec.releaseAll();
    const done = await Promise.all(stuck.map((t) => handler.getTask({ id: t.id }, ctx("gamma"))));
    expect(done.every((t) => t.status.state !== "TASK_STATE_FAILED")).toBe(true);
  });

  it("refuses a caller past its share of the queue, naming it, while other callers are still taken", async () => {
    const { exec, handler } = setup({ maxConcurrent: 2, maxQueued: 4, callerShare: 0.5 });
    for (let i = 1; i <= 3; i++) await handler.sendMessage({ message: msg(`stuck-${i}`), ...later }, ctx("gamma"));
    const refused = await handler.sendMessage({ message: msg("stuck-4"), ...later }, ctx("gamma")).then(
      () => undefined,
      (e) => e,
    );
    expect(refused).toBeInstanceOf(A2AError);
    expect((refused as A2AError).reason).toBe("RESOURCE_EXHAUSTED");
    expect((refused as A2AError).message).toBe(
      "gamma already has 1 tasks running and 2 waiting on this node, its share of it; retry when some have finished",
    );
    const alpha = (await handler.sendMessage({ message: msg("quick") }, ctx("alpha"))) as { task: Task };
    expect(alpha.task.status.state).toBe("TASK_STATE_COMPLETED");
    exec.releaseAll();
  });

  it("serves the queue in turns across callers: a freed slot goes to the caller whose turn it is", async () => {
    const { exec, handler } = setup({ maxConcurrent: 1, maxQueued: 10 });
    for (let i = 1; i <= 3; i++) await handler.sendMessage({ message: msg(`stuck-${i}`), ...later }, ctx("gamma"));
    await handler.sendMessage({ message: msg("stuck-a"), ...later }, ctx("alpha"));
    expect(exec.starts).toEqual(["gamma:stuck-1"]);
    for (let i = 0; i < 4; i++) {
      const n = exec.starts.length;
      exec.releaseOne();
      await untilSettled(() => exec.starts.length > n || i === 3);
    }
    expect(exec.starts).toEqual(["gamma:stuck-1", "gamma:stuck-2", "alpha:stuck-a", "gamma:stuck-3"]);
    exec.releaseAll();
  });

  it("without a share set, one caller may use every slot (the default)", async () => {
    const { exec, handler } = setup({ maxConcurrent: 2, maxQueued: 10 });
    await handler.sendMessage({ message: msg("stuck-1"), ...later }, ctx("gamma"));
    await handler.sendMessage({ message: msg("stuck-2"), ...later }, ctx("gamma"));
    expect(exec.starts).toEqual(["gamma:stuck-1", "gamma:stuck-2"]);
    exec.releaseAll();
  });
});

/** Awaits a condition the runner makes true within a few turns of the event loop (no fixed sleep). */
