/**
 * The Hermes executor's scenarios, written once and run against every Hermes this repository can start: the real
 * server (0.18.2, the older generation: test/real-hermes/hermes-real.test.ts) and the fake twin as both
 * generations (test/executors/hermes-twin.test.ts), which plays the real server's scripted model
 * (test/fakes/hermes/markers.ts). The task texts carry that model's markers (DANGER-RM, SAFE-ECHO, chunks:N,
 * sleep:N); everything else is the executor and the node's task core (hermes-node.ts) as a node runs them.
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { HermesExecutor } from "../../src/executors/hermes-executor";
import type { HermesTiming } from "../../src/executors/hermes/hermes-task";
import type { Task } from "../../src/protocol/types";
import { answerText, startHermesNode, userMessage, who, type HermesNode } from "../helpers/hermes-node";

/** A Hermes server the scenarios run against. */
export interface HermesBackend {
  url: string;
  apiKey: string;
  /** Where DANGER-RM's directories are. */
  scratch: string;
  /** The terminal tool really runs (and really deletes): the real server. */
  realTools: boolean;
  /** The server generation: newer sends request_id with approvals and keeps idempotent runs across restarts. */
  generation: "older" | "newer";
  /** Its max_concurrent_runs. */
  capacity: number;
  /** Hermes stops gracefully (SIGTERM) with runs in flight, and is gone until up(). */
  shutdown(): Promise<void>;
  up(): Promise<void>;
  close(): Promise<void>;
}

/** The scripted model's answer to a plain text. */
const ok = (text: string, turns: number) => `FAKE-MODEL-OK: ${text} [user_turns=${turns}]`;
const later = { configuration: { returnImmediately: true } };
const uniq = () => `t${crypto.randomUUID().slice(0, 8)}`;

/** Every status text the task went through, in order (its stored events, replayed). */
async function statusLog(
  node: HermesNode,
  taskId: string,
): Promise<{ state: string; text: string; metadata?: Record<string, unknown> }[]> {
  const log: { state: string; text: string; metadata?: Record<string, unknown> }[] = [];
  for await (const item of await node.handler.subscribeToTask({ id: taskId }, who("alpha"), 0)) {
    const u = (item.response as { statusUpdate?: { status: Task["status"]; metadata?: Record<string, unknown> } })
      .statusUpdate;
    if (u) log.push({ state: u.status.state, text: u.status.message?.parts[0]?.text ?? "", metadata: u.metadata });
  }
  return log;
}

