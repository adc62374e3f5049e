/**
 * The AgentExecutor contract, written once and run against every implementation (agent-executor.contract.test.ts):
 * the executor alone, driven as the task runner drives it (an ExecutionRequest in, an ExecutionOutcome out), its
 * backend the real one's twin. What every executor must do: say its kind and what a restart does to its tasks,
 * finish a plain message with the answer in its output, and report through `events` only while it runs. What
 * each supports, it states in `claims`, and the suite holds it to that:
 * - cancel: a task held mid-work, its signal aborted as a cancel, ends CANCELED at once (no hang, no retry);
 * - asks: "input": it asks through request.input() and goes on with the answer; "outcome": it ends
 *   INPUT_REQUIRED with the question; "never": it never calls input();
 * - onRestart "rerun": the same request run again (a restarted node) gives the same outcome; "reattach": after
 *   a shutdown it leaves its remote work running, and a resumed execution with the state it noted finishes that
 *   work instead of starting new work;
 * - limit: stopped for a node limit mid-output (cause "limit"), it ends at once and its backend sees the stop.
 */
import { afterEach, describe, expect, it } from "vitest";
import {
  ExecutionStopped,
  type AgentExecutor,
  type ExecutionOutcome,
  type ExecutionRequest,
  type InputRequest,
  type StopCause,
} from "../../src/executors/executor";
import type { Artifact, Message } from "../../src/protocol/types";
import { Conditions } from "../helpers/until";

/** What a test asks of the backend: finish at once, work until released (or stopped), or ask a question. */
export type Scenario = "answer" | "hold" | "ask";

export interface ExecutorUnderTest {
  executor: AgentExecutor;
  /** The message that plays `scenario` on this executor (the conformance executor reads its messageId). */
  message(scenario: Scenario): Message;
  /** Lets a held execution go on. */
  release(): void;
  /** How many times the backend was asked to start work (model requests, Hermes runs); 0 if it has none. */
  starts(): number;
  /** Resolves once the backend has the work (at once for an executor without one). */
  untilStarted(): Promise<void>;
  /** How many times the backend saw work stopped (an aborted model request, a stopped run). */
  stops(): number;
  /** Resolves once the backend saw the work stopped. */
  untilStopped(): Promise<void>;
  close(): Promise<void>;
}

export interface ExecutorContract {
  name: string;
  kind: string;
  onRestart: "rerun" | "reattach" | "fail";
  /** The text the "answer" scenario's output holds. */
  answer: string;
  /** The answer to the "ask" scenario's question, and the text the task's output then holds. */
  reply?: { answer: string; then: string };
  claims: { cancel: boolean; asks: "input" | "outcome" | "never"; limit: boolean };
  start(scenario: Scenario): Promise<ExecutorUnderTest>;
}

/** A request as the runner builds it, recording what the executor reports. */
export function recordingRequest(message: Message, extra: Partial<ExecutionRequest> = {}) {
  const conditions = new Conditions();
  const artifacts: Artifact[] = [];
  const progress: string[] = [];
  const questions: InputRequest[] = [];
  const notes: Record<string, unknown> = {};
  const abort = new AbortController();
  let answer: ((m: Message) => void) | undefined;
  const request: ExecutionRequest = {
    taskId: `task-${crypto.randomUUID()}`,
    contextId: "ctx-contract",
    message,
    history: async () => [],
    caller: "alpha",
    signal: abort.signal,
    events: {
      progress: (text) => (progress.push(text), conditions.changed()),
      artifact: (a) => (artifacts.push(a), conditions.changed()),
      note: async (state) => (Object.assign(notes, state), conditions.changed()),
    },
    metadata: {},
    state: {},
    resumed: false,
    input: (q) => {
      questions.push(q);
      conditions.changed();
      return new Promise<Message>((resolve) => (answer = resolve));
    },
    ...extra,
  };
  return {
    request,
    artifacts,
    progress,
    questions,
    notes,
    conditions,
    stop: (cause: StopCause) => abort.abort(new ExecutionStopped(cause, `stopped: ${cause}`)),
    answer: (text: string) => answer!(userMessage(text, request.taskId)),
  };
}

export function userMessage(text: string, taskId?: string, messageId = `m-${crypto.randomUUID()}`): Message {
  return { messageId, role: "ROLE_USER", parts: [{ text }], ...(taskId ? { taskId } : {}) };
}

/** Every text the outcome and the streamed artifacts carry, joined. */
export function outputText(outcome: ExecutionOutcome, streamed: Artifact[]): string {
  const parts = [...streamed, ...(outcome.artifacts ?? [])].flatMap((a) => a.parts);
  if (outcome.reply) parts.push(...outcome.reply.parts);
  return [...parts.map((p) => p.text ?? ""), outcome.message ?? ""].join("");
}

