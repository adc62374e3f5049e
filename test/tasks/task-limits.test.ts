/**
 * The node's limits on what a task may hold, crossed by one byte or one item, through the request handler and
 * the runner on real stores (a SQLite file, a Postgres server): max_artifact_bytes (streamed chunks and returned
 * artifacts), max_task_messages (callers' messages and the agent's questions), max_message_parts (callers'
 * messages and the agent's reply). A caller over a limit gets -32602 naming it; an executor over one ends its
 * task FAILED saying which, with what was stored before it kept whole and nothing past it.
 */
import { rmSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { AgentExecutor, ExecutionOutcome, ExecutionRequest } from "../../src/executors/executor";
import { messageText } from "../../src/executors/executor";
import { createLogger } from "../../src/log";
import { A2AError } from "../../src/protocol/errors";
import type { DefaultRequestHandler } from "../../src/rpc/request-handler";
import type { Artifact, Message, Part, Task } from "../../src/protocol/types";
import { openDatabase } from "../../src/store/database";
import { PostgresTaskStore } from "../../src/store/postgres/postgres-task-store";
import { SqliteTaskStore } from "../../src/store/sqlite-task-store";
import { partBytes } from "../../src/tasks/artifacts";
import type { TaskRunnerOptions } from "../../src/tasks/task-runner";
import type { TaskStore } from "../../src/tasks/task-store";
import { emptyPostgres } from "../helpers/postgres-stores";
import { taskFixture } from "../helpers/task-fixture";
import { tempDir } from "../helpers/temp-dir";

const alpha = { caller: { name: "alpha", fingerprint: "AA" } };
const message = (parts: Part[] | string, extra: Partial<Message> = {}): Message => ({
  messageId: crypto.randomUUID(),
  role: "ROLE_USER",
  parts: typeof parts === "string" ? [{ text: parts }] : parts,
  ...extra,
});
const taskOf = (r: unknown) => (r as { task: Task }).task;
const statusText = (t: Task) => t.status.message?.parts[0]?.text ?? "";
const artifactBytes = (t: Task | undefined) =>
  (t?.artifacts ?? []).reduce((n, a) => n + a.parts.reduce((m, p) => m + partBytes(p), 0), 0);

async function a2aError(p: Promise<unknown>): Promise<A2AError> {
  const err = await p.then(
    () => undefined,
    (e) => e,
  );
  expect(err).toBeInstanceOf(A2AError);
  return err as A2AError;
}

/** What the test executor does, set per test: stream chunks, return artifacts, reply, ask questions. */
interface Plan {
  chunks?: string[];
  artifacts?: Artifact[];
  reply?: Part[];
  /** Questions asked one after another in the same execution. */
  questions?: number;
  /** End INPUT_REQUIRED (no execution waits): the next message starts a new one. */
  interrupt?: boolean;
}

class PlannedExecutor implements AgentExecutor {
  readonly kind = "planned";
  plan: Plan = {};
  inputErrors: unknown[] = [];
  async execute(req: ExecutionRequest): Promise<ExecutionOutcome> {
    const plan = this.plan;
    plan.chunks?.forEach((text, i) =>
      req.events.artifact(
        { artifactId: "out", parts: [{ text }] },
        { append: i > 0, lastChunk: i === plan.chunks!.length - 1 },
      ),
    );
    const answers: string[] = [];
    for (let i = 0; i < (plan.questions ?? 0); i++) {
      try {
        answers.push(messageText(await req.input({ text: `question ${i + 1}?` })));
      } catch (err) {
        this.inputErrors.push(err);
        // An executor that goes on regardless: the runner's outcome wins.
        return { state: "TASK_STATE_COMPLETED", message: "carried on" };
      }
    }
    if (plan.interrupt) return { state: "TASK_STATE_INPUT_REQUIRED", message: "more, please" };
    if (plan.reply)
      return {
        state: "TASK_STATE_COMPLETED",
        reply: { messageId: crypto.randomUUID(), role: "ROLE_AGENT", parts: plan.reply },
      };
    return {
      state: "TASK_STATE_COMPLETED",
      artifacts: plan.artifacts,
      message: answers.length ? answers.join(",") : undefined,
    };
  }
}

type Limits = Pick<
  TaskRunnerOptions,
  "maxArtifactBytes" | "maxTaskMessages" | "maxMessageParts" | "outputCapBytes" | "maxTaskBytes"
>;

interface Backend {
  name: string;
  open(): Promise<{ store: TaskStore; close(): Promise<void> }>;
}

const BACKENDS: Backend[] = [
  {
    name: "SQLite",
    async open() {
      const dir = tempDir("a2a-limits-");
      const database = openDatabase(join(dir, "db.sqlite"));
      const store = new SqliteTaskStore(database);
      return {
        store,
        async close() {
          store.flush();
          database.close();
          rmSync(dir, { recursive: true, force: true });
        },
      };
    },
  },
  {
    name: "Postgres",
    async open() {
      const database = await emptyPostgres();
      const store = new PostgresTaskStore(database, { log: createLogger(() => {}) });
      return {
        store,
        async close() {
          await store.flush();
          await database.close();
        },
      };
    },
  },
];

describe.each(BACKENDS)("limits on $name", (backend) => {
  async function node(
    limits: Limits,
    run: (n: { handler: DefaultRequestHandler; store: TaskStore; executor: PlannedExecutor }) => Promise<void>,
  ) {
    const { store, close } = await backend.open();
    const executor = new PlannedExecutor();
    const { handler } = taskFixture({
      store,
      executor,
      runnerOptions: { maxConcurrent: 4, maxQueued: 100, historyMessages: 20, ...limits },
      handlerOptions: {
        maxTaskMessages: limits.maxTaskMessages,
        maxMessageParts: limits.maxMessageParts,
        maxTaskBytes: limits.maxTaskBytes,
      },
    });
    try {
      await run({ handler, store, executor });
    } finally {
      await close();
    }
  }

  describe("max_artifact_bytes", () => {
    const LIMIT = 4096;
    const chunks = (total: number) => ["a".repeat(1000), "é".repeat(500), "b".repeat(total - 2000)]; // é is 2 bytes

    it("keeps streamed chunks that add up to the limit exactly, whole", () =>
      node({ maxArtifactBytes: LIMIT }, async ({ handler, store, executor }) => {
        executor.plan = { chunks: chunks(LIMIT) };
        const done = taskOf(await handler.sendMessage({ message: message("go") }, alpha));
        expect(done.status.state).toBe("TASK_STATE_COMPLETED");
        const stored = await store.get(done.id, "alpha");
        expect(artifactBytes(stored)).toBe(LIMIT);
        expect(stored?.artifacts?.[0]?.parts[0]?.text).toBe(chunks(LIMIT).join(""));
      }));

    it("ends the task FAILED when the chunks pass it by one byte, keeping what came before the chunk that passed it", () =>
      node({ maxArtifactBytes: LIMIT }, async ({ handler, store, executor }) => {
        executor.plan = { chunks: chunks(LIMIT + 1) };
        const done = taskOf(await handler.sendMessage({ message: message("go") }, alpha));
        expect(done.status.state).toBe("TASK_STATE_FAILED");
        expect(statusText(done)).toBe(
          `stopped: the task's artifacts would hold ${LIMIT + 1} bytes, more than this node's limit of ${LIMIT} (max_artifact_bytes); the artifact event that passed it was not kept`,
        );
        const stored = await store.get(done.id, "alpha");
        expect(stored?.status.state).toBe("TASK_STATE_FAILED");
        expect(artifactBytes(stored)).toBe(2000); // the first two chunks
        // The events say the same: no chunk past the limit was stored.
        const events = await store.eventsAfter(done.id, 0);
        expect(events.filter((e) => "artifactUpdate" in e.response)).toHaveLength(2);
        expect(events.map((e) => e.seq)).toEqual(events.map((_, i) => i + 1));
      }));

    it("counts artifacts the executor returns, every kind of part: at the limit kept, one byte over FAILED", () =>
      node({ maxArtifactBytes: LIMIT }, async ({ handler, store, executor }) => {
        const raw = Buffer.alloc(1500, 7).toString("base64"); // 2000 characters
        const data = { list: [1, 2, 3] }; // {"list":[1,2,3]}: 16 bytes
        const returned = (text: number): Artifact[] => [
          { artifactId: "file", parts: [{ raw, mediaType: "application/octet-stream" }, { data }] },
          { artifactId: "text", parts: [{ text: "x".repeat(text) }] },
        ];
        executor.plan = { artifacts: returned(LIMIT - 2016) };
        const fits = taskOf(await handler.sendMessage({ message: message("go") }, alpha));
        expect(fits.status.state).toBe("TASK_STATE_COMPLETED");
        expect(artifactBytes(await store.get(fits.id, "alpha"))).toBe(LIMIT);

        executor.plan = { artifacts: returned(LIMIT - 2015) };
        const over = taskOf(await handler.sendMessage({ message: message("go") }, alpha));
        expect(over.status.state).toBe("TASK_STATE_FAILED");
        expect(statusText(over)).toContain(
          `would hold ${LIMIT + 1} bytes, more than this node's limit of ${LIMIT} (max_artifact_bytes)`,
        );
        expect((await store.get(over.id, "alpha"))?.artifacts).toBeUndefined();
      }));
  });

  describe("output_cap", () => {
    const CAP = 4096;

    it("cuts an artifact the executor returns whole at the cap and marks the task truncated; one at the cap is kept whole", () =>
      node({ outputCapBytes: CAP }, async ({ handler, store, executor }) => {
        executor.plan = { artifacts: [{ artifactId: "whole", parts: [{ text: "x".repeat(CAP) }] }] };
        const fits = taskOf(await handler.sendMessage({ message: message("go") }, alpha));
        expect(fits.status.state).toBe("TASK_STATE_COMPLETED");
        expect(fits.metadata?.truncated).toBeUndefined();
        expect(artifactBytes(await store.get(fits.id, "alpha"))).toBe(CAP);

        executor.plan = { artifacts: [{ artifactId: "whole", parts: [{ text: "y".repeat(3 * CAP) }] }] };
        const cut = taskOf(await handler.sendMessage({ message: message("go") }, alpha));
        expect(cut.status.state).toBe("TASK_STATE_COMPLETED");
        expect(statusText(cut)).toBe(`output cut at ${CAP} bytes (this node's output cap)`);
        const stored = await store.get(cut.id, "alpha");
        expect(stored?.metadata).toMatchObject({ truncated: true, outputCapBytes: CAP });
        expect(stored?.artifacts?.[0]?.parts[0]?.text).toBe("y".repeat(CAP));
        // The artifact event subscribers and webhooks get carries the cut text too.
        const events = await store.eventsAfter(cut.id, 0);
        const artifactEvents = events.flatMap((e) =>
          "artifactUpdate" in e.response ? [e.response.artifactUpdate.artifact] : [],
        );
        expect(artifactEvents.map((a) => a.parts[0]?.text?.length)).toEqual([CAP]);
      }));

    it("counts what was streamed before: returned artifacts get only the room the chunks left, across several artifacts", () =>
      node({ outputCapBytes: CAP }, async ({ handler, store, executor }) => {
        executor.plan = {
          chunks: ["s".repeat(1000)],
          artifacts: [
            { artifactId: "a", parts: [{ text: "a".repeat(2000) }] },
            { artifactId: "b", parts: [{ text: "b".repeat(2000) }, { data: { kept: true } }] },
          ],
        };
        const cut = taskOf(await handler.sendMessage({ message: message("go") }, alpha));
        expect(cut.metadata?.truncated).toBe(true);
        const stored = await store.get(cut.id, "alpha");
        const text = (id: string) => stored?.artifacts?.find((a) => a.artifactId === id)?.parts[0]?.text ?? "";
        expect(text("out").length + text("a").length + text("b").length).toBe(CAP);
        expect(text("a")).toBe("a".repeat(2000));
        expect(text("b")).toBe("b".repeat(CAP - 3000));
        // Parts that are not text are not cut.
        expect(stored?.artifacts?.find((a) => a.artifactId === "b")?.parts[1]).toEqual({ data: { kept: true } });
      }));
  });

  describe("max_task_bytes", () => {
    const MAX = 10_000;
    const MORE = "more, please".length; // the agent's question each turn, with `interrupt`

    it("takes a caller's answers while the task fits, and refuses the one that would pass it with -32602, nothing recorded", () =>
      node({ maxTaskBytes: MAX }, async ({ handler, store, executor }) => {
        executor.plan = { interrupt: true };
        const first = taskOf(await handler.sendMessage({ message: message("a".repeat(4000)) }, alpha));
        await handler.sendMessage({ message: message("b".repeat(4000), { taskId: first.id }) }, alpha);
        const holds = 8000 + 2 * MORE;
        // Exactly to the limit is taken.
        const fits = MAX - holds - MORE;
        await handler.sendMessage({ message: message("c".repeat(fits), { taskId: first.id }) }, alpha);
        const err = await a2aError(handler.sendMessage({ message: message("d", { taskId: first.id }) }, alpha));
        expect(err.code).toBe(-32602);
        expect(err.message).toBe(
          `task ${first.id} holds ${MAX} bytes; this message (1 bytes) would pass this node's limit of ${MAX} per task (max_task_bytes); start a new task in context ${first.contextId}`,
        );
        expect((await store.get(first.id, "alpha"))?.history).toHaveLength(6);
      }));

    it("counts a caller's answer to a question an execution waits on the same way", () =>
      node({ maxTaskBytes: MAX }, async ({ handler, store, executor }) => {
        executor.plan = { questions: 3 };
        const asked = taskOf(await handler.sendMessage({ message: message("x".repeat(5000)) }, alpha));
        const err = await a2aError(
          handler.sendMessage({ message: message("y".repeat(5000), { taskId: asked.id }) }, alpha),
        );
        expect(err.code).toBe(-32602);
        expect(err.message).toContain("(max_task_bytes)");
        // The execution still waits, and a smaller answer is taken.
        const next = taskOf(await handler.sendMessage({ message: message("ok", { taskId: asked.id }) }, alpha));
        expect(next.status.state).toBe("TASK_STATE_INPUT_REQUIRED");
        expect((await store.get(asked.id, "alpha"))?.history?.map((m) => m.parts[0].text?.length)).toEqual([
          5000, 11, 2, 11,
        ]);
      }));

    it("ends a task FAILED when the agent's streamed output would pass it, keeping what came before", () =>
      node({ maxTaskBytes: MAX }, async ({ handler, store, executor }) => {
        executor.plan = { chunks: ["a".repeat(3000), "b".repeat(3000), "c".repeat(3001)] };
        const done = taskOf(await handler.sendMessage({ message: message("m".repeat(1000)) }, alpha));
        expect(done.status.state).toBe("TASK_STATE_FAILED");
        expect(statusText(done)).toBe(
          `stopped: the artifact event would make the task hold ${MAX + 1} bytes, more than this node's limit of ${MAX} per task (max_task_bytes); it was not kept`,
        );
        expect(artifactBytes(await store.get(done.id, "alpha"))).toBe(6000);
      }));

    it("ends a task FAILED when the agent's question or its outcome would pass it", async () => {
      await node({ maxTaskBytes: MAX }, async ({ handler, store, executor }) => {
        // the question is "question 1?" (11 bytes)
        executor.plan = { chunks: ["a".repeat(MAX - 1000 - 5)], questions: 1 };
        const done = taskOf(await handler.sendMessage({ message: message("m".repeat(1000)) }, alpha));
        expect(done.status.state).toBe("TASK_STATE_FAILED");
        expect(statusText(done)).toBe(
          `stopped: the agent's question would make the task hold ${MAX + 6} bytes, more than this node's limit of ${MAX} per task (max_task_bytes)`,
        );
        expect((await store.get(done.id, "alpha"))?.status.state).toBe("TASK_STATE_FAILED");
      });
      await node({ maxTaskBytes: MAX }, async ({ handler, executor }) => {
        executor.plan = { reply: [{ text: "r".repeat(MAX - 999) }] };
        const over = taskOf(await handler.sendMessage({ message: message("m".repeat(1000)) }, alpha));
        expect(over.status.state).toBe("TASK_STATE_FAILED");
        expect(statusText(over)).toBe(
          `stopped: the agent's outcome would make the task hold ${MAX + 1} bytes, more than this node's limit of ${MAX} per task (max_task_bytes); it was not kept`,
        );
        executor.plan = { reply: [{ text: "r".repeat(MAX - 1000) }] };
        const fits = await handler.sendMessage({ message: message("m".repeat(1000)) }, alpha);
        expect("message" in fits).toBe(true);
      });
    });
  });

  describe("max_task_messages", () => {
    it("lets an execution ask while its question, the answer and the final message fit; one message fewer and the task ends FAILED", async () => {
      // Two questions: the message, q1, a1, q2, a2 and the final message are 6.
      await node({ maxTaskMessages: 6 }, async ({ handler, store, executor }) => {
        executor.plan = { questions: 2 };
        const asked = taskOf(await handler.sendMessage({ message: message("go") }, alpha));
        await handler.sendMessage({ message: message("a", { taskId: asked.id }) }, alpha);
        const done = taskOf(await handler.sendMessage({ message: message("b", { taskId: asked.id }) }, alpha));
        expect(done.status.state).toBe("TASK_STATE_COMPLETED");
        expect((await store.get(done.id, "alpha"))?.history).toHaveLength(6);
      });
      await node({ maxTaskMessages: 5 }, async ({ handler, store, executor }) => {
        executor.plan = { questions: 2 };
        const asked = taskOf(await handler.sendMessage({ message: message("go") }, alpha));
        const done = taskOf(await handler.sendMessage({ message: message("a", { taskId: asked.id }) }, alpha));
        expect(done.status.state).toBe("TASK_STATE_FAILED");
        expect(statusText(done)).toBe(
          "stopped: the agent asked for input, but the task holds 3 messages: the question, its answer and the final message would pass this node's limit of 5 per task (max_task_messages)",
        );
        expect(executor.inputErrors).toHaveLength(1);
        const stored = await store.get(done.id, "alpha");
        expect(stored?.status.state).toBe("TASK_STATE_FAILED");
        expect(stored?.history?.length).toBeLessThanOrEqual(5);
      });
    });

    it("takes a caller's message into the last place but the final message's, and refuses the next with -32602", () =>
      node({ maxTaskMessages: 6 }, async ({ handler, store, executor }) => {
        executor.plan = { interrupt: true }; // each turn: the caller's message and the agent's "more, please"
        const first = taskOf(await handler.sendMessage({ message: message("one") }, alpha));
        await handler.sendMessage({ message: message("two", { taskId: first.id }) }, alpha);
        // place 5 of 6
        const third = taskOf(await handler.sendMessage({ message: message("three", { taskId: first.id }) }, alpha));
        expect(third.status.state).toBe("TASK_STATE_INPUT_REQUIRED");
        expect((await store.get(first.id, "alpha"))?.history).toHaveLength(6);
        const err = await a2aError(handler.sendMessage({ message: message("four", { taskId: first.id }) }, alpha));
        expect(err.code).toBe(-32602);
        expect(err.message).toBe(
          `task ${first.id} holds 6 messages; this node keeps at most 6 per task (max_task_messages), the last place for the task's final message; start a new task in context ${first.contextId}`,
        );
        expect((await store.get(first.id, "alpha"))?.history).toHaveLength(6); // nothing recorded
      }));
  });

  describe("max_message_parts", () => {
    const parts = (n: number): Part[] => Array.from({ length: n }, (_, i) => ({ text: `p${i}` }));

    it("takes a message with as many parts as the limit and refuses one more with -32602, new task or follow-up", () =>
      node({ maxMessageParts: 3 }, async ({ handler, store, executor }) => {
        executor.plan = { interrupt: true };
        const ok = taskOf(await handler.sendMessage({ message: message(parts(3)) }, alpha));
        expect((await store.get(ok.id, "alpha"))?.history?.[0]?.parts).toHaveLength(3);
        const before = (await store.list("alpha", {})).totalSize;
        const err = await a2aError(handler.sendMessage({ message: message(parts(4)) }, alpha));
        expect(err.code).toBe(-32602);
        expect(err.message).toBe(
          "params.message has 4 parts, more than this node takes in one message (max_message_parts = 3); send fewer parts, or join them",
        );
        expect((await store.list("alpha", {})).totalSize).toBe(before);
        const followUp = await a2aError(handler.sendMessage({ message: message(parts(4), { taskId: ok.id }) }, alpha));
        expect(followUp.code).toBe(-32602);
        expect((await store.get(ok.id, "alpha"))?.history).toHaveLength(2);
      }));

    it("ends a task FAILED when the agent's reply has one part too many; a reply at the limit is the answer", () =>
      node({ maxMessageParts: 3 }, async ({ handler, store, executor }) => {
        executor.plan = { reply: parts(3) };
        const fits = await handler.sendMessage({ message: message("go") }, alpha);
        expect("message" in fits && fits.message.parts).toHaveLength(3);
        executor.plan = { reply: parts(4) };
        const over = taskOf(await handler.sendMessage({ message: message("go") }, alpha));
        expect(over.status.state).toBe("TASK_STATE_FAILED");
        expect(statusText(over)).toBe(
          "stopped: the agent's reply has 4 parts, more than this node's limit of 3 per message (max_message_parts); it was not kept",
        );
        expect((await store.get(over.id, "alpha"))?.status.state).toBe("TASK_STATE_FAILED");
      }));
  });
});