export function hermesScenarios(name: string, make: () => Promise<HermesBackend>, timeoutMs: number): void {
  describe(`the Hermes executor against ${name}`, () => {
    let backend: HermesBackend;
    const nodes: HermesNode[] = [];
    const node = async (options: { apiKey?: string; timing?: Partial<HermesTiming> } = {}) => {
      const n = await startHermesNode(backend, { apiKey: options.apiKey ?? backend.apiKey, timing: options.timing });
      nodes.push(n);
      return n;
    };
    const runStatus = async (runId: string) => {
      const r = await fetch(`${backend.url}/v1/runs/${runId}`, {
        headers: { authorization: `Bearer ${backend.apiKey}` },
      });
      return { http: r.status, ...((await r.json()) as { status?: string }) };
    };
    /** A task whose run streams for a while (40 tokens 100 ms apart), once its first token is in. */
    const midRun = async (n: HermesNode) => {
      const r = await n.handler.sendMessage(
        { message: userMessage("count chunks:40 pace:100"), ...later },
        who("alpha"),
      );
      const id = (r as { task: Task }).task.id;
      // The first token's event (streamed chunks are stored with the task only at its end).
      for await (const item of await n.handler.subscribeToTask({ id }, who("alpha"), 0))
        if ("artifactUpdate" in item.response) break;
      const t = await n.get(id);
      expect(t.status.state).toBe("TASK_STATE_WORKING");
      return { id, runId: t.metadata?.["hermes/runId"] as string };
    };

    beforeAll(async () => {
      backend = await make();
    }, timeoutMs);
    afterEach(async () => {
      for (const n of nodes.splice(0)) await n.close();
    });
    afterAll(async () => {
      await backend?.close();
    }, timeoutMs);

    it(
      "a plain task: the model's answer is the artifact, with the usage; Hermes's copy of it in reasoning.available stays in the answer's metadata, never a 'thinking' status",
      async () => {
        const n = await node();
        const task = await n.send("hello there");
        expect(task.status.state).toBe("TASK_STATE_COMPLETED");
        expect(answerText(task)).toBe(ok("hello there", 1));
        expect(task.metadata?.["hermes/usage"]).toEqual({ input_tokens: 11, output_tokens: 7, total_tokens: 18 });
        const said = task.artifacts?.[0]?.metadata?.hermes as {
          "reasoning.available": { event: string; text: string }[];
        };
        expect(said["reasoning.available"].map((e) => [e.event, e.text])).toEqual([
          ["reasoning.available", ok("hello there", 1)],
        ]);
        const log = await statusLog(n, task.id);
        expect(log.filter((s) => s.text.startsWith("thinking"))).toEqual([]);
        expect(log.at(-1)?.state).toBe("TASK_STATE_COMPLETED");
      },
      timeoutMs,
    );

    it(
      "streaming: the tokens arrive as artifact chunks as the model writes them, then the whole answer",
      async () => {
        const n = await node();
        const items = await n.stream({ message: userMessage("count chunks:5 pace:20") });
        const chunks = items
          .map(
            (i) =>
              (
                i.response as {
                  artifactUpdate?: { artifact: { parts: { text?: string }[] }; append?: boolean; lastChunk?: boolean };
                }
              ).artifactUpdate,
          )
          .filter((u) => u !== undefined);
        expect(chunks.map((c) => c!.artifact.parts[0]!.text)).toEqual(["t00", " t01", " t02", " t03", " t04", ""]);
        expect(chunks.map((c) => c!.append === true)).toEqual([false, true, true, true, true, true]);
        expect(chunks.at(-1)!.lastChunk).toBe(true);
        const last = (items.at(-1)!.response as { statusUpdate: { status: Task["status"] } }).statusUpdate;
        expect(last.status.state).toBe("TASK_STATE_COMPLETED");
        const id = (items[0]!.response as { task: Task }).task.id;
        expect(answerText(await n.get(id))).toBe("t00 t01 t02 t03 t04");
      },
      timeoutMs,
    );

    it(
      "a tool that needs no approval: its start and end as status updates, and the answer after it does not start with blank lines",
      async () => {
        const n = await node();
        const items = await n.stream({ message: userMessage("run SAFE-ECHO") });
        const id = (items[0]!.response as { task: Task }).task.id;
        const first = items
          .map((i) => (i.response as { artifactUpdate?: { artifact: { parts: { text?: string }[] } } }).artifactUpdate)
          .find((u) => u)!;
        expect(first.artifact.parts[0]!.text).toMatch(/^FAKE-TOOL-DONE: /); // Hermes sent "\n\nFAKE-TOOL-DONE..."
        const task = await n.get(id);
        expect(task.status.state).toBe("TASK_STATE_COMPLETED");
        expect(answerText(task)).toBe(
          'FAKE-TOOL-DONE: {"output": "hello-from-terminal", "exit_code": 0, "error": null}',
        );
        const log = await statusLog(n, id);
        const tools = log.filter((s) => s.metadata?.hermes);
        expect(tools.map((s) => s.text.replace(/after [\d.]+ s/, "after N s"))).toEqual([
          "running terminal: echo hello-from-terminal",
          "terminal finished after N s",
        ]);
        expect(task.metadata?.["hermes/usage"]).toEqual({ input_tokens: 22, output_tokens: 14, total_tokens: 36 });
      },
      timeoutMs,
    );

    for (const [answer, approved] of [
      ["yes", true],
      ["no", false],
    ] as const) {
      it(
        `an approval: the task asks with the command and why, the tool's start shown before; "${answer}" ${approved ? "runs the command" : "denies it, and the run still completes"}`,
        async () => {
          const target = uniq();
          const n = await node();
          const asked = await n.send(`clean up DANGER-RM:${target}`);
          expect(asked.status.state).toBe("TASK_STATE_INPUT_REQUIRED");
          const command = `rm -rf ${join(backend.scratch, target)}`;
          expect(asked.status.message?.parts[0]?.text).toBe(
            `Hermes asks for approval before it goes on.\nWhy: delete in root path\nCommand: ${command}\nAnswer with one of: once, session, always, deny (yes means once, no means deny).`,
          );
          const approval = asked.status.message?.metadata?.["hermes/approval"] as Record<string, unknown>;
          expect(approval).toMatchObject({
            command,
            description: "delete in root path",
            pattern_key: "delete in root path",
            choices: ["once", "session", "always", "deny"],
          });
          if (backend.generation === "newer") expect(approval.request_id).toEqual(expect.any(String));
          else expect(approval).not.toHaveProperty("request_id");
          if (backend.realTools) expect(existsSync(join(backend.scratch, target))).toBe(true);

          const done = await n.answer(asked.id, answer);
          expect(done.status.state).toBe("TASK_STATE_COMPLETED");
          expect(answerText(done)).toMatch(
            approved
              ? /^FAKE-TOOL-DONE: \{"output": "", "exit_code": 0,/
              : /^FAKE-TOOL-DONE: \{"output": "", "exit_code": -1, "error": "BLOCKED: Command denied by user\./,
          );
          if (backend.realTools) expect(existsSync(join(backend.scratch, target))).toBe(!approved);
          const log = await statusLog(n, asked.id);
          const texts = log.map((s) => `${s.state}: ${s.text.split("\n")[0]}`.replace(/after [\d.]+ s/, "after N s"));
          // tool.started comes before approval.request on this server: the tool shows as running, then the question.
          const asking = texts.findIndex((t) => t.startsWith("TASK_STATE_INPUT_REQUIRED"));
          expect(texts[asking - 1]).toBe(`TASK_STATE_WORKING: running terminal: ${command}`);
          expect(texts.slice(asking + 1).filter((t) => t !== "TASK_STATE_WORKING: ")).toEqual([
            `TASK_STATE_WORKING: approval answered: ${approved ? "once" : "deny"}`,
            `TASK_STATE_WORKING: terminal ${approved ? "finished" : "failed"} after N s`,
            "TASK_STATE_COMPLETED: ",
          ]);
        },
        timeoutMs,
      );
    }

    it(
      "the reply to an answer is the task going on (WORKING), never the question it answered; the task then ends as the run does",
      async () => {
        const n = await node();
        const asked = await n.send(`clean up DANGER-RM:${uniq()}`);
        expect(asked.status.state).toBe("TASK_STATE_INPUT_REQUIRED");
        const reply = await n.handler.sendMessage(
          { message: userMessage("no", { taskId: asked.id }), ...later },
          who("alpha"),
        );
        expect((reply as { task: Task }).task.status.state).toBe("TASK_STATE_WORKING");
        const done = await n.reach(asked.id, (t) => t.status.state === "TASK_STATE_COMPLETED");
        expect(answerText(done)).toContain("BLOCKED: Command denied by user");
      },
      timeoutMs,
    );

    it(
      "a cancel stops the run and is recorded once Hermes's run is cancelled",
      async () => {
        const n = await node();
        const { id, runId } = await midRun(n);
        const canceled = await n.handler.cancelTask({ id }, who("alpha"));
        expect(canceled.status.state).toBe("TASK_STATE_CANCELED");
        expect(canceled.status.message?.parts[0]?.text).toBe(`canceled by alpha; Hermes stopped run ${runId}`);
        expect(await runStatus(runId)).toMatchObject({ http: 200, status: "cancelled" });
      },
      timeoutMs,
    );

    it(
      "a conversation continues: the second task of a context reaches the model with the first turn; another context starts afresh",
      async () => {
        const n = await node();
        const context = `conv-${uniq()}`;
        const first = await n.send("my name is Ada", { contextId: context });
        expect(answerText(first)).toBe(ok("my name is Ada", 1));
        const second = await n.send("what is my name?", { contextId: context });
        expect(answerText(second)).toBe(ok("what is my name?", 2));
        const third = await n.send("and now?", { contextId: context });
        expect(answerText(third)).toBe(ok("and now?", 3));
        const other = await n.send("who am I?", { contextId: `conv-${uniq()}` });
        expect(answerText(other)).toBe(ok("who am I?", 1));
      },
      timeoutMs,
    );

    it(
      "a wrong key: the task is AUTH_REQUIRED and the node is not ready; the right key is",
      async () => {
        const n = await node({ apiKey: "not-the-key" });
        const task = await n.send("hello");
        expect(task.status.state).toBe("TASK_STATE_AUTH_REQUIRED");
        expect(task.status.message?.parts[0]?.text).toMatch(
          new RegExp(`^Hermes at ${backend.url} refused this node's API key \\(HTTP 401 invalid_api_key\\)`),
        );
        const signal = new AbortController().signal;
        const wrong = await new HermesExecutor({ baseUrl: backend.url, apiKey: "not-the-key" }).ready(signal);
        expect(wrong).toEqual({
          ready: false,
          detail: `Hermes at ${backend.url} refused the API key (HTTP 401); set HERMES_API_KEY or --hermes-api-key-file`,
        });
        expect(await new HermesExecutor({ baseUrl: backend.url, apiKey: backend.apiKey }).ready(signal)).toEqual({
          ready: true,
          detail: `Hermes at ${backend.url} accepted the API key`,
        });
      },
      timeoutMs,
    );

    it(
      "Hermes at capacity (429 past its max_concurrent_runs): the task waits, saying so, then runs",
      async () => {
        const n = await node({ timing: { maxRetryDelayMs: 1000 } });
        // Someone else's runs take every slot for a few seconds.
        const blockers = await Promise.all(
          Array.from({ length: backend.capacity }, () =>
            fetch(`${backend.url}/v1/runs`, {
              method: "POST",
              headers: { authorization: `Bearer ${backend.apiKey}`, "content-type": "application/json" },
              body: JSON.stringify({ input: "hold sleep:1.5" }),
            }),
          ),
        );
        expect(blockers.map((b) => b.status)).toEqual(Array(backend.capacity).fill(202));
        const r = await n.handler.sendMessage({ message: userMessage("after the rush"), ...later }, who("alpha"));
        const id = (r as { task: Task }).task.id;
        const waiting = await n.reach(id, (t) =>
          /waiting for Hermes capacity/.test(t.status.message?.parts[0]?.text ?? ""),
        );
        expect(waiting.status.message?.parts[0]?.text).toContain("HTTP 429 rate_limit_exceeded");
        const done = await n.reach(id, (t) => t.status.state === "TASK_STATE_COMPLETED");
        expect(answerText(done)).toBe(ok("after the rush", 1));
      },
      timeoutMs,
    );

    it(
      "a caller cannot steer another caller's run: hermes/runId and hermes/pendingApproval in its SendMessage metadata get it a run of its own, never that run's answer or approval",
      async () => {
        const n = await node();
        const asMallory = async (text: string, metadata: Record<string, unknown>) =>
          ((await n.handler.sendMessage({ message: userMessage(text), metadata }, who("mallory"))) as { task: Task })
            .task;
        const secret = await n.send("alpha secret report");
        expect(answerText(secret)).toBe(ok("alpha secret report", 1));
        const finished = secret.metadata?.["hermes/runId"] as string;
        // Another caller's finished run, by its id: mallory's task is a run of its own.
        const took = await asMallory("mallory asks", { "hermes/runId": finished });
        expect(took.status.state).toBe("TASK_STATE_COMPLETED");
        expect(answerText(took)).toBe(ok("mallory asks", 1));
        expect(took.metadata?.["hermes/runId"]).not.toBe(finished);
        // A run id that does not exist is no oracle: no FAILED "no longer knows run".
        const probe = await asMallory("probe", { "hermes/runId": "run_00000000000000000000000000000000" });
        expect(probe.status.state).toBe("TASK_STATE_COMPLETED");

        // Another caller's pending approval, with its run id: mallory's "yes" is its own task's text.
        const target = `prod-${uniq()}`;
        const asked = await n.send(`clean up DANGER-RM:${target}`);
        expect(asked.status.state).toBe("TASK_STATE_INPUT_REQUIRED");
        const waiting = asked.metadata?.["hermes/runId"] as string;
        const yes = await asMallory("yes", {
          "hermes/runId": waiting,
          "hermes/pendingApproval": asked.status.message!.metadata!["hermes/approval"],
        });
        expect(yes.status.state).toBe("TASK_STATE_COMPLETED");
        expect(answerText(yes)).toBe(ok("yes", 1));
        expect((await runStatus(waiting)).status).toBe("waiting_for_approval");
        expect((await n.get(asked.id)).status.state).toBe("TASK_STATE_INPUT_REQUIRED");
        if (backend.realTools) expect(existsSync(join(backend.scratch, target))).toBe(true);
        // alpha's own answer reaches its run: denied, nothing deleted.
        const done = await n.answer(asked.id, "no");
        expect(done.status.state).toBe("TASK_STATE_COMPLETED");
        expect(answerText(done)).toMatch(
          /^FAKE-TOOL-DONE: \{"output": "", "exit_code": -1, "error": "BLOCKED: Command denied by user\./,
        );
        if (backend.realTools) expect(existsSync(join(backend.scratch, target))).toBe(true);
      },
      timeoutMs,
    );

    // Last: the server restarts, and the next run of a fresh server is slow.
    it(
      "Hermes shutting down mid-run is not a cancel: the task ends FAILED saying Hermes stopped the run",
      async () => {
        const n = await node();
        const { id, runId } = await midRun(n);
        await backend.shutdown();
        try {
          const failed = await n.reach(id, (t) => t.status.state === "TASK_STATE_FAILED");
          expect(failed.status.message?.parts[0]?.text).toBe(
            `Hermes at ${backend.url} stopped run ${runId} without this node asking (Hermes shut down or restarted, or the run was stopped on Hermes itself); send the task again`,
          );
        } finally {
          await backend.up();
        }
        // The restarted server knows nothing of it (the newer one keeps an idempotent run's end).
        expect(await runStatus(runId)).toMatchObject(
          backend.generation === "older" ? { http: 404 } : { http: 200, status: "cancelled" },
        );
      },
      timeoutMs,
    );
  });
}
