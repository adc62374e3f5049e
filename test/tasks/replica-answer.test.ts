/**
 * Two replicas (a runner and request handler each, as in two processes) on one real Postgres database: an
 * execution waits for input on replica A, and the answer comes to replica B. B passes it on; A checks it as it
 * would its own caller's, takes it into the same execution, and B answers the caller from the store.
 */
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { AgentExecutor, ExecutionOutcome, ExecutionRequest } from "../../src/executors/executor";
import { messageText } from "../../src/executors/executor";
import { createLogger } from "../../src/log";
import { A2AError } from "../../src/protocol/errors";
import { DefaultRequestHandler } from "../../src/rpc/request-handler";
import type { Message, StreamItem, Task } from "../../src/protocol/types";
import type { PostgresDatabase } from "../../src/store/postgres/database";
import { PostgresLeases } from "../../src/store/postgres/postgres-leases";
import { PostgresReplicaMessages } from "../../src/store/postgres/postgres-replica-messages";
import { PostgresTaskStore } from "../../src/store/postgres/postgres-task-store";
import { TaskRunner } from "../../src/tasks/task-runner";
import { emptyPostgres } from "../helpers/postgres-stores";

let database: PostgresDatabase;
let stores: { store: PostgresTaskStore; replicas: PostgresReplicaMessages }[];
const alpha = { caller: { name: "alpha", fingerprint: "AA" } };
const bravo = { caller: { name: "bravo", fingerprint: "BB" } };
const message = (text: string, extra: Partial<Message> = {}): Message => ({
  messageId: crypto.randomUUID(),
  role: "ROLE_USER",
  parts: [{ text }],
  ...extra,
});
const taskOf = (r: unknown) => (r as { task: Task }).task;

/** Asks "a or b?", refusing anything else; completes with the answer. Counts its executions. */
class AskingExecutor implements AgentExecutor {
  readonly kind = "asking";
  executions = 0;
  async execute(req: ExecutionRequest): Promise<ExecutionOutcome> {
    this.executions++;
    const answer = await req.input({
      text: "a or b?",
      check: (m) => (["a", "b"].includes(messageText(m)) ? undefined : `"${messageText(m)}" is neither a nor b`),
    });
    return {
      state: "TASK_STATE_COMPLETED",
      artifacts: [{ artifactId: "answer", parts: [{ text: messageText(answer) }] }],
    };
  }
}

async function replica(name: string, executor: AgentExecutor) {
  const leases = new PostgresLeases(database.sql, name, 60_000);
  const store = new PostgresTaskStore(database, { leases, log: createLogger(() => {}) });
  const replicas = new PostgresReplicaMessages(database.sql, leases);
  await replicas.listen();
  stores.push({ store, replicas });
  const runner = new TaskRunner(store, executor, {
    maxConcurrent: 4,
    maxQueued: 100,
    historyMessages: 20,
    leases,
    replicas,
  });
  return { runner, handler: new DefaultRequestHandler(store, runner) };
}

async function a2aError(p: Promise<unknown>): Promise<A2AError> {
  const err = await p.then(
    () => undefined,
    (e) => e,
  );
  expect(err).toBeInstanceOf(A2AError);
  return err as A2AError;
}

beforeEach(async () => {
  database = await emptyPostgres(8);
  stores = [];
});
afterEach(async () => {
  for (const s of stores) {
    await s.store.flush();
    await s.replicas.unlisten();
  }
  await database.close();
});

describe("an answer sent to another replica than the one where the execution waits", () => {
  it("is passed on, checked and taken there, into the same execution; the caller gets the settled task", async () => {
    const execA = new AskingExecutor();
    const execB = new AskingExecutor();
    const a = await replica("a", execA);
    const b = await replica("b", execB);
    const asked = taskOf(await a.handler.sendMessage({ message: message("choose") }, alpha));
    expect(asked.status.state).toBe("TASK_STATE_INPUT_REQUIRED");

    // Refused there as it would be here: the caller hears the check's reason, and the task still waits.
    const refused = await a2aError(b.handler.sendMessage({ message: message("maybe", { taskId: asked.id }) }, alpha));
    expect(refused.code).toBe(-32602);
    expect(refused.message).toBe('"maybe" is neither a nor b');
    // Another caller's answer: not found, as for any task of someone else.
    expect((await a2aError(b.handler.sendMessage({ message: message("a", { taskId: asked.id }) }, bravo))).code).toBe(
      -32001,
    );

    const done = taskOf(await b.handler.sendMessage({ message: message("b", { taskId: asked.id }) }, alpha));
    expect(done.status.state).toBe("TASK_STATE_COMPLETED");
    expect(done.artifacts?.[0]?.parts[0]?.text).toBe("b");
    expect([execA.executions, execB.executions]).toEqual([1, 0]); // the same execution went on, on A
    const events = await stores[1]!.store.eventsAfter(asked.id, 0);
    expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
  });

  it("passes on an answer of any size the node takes (by reference: NOTIFY carries only its id), and leaves no row behind", async () => {
    // Takes any answer, and completes with it as its artifact.
    const anyAnswer: AgentExecutor = {
      kind: "any",
      async execute(req) {
        const answer = await req.input({ text: "say something long" });
        return { state: "TASK_STATE_COMPLETED", artifacts: [{ artifactId: "answer", parts: answer.parts }] };
      },
    };
    const a = await replica("a", anyAnswer);
    const b = await replica("b", anyAnswer);
    const asked = taskOf(await a.handler.sendMessage({ message: message("go") }, alpha));
    // Far past NOTIFY's 8,000-byte payload: about the node's default largest request body (1 MiB).
    const long = "ü".repeat(400_000) + "x".repeat(200_000);
    const done = taskOf(await b.handler.sendMessage({ message: message(long, { taskId: asked.id }) }, alpha));
    expect(done.status.state).toBe("TASK_STATE_COMPLETED");
    expect(done.artifacts?.[0]?.parts[0]?.text).toBe(long);
    expect((await stores[0]!.store.get(asked.id, "alpha"))?.history?.at(-1)?.parts[0]?.text).toBe(long);
    expect((await database.sql`SELECT count(*)::int AS n FROM task_answers`)[0].n).toBe(0);
  });

  it("streams from the other replica until the task settles again", async () => {
    const a = await replica("a", new AskingExecutor());
    const b = await replica("b", new AskingExecutor());
    const asked = taskOf(await a.handler.sendMessage({ message: message("choose") }, alpha));
    const items: StreamItem[] = [];
    for await (const item of await b.handler.sendStreamingMessage(
      { message: message("a", { taskId: asked.id }) },
      alpha,
    ))
      items.push(item);
    const states = items.map((i) =>
      "task" in i.response
        ? `task:${i.response.task.status.state}`
        : "statusUpdate" in i.response
          ? i.response.statusUpdate.status.state
          : "artifact",
    );
    expect(states[0]).toBe("task:TASK_STATE_WORKING");
    expect(states.at(-1)).toBe("TASK_STATE_COMPLETED");
    expect(states).toContain("artifact");
  });
});
