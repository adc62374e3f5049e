/**
 * `send --task-id ID --task ANSWER --wait` ends with the task's real outcome, whatever the executor: against a
 * node running the conformance executor (whose executions end INPUT_REQUIRED and run again on the next message;
 * Hermes's, which waits in input(), is in test/e2e/hermes-approval.test.ts and the real Hermes tests), in-process
 * with real mTLS and SQLite. On the client side a wait never ends on the status an answer left behind, which an
 * older peer still replied with.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { openClientSession } from "../../src/cli/client-session";
import { followTask } from "../../src/cli/follow-task";
import { bufferIo, type Io } from "../../src/cli/io";
import { runCli } from "../../src/cli/registry";
import { DEFAULTS } from "../../src/config";
import { createLogger } from "../../src/log";
import { startNode, type RunningNode } from "../../src/node";
import type { Message, Task } from "../../src/protocol/types";
import { makeFleet, type Fleet } from "../helpers/fleet";

let fleet: Fleet;
let beta: RunningNode;
const quiet = createLogger(() => {}, "warn");

async function cli(...args: string[]) {
  const io: Io & { out(): string; err(): string } = bufferIo({});
  const code = await runCli(["--home", fleet.homes.alpha!, ...args], io);
  return { code, out: io.out(), err: io.err() };
}

/** A task the conformance executor leaves INPUT_REQUIRED (the kit's `tck-input-required` scenario). */
async function askingTask(): Promise<Task> {
  const session = await openClientSession(fleet.homes.alpha!, "beta");
  const message: Message = {
    messageId: `tck-input-required-${crypto.randomUUID()}`,
    role: "ROLE_USER",
    parts: [{ text: "start" }],
  };
  const r = await session.client.sendMessage({ message });
  const task = (r as { task: Task }).task;
  expect(task.status.state).toBe("TASK_STATE_INPUT_REQUIRED");
  return task;
}

beforeAll(async () => {
  fleet = await makeFleet(["alpha", "beta"]);
  beta = await startNode(
    fleet.homes.beta!,
    { ...DEFAULTS, host: "127.0.0.1", port: 0, executor: "conformance" },
    quiet,
  );
  expect((await cli("peers", "add", "beta", beta.url)).code).toBe(0);
});
afterAll(async () => {
  await beta?.stop();
  fleet?.cleanup();
});

describe("answering a task that asked for input, and waiting", () => {
  it("send --task-id ID --task TEXT --wait exits with the task's outcome (0, its answer printed), not the question it answered (6)", async () => {
    const asked = await askingTask();
    const r = await cli("send", "--agent", "beta", "--task-id", asked.id, "--task", "here is more", "--wait");
    expect(r.code, r.err).toBe(0);
    expect(r.out).toBe("here is more\n");
    expect(r.err).toMatch(
      new RegExp(
        `^task ${asked.id} accepted by peer 'beta'\ntask ${asked.id} completed \\(peer 'beta'\\): Hello from TCK`,
      ),
    );
  });

  it("--json too: one line, the completed task", async () => {
    const asked = await askingTask();
    const r = await cli("send", "--agent", "beta", "--task-id", asked.id, "--task", "json please", "--wait", "--json");
    expect(r.code, r.err).toBe(0);
    const task = JSON.parse(r.out) as Task;
    expect(task.id).toBe(asked.id);
    expect(task.status.state).toBe("TASK_STATE_COMPLETED");
  });

  it("a wait given the status an answer left behind (what an older peer replied with) does not end on it: it follows the task to its end", async () => {
    const asked = await askingTask();
    const session = await openClientSession(fleet.homes.alpha!, "beta");
    // Without the stale status, the question the task showed is taken as settled at once: what went wrong before.
    expect((await followTask(session, asked, { deadline: Date.now() + 10_000 })).task.status.state).toBe(
      "TASK_STATE_INPUT_REQUIRED",
    );
    await session.client.sendMessage({
      message: { messageId: crypto.randomUUID(), role: "ROLE_USER", parts: [{ text: "go" }], taskId: asked.id },
      configuration: { returnImmediately: true },
    });
    const end = await followTask(session, asked, { deadline: Date.now() + 10_000, stale: asked.status });
    expect(end.reason).toBe("settled");
    expect(end.task.status.state).toBe("TASK_STATE_COMPLETED");
    expect(end.task.artifacts?.[0]?.parts[0]?.text).toBe("go");
  });

  it("a wait does end on a new question the task asks after the answer", async () => {
    const asked = await askingTask();
    const session = await openClientSession(fleet.homes.alpha!, "beta");
    // The answer's own messageId makes the conformance executor ask again.
    await session.client.sendMessage({
      message: {
        messageId: `tck-input-required-${crypto.randomUUID()}`,
        role: "ROLE_USER",
        parts: [{ text: "again" }],
        taskId: asked.id,
      },
      configuration: { returnImmediately: true },
    });
    const end = await followTask(session, asked, { deadline: Date.now() + 10_000, stale: asked.status });
    expect(end.reason).toBe("settled");
    expect(end.task.status.state).toBe("TASK_STATE_INPUT_REQUIRED");
    expect(end.task.status.message?.messageId).not.toBe(asked.status.message?.messageId);
  });
});