export function agentExecutorContract(contract: ExecutorContract): void {
  const { claims } = contract;
  const claimed = [
    claims.cancel && "cancel",
    claims.asks !== "never" && `asks (${claims.asks})`,
    `restart ${contract.onRestart}`,
    claims.limit && "limit",
  ].filter(Boolean);
  // What an implementation does not claim is not registered (rather than skipped): the name says what it claims.
  const when = (claim: boolean) => (name: string, test: () => Promise<void>) => {
    if (claim) it(name, test);
  };
  describe(`AgentExecutor contract: ${contract.name}, claiming ${claimed.join(", ")}`, () => {
    let subject: ExecutorUnderTest | undefined;
    const start = async (scenario: Scenario) => (subject = await contract.start(scenario));
    afterEach(async () => {
      await subject?.close();
      subject = undefined;
    });

    it(`is kind "${contract.kind}", and a restart does "${contract.onRestart}" to its unfinished tasks`, async () => {
      const s = await start("answer");
      expect(s.executor.kind).toBe(contract.kind);
      expect(s.executor.onRestart ?? "fail").toBe(contract.onRestart);
    });

    it("completes a plain message, its answer in the output", async () => {
      const s = await start("answer");
      const r = recordingRequest(s.message("answer"));
      const outcome = await s.executor.execute(r.request);
      expect(outcome.state).toBe("TASK_STATE_COMPLETED");
      expect(outputText(outcome, r.artifacts)).toContain(contract.answer);
      if (claims.asks !== "input") expect(r.questions).toEqual([]);
    });

    when(claims.cancel)("cancel: a task held mid-work ends CANCELED at once when its signal is aborted", async () => {
      const s = await start("hold");
      const r = recordingRequest(s.message("hold"));
      const running = s.executor.execute(r.request);
      await s.untilStarted();
      r.stop("canceled");
      const outcome = await running;
      expect(outcome.state).toBe("TASK_STATE_CANCELED");
      expect(s.starts()).toBeLessThanOrEqual(1);
    });

    when(claims.asks === "input")(
      "asks: the question goes through input(), and the answer lets the work go on",
      async () => {
        const s = await start("ask");
        const r = recordingRequest(s.message("ask"));
        const running = s.executor.execute(r.request);
        const question = await r.conditions.until(() => r.questions[0]);
        expect(question.text.length).toBeGreaterThan(0);
        r.answer(contract.reply!.answer);
        const outcome = await running;
        expect(outcome.state).toBe("TASK_STATE_COMPLETED");
        expect(outputText(outcome, r.artifacts)).toContain(contract.reply!.then);
      },
    );

    when(claims.asks === "outcome")("asks: the execution ends INPUT_REQUIRED with the question", async () => {
      const s = await start("ask");
      const r = recordingRequest(s.message("ask"));
      const outcome = await s.executor.execute(r.request);
      expect(outcome.state).toBe("TASK_STATE_INPUT_REQUIRED");
      expect(outcome.message?.length).toBeGreaterThan(0);
      expect(r.questions).toEqual([]);
    });

    when(contract.onRestart === "rerun")(
      "restart (rerun): the same request run again gives the same outcome",
      async () => {
        const s = await start("answer");
        const message = s.message("answer");
        const first = recordingRequest(message);
        const a = await s.executor.execute(first.request);
        const again = recordingRequest(message, { taskId: first.request.taskId, resumed: true });
        const b = await s.executor.execute(again.request);
        expect(b.state).toBe(a.state);
        expect(outputText(b, again.artifacts)).toBe(outputText(a, first.artifacts));
      },
    );

    when(contract.onRestart === "reattach")(
      "restart (reattach): a shutdown leaves the remote work running; the resumed execution finishes it",
      async () => {
        const s = await start("hold");
        const message = s.message("hold");
        const first = recordingRequest(message);
        const running = s.executor.execute(first.request);
        await s.untilStarted();
        await first.conditions.until(() => Object.keys(first.notes).length > 0);
        first.stop("shutdown");
        await running;
        expect(s.stops()).toBe(0);
        const state = { ...first.notes };
        const resumed = recordingRequest(message, { taskId: first.request.taskId, resumed: true, state });
        const finishing = s.executor.execute(resumed.request);
        s.release();
        const outcome = await finishing;
        expect(outcome.state).toBe("TASK_STATE_COMPLETED");
        expect(s.starts()).toBe(1);
      },
    );

    when(claims.limit)(
      "limit: stopped for a node limit mid-output, it ends at once and its backend sees the stop",
      async () => {
        const s = await start("hold");
        const r = recordingRequest(s.message("hold"));
        const running = s.executor.execute(r.request);
        await r.conditions.until(() => r.artifacts.length >= 1);
        r.stop("limit");
        const outcome = await running;
        expect(outcome.state).not.toBe("TASK_STATE_COMPLETED");
        await s.untilStopped();
        expect(s.stops()).toBe(1);
      },
    );
  });
}
