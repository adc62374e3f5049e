import { createHash } from "node:crypto";
import type { Message } from "../../protocol/types";
import type { ExecutionOutcome, ExecutionRequest } from "../executor";
import { stopCause } from "../executor";
import { approvalMetadata, choiceOf, question, requestIdOf } from "./approvals";
import type { Conversations } from "./conversation";
import { type HermesApproval, type HermesEvent, HermesHttpError, type RunsApi, type StartRun } from "./runs-api";

/** The keys of the task's node state the executor keeps, committed as soon as known (a restarted node reads them). */
export const RUN_KEY = "hermes/runId";
export const APPROVAL_KEY = "hermes/pendingApproval";

export interface HermesTiming {
  /** Total time a task waits for Hermes capacity (429/503 answers to POST /v1/runs) before it fails. */
  capacityWaitMs: number;
  /** Longest single pause between such retries, whatever Retry-After says. */
  maxRetryDelayMs: number;
  /** Polling of a run the node re-attached to: the first interval, doubling up to the last. */
  pollFirstMs: number;
  pollMaxMs: number;
  /**
   * After a cancel, how long the task waits for Hermes's run to reach `cancelled` (it stays `stopping` until the
   * model call in flight is interrupted, about 2 s on 0.18.2) before it is recorded as still stopping.
   */
  stopWaitMs: number;
}

/** A question to the person, open while the run waits for an approval. */
interface Asking {
  approval: HermesApproval;
  answer: Promise<Message>;
  withdraw: AbortController;
}

type Step = { event: IteratorResult<HermesEvent> } | { answer: Message } | { withdrawn: true } | { tick: true };

/**
 * One task's life on Hermes: starts its run (or picks up the run an earlier process started), follows it, and
 * turns what the run does into task events. A fresh run is followed on its one event stream, held open for the
 * run's whole life, approvals included; a run picked up again is followed by polling its status, since the
 * server gives a run's event stream only once.
 */
export class HermesTask {
  private readonly artifactId: string;
  private streamed = "";
  /** Text streamed since the last tool event: the assistant message being written. */
  private segment = "";
  /**
   * reasoning.available events that carried the visible answer rather than reasoning (Hermes sends each assistant
   * message's text there), kept for the answer's metadata; and one waiting to be told apart (nothing streamed).
   */
  private readonly said: HermesEvent[] = [];
  private unsure: HermesEvent | undefined;
  private asking: Asking | undefined;
  /** Approvals the run asked that nobody has answered yet, oldest first (a run may ask several at once). */
  private pending: HermesApproval[] = [];
  /** Answers we gave whose approval.responded echo has not come back on the stream yet. */
  private echoes = 0;
  /**
   * Approvals Hermes stopped waiting for (it answered 409 to our answer): a status that still says
   * waiting_for_approval about one of them is stale (the real server leaves it so after a timeout).
   */
  private readonly over = new Set<string>();

  constructor(
    private readonly api: RunsApi,
    private readonly req: ExecutionRequest,
    private readonly timing: HermesTiming,
    private readonly model: string | undefined,
    private readonly conversations: Conversations,
  ) {
    this.artifactId = `${req.taskId}-answer`;
  }

  async execute(): Promise<ExecutionOutcome> {
    const { req } = this;
    // The node's own state of the task, never its caller's metadata: a run is bound to the task that started it.
    let runId = typeof req.state[RUN_KEY] === "string" ? (req.state[RUN_KEY] as string) : undefined;
    try {
      if (!runId) {
        runId = await this.startRun();
        // Durable before anything else happens: a node restarted from here on re-attaches to this run and
        // never starts a second one (older servers ignore Idempotency-Key).
        await req.events.note({ [RUN_KEY]: runId });
        return await this.follow(runId);
      }
      // A run an earlier execution started: this process restarted, or this message answers an approval the
      // run asked before it did. Its event stream is gone (the server gives it once), so poll its status.
      const noted = req.state[APPROVAL_KEY];
      if (noted && typeof noted === "object") {
        this.pending = [noted as HermesApproval];
        if (!req.resumed) await this.deliver(runId, noted as HermesApproval, req.message);
      }
      return await this.poll(runId);
    } catch (err) {
      return this.ended(err, runId);
    }
  }

  /** POST /v1/runs, waiting (bounded, with the task saying so) while Hermes is at capacity. */
  private async startRun(): Promise<string> {
    const { req } = this;
    const session = sessionId(req.caller, req.contextId);
    const { history, lost } = await this.conversations.continuation(session, req.signal);
    if (lost && (await req.history()).length > 0)
      req.events.progress(`${lost}; this task goes on without them`, { hermes: { history: "unavailable" } });
    const body: StartRun = {
      input: inputText(req.message),
      session_id: session,
      ...(history ? { conversation_history: history } : {}),
      ...(this.model ? { model: this.model } : {}),
    };
    const giveUpAt = Date.now() + this.timing.capacityWaitMs;
    let told = false;
    let unreachable = 0;
    for (;;) {
      try {
        return (await this.api.start(body, req.taskId, req.signal)).runId;
      } catch (err) {
        if (req.signal.aborted) throw err;
        if (err instanceof HermesHttpError && (err.status === 429 || err.status === 503)) {
          const wait = Math.min((err.retryAfter ?? 1) * 1000, this.timing.maxRetryDelayMs);
          if (Date.now() + wait > giveUpAt)
            throw new GaveUp(
              `Hermes at ${this.api.base} stayed at capacity for ${Math.round(this.timing.capacityWaitMs / 1000)} s (${err.message}); send the task again later`,
            );
          if (!told)
            req.events.progress(`waiting for Hermes capacity: ${err.message}; trying again`, {
              hermes: { waiting: "capacity", status: err.status, code: err.code },
            });
          told = true;
          await sleep(wait, req.signal);
          continue;
        }
        // A refused connection reached no server, so trying again cannot start a second run.
        if (!(err instanceof HermesHttpError) && ++unreachable < 3) {
          await sleep(250 * unreachable, req.signal);
          continue;
        }
        throw err;
      }
    }
  }

  /** Follows a fresh run on its event stream; falls back to polling if the stream is lost. */
  private async follow(runId: string): Promise<ExecutionOutcome> {
    let events: AsyncIterator<HermesEvent>;
    try {
      events = await this.api.events(runId, this.req.signal);
    } catch (err) {
      if (err instanceof HermesHttpError && err.status === 404) return this.poll(runId);
      throw err;
    }
    try {
      // A broken connection ends the stream like its end does: the status tells how the run goes on.
      const read = () =>
        events.next().catch((err): IteratorResult<HermesEvent> => {
          if (this.req.signal.aborted) throw err;
          return { done: true, value: undefined };
        });
      let next = read();
      for (;;) {
        const step = await this.nextStep(next.then((event) => ({ event })));
        if ("answer" in step) {
          await this.deliver(runId, (this.asking as Asking).approval, step.answer);
          continue;
        }
        if ("withdrawn" in step || "tick" in step) continue;
        if (step.event.done) break;
        next = read();
        const outcome = await this.onEvent(runId, step.event.value);
        if (outcome) return outcome;
      }
    } finally {
      void events.return?.().catch(() => {});
    }
    // The connection broke before the run ended: its status still tells how it goes on.
    return this.poll(runId);
  }

  /** Polls a run's status with backoff until it ends, asking the person when it waits for an approval. */
  private async poll(runId: string): Promise<ExecutionOutcome> {
    let delay = this.timing.pollFirstMs;
    for (;;) {
      let s;
      try {
        s = await this.api.status(runId, this.req.signal);
      } catch (err) {
        if (this.req.signal.aborted) throw err;
        if (err instanceof HermesHttpError && err.status === 404)
          return {
            state: "TASK_STATE_FAILED",
            message: `Hermes at ${this.api.base} no longer knows run ${runId} (it restarted, or the run ended over an hour ago); send the task again`,
          };
        // Hermes may be restarting: keep asking (the task's deadline bounds this), unless it refuses us.
        if (err instanceof HermesHttpError && err.status < 500 && err.status !== 429) throw err;
        s = undefined;
      }
      if (s) {
        switch (s.status) {
          case "completed":
            return this.completed(s.output, s.usage);
          case "failed":
            return { state: "TASK_STATE_FAILED", message: `the Hermes run failed: ${s.error ?? "no reason given"}` };
          case "cancelled":
            return this.stoppedThere(runId);
          case "interrupted":
            return {
              state: "TASK_STATE_FAILED",
              message: `Hermes restarted while it ran this task (run ${runId} was interrupted: ${s.error ?? "no reason given"}); send the task again`,
            };
          case "waiting_for_approval": {
            // Newer servers say which approval; older ones do not, and the one noted before stands for it.
            const approval = s.approval ?? this.pending[0] ?? {};
            // The status stays waiting_for_approval after Hermes denied an approval on its timeout; the agent's
            // next tool event moves last_event on, and a 409 to our answer says so too.
            const stale =
              this.over.has(keyOf(approval)) || (s.last_event !== undefined && s.last_event !== "approval.request");
            const current = this.asking?.approval;
            if (stale) {
              if (current)
                this.withdraw("Hermes went on without this answer: it denies an approval nobody answers in time");
            } else if (!current || keyOf(approval) !== keyOf(current)) {
              if (current) this.withdraw("Hermes now asks about another approval");
              await this.request(runId, approval);
            }
            break;
          }
          default:
            if (this.asking)
              this.withdraw("Hermes went on without this answer: it denies an approval nobody answers in time");
            this.pending = [];
        }
      }
      const step = await this.nextStep(sleep(delay, this.req.signal).then(() => ({ tick: true as const })));
      if ("answer" in step) {
        await this.deliver(runId, (this.asking as Asking).approval, step.answer);
        delay = this.timing.pollFirstMs;
        continue;
      }
      delay = Math.min(delay * 2, this.timing.pollMaxMs);
    }
  }

  /** The next thing to act on: `source`'s step, or, while a question is open, its answer. */
  private async nextStep(source: Promise<Step>): Promise<Step> {
    const asking = this.asking;
    const step: Step = asking
      ? await Promise.race([
          source,
          asking.answer.then(
            (answer): Step => ({ answer }),
            (): Step => ({ withdrawn: true }),
          ),
        ])
      : await source;
    if ("withdrawn" in step) {
      if (this.asking === asking) this.asking = undefined;
      // The question ended because the task was canceled or the node is stopping.
      if (this.req.signal.aborted) throw this.req.signal.reason;
    }
    return step;
  }

  /** What one event of the stream means for the task; an outcome when the run is over. */
  private async onEvent(runId: string, e: HermesEvent): Promise<ExecutionOutcome | undefined> {
    const { events } = this.req;
    if (this.unsure && e.event !== "run.completed") this.showReasoning(this.unsure);
    if (this.pending.length > 0 && e.event !== "approval.request" && e.event !== "approval.responded") {
      // The agent is blocked while an approval is pending; any other event means it went on without one.
      this.withdraw("Hermes went on without this answer: it denies an approval nobody answers in time");
      this.pending = [];
    }
    switch (e.event) {
      case "message.delta": {
        let delta = typeof e.delta === "string" ? e.delta : "";
        this.segment += delta;
        // Hermes starts the text after a tool call with a paragraph break ("\n\n"); the answer does not start
        // with blank lines.
        if (this.streamed === "") delta = delta.replace(/^\s+/, "");
        if (delta) {
          events.artifact(
            { artifactId: this.artifactId, name: "answer", parts: [{ text: delta }] },
            { append: this.streamed.length > 0 },
          );
          this.streamed += delta;
        }
        return undefined;
      }
      case "tool.started":
        this.segment = "";
        events.progress(`running ${str(e.tool, "a tool")}${e.preview ? `: ${str(e.preview)}` : ""}`, { hermes: e });
        return undefined;
      case "tool.completed":
        this.segment = "";
        events.progress(
          `${str(e.tool, "a tool")} ${e.error === true ? "failed" : "finished"}${typeof e.duration === "number" ? ` after ${e.duration} s` : ""}`,
          { hermes: e },
        );
        return undefined;
      case "reasoning.available": {
        // Hermes fills this with the visible text of each assistant message (its first 500 characters), not
        // with reasoning: shown as reasoning it would repeat the answer. Text that the message streamed is
        // kept for the answer's metadata; other text (a server that sends real reasoning) is shown.
        const text = reasoningText(e.text);
        if (!text) return undefined;
        if (visible(this.segment).startsWith(text)) this.said.push(e);
        else if (this.segment.trim() === "")
          this.unsure = e; // nothing streamed: run.completed's output tells
        else this.showReasoning(e);
        return undefined;
      }
      case "subagent.start":
      case "subagent.complete":
        events.progress(
          `${e.event === "subagent.start" ? "subagent started" : "subagent finished"}${e.goal ? `: ${clip(str(e.goal), 200)}` : ""}`,
          { hermes: e },
        );
        return undefined;
      case "approval.request": {
        const { event: _e, run_id: _r, timestamp: _t, ...approval } = e;
        this.pending.push(approval as HermesApproval);
        if (!this.asking) await this.request(runId, approval as HermesApproval);
        return undefined;
      }
      case "approval.responded":
        if (this.echoes > 0)
          this.echoes--; // our own answer, come back
        else {
          // Someone answered it on Hermes itself (its own UI, another client): that question is settled.
          if (this.asking) this.withdraw(`the approval was answered on Hermes (${str(e.choice)})`);
          this.pending.shift();
        }
        events.progress(`approval answered: ${str(e.choice)}`, { hermes: e });
        if (!this.asking && this.pending.length > 0) await this.request(runId, this.pending[0]);
        return undefined;
      case "run.completed":
        return this.completed(e.output, e.usage);
      case "run.failed":
        return { state: "TASK_STATE_FAILED", message: `the Hermes run failed: ${str(e.error, "no reason given")}` };
      case "run.cancelled":
        // Never this node's own stop: after a cancel it no longer reads the stream (see ended()).
        return this.stoppedThere(runId);
      default:
        return undefined; // events of newer servers this node does not use (run.steered, ...)
    }
  }

  /** A reasoning.available that is not the answer, as a status update. */
  private showReasoning(e: HermesEvent): void {
    if (this.unsure === e) this.unsure = undefined;
    this.req.events.progress(`thinking: ${clip(reasoningText(e.text), 200)}`, { hermes: e });
  }

  /**
   * Hermes ended the run as cancelled without this node asking: it shut down or restarted (it interrupts every
   * run in flight and sends the same bare run.cancelled a stop gives), or someone stopped the run on Hermes
   * itself. Nobody canceled the task: it failed, and can be sent again.
   */
  private stoppedThere(runId: string): ExecutionOutcome {
    return {
      state: "TASK_STATE_FAILED",
      message: `Hermes at ${this.api.base} stopped run ${runId} without this node asking (Hermes shut down or restarted, or the run was stopped on Hermes itself); send the task again`,
    };
  }

  /** Asks the person about `approval`: the task becomes INPUT_REQUIRED until the answer (or a withdrawal). */
  private async request(runId: string, approval: HermesApproval): Promise<void> {
    await this.req.events.note({ [APPROVAL_KEY]: approval });
    const withdraw = new AbortController();
    const answer = this.req.input({
      text: question(approval),
      metadata: approvalMetadata(runId, approval),
      check: (m) => {
        const r = choiceOf(m, approval);
        return "refused" in r ? r.refused : undefined;
      },
      signal: withdraw.signal,
    });
    this.asking = { approval, answer, withdraw };
  }

  /** Takes back the open question: Hermes no longer waits for it. */
  private withdraw(why: string): void {
    const asking = this.asking;
    if (!asking) return;
    this.asking = undefined;
    asking.withdraw.abort(new Error(why));
    void this.req.events.note({ [APPROVAL_KEY]: null });
  }

  /** Gives the person's answer to Hermes: POST /v1/runs/{id}/approval. */
  private async deliver(runId: string, approval: HermesApproval, answer: Message): Promise<void> {
    this.asking = undefined;
    const r = choiceOf(answer, approval);
    // Checked when the answer arrived; an answer that reached a restarted node was checked by check().
    const choice = "choice" in r ? r.choice : "deny";
    try {
      await this.api.approve(runId, choice, requestIdOf(approval), this.req.signal);
      this.pending.shift();
      this.echoes++;
    } catch (err) {
      if (!(err instanceof HermesHttpError) || err.status !== 409) throw err;
      this.over.add(keyOf(approval));
      this.pending = [];
      this.req.events.progress(
        `the answer "${choice}" came too late: Hermes no longer waited for that approval (${err.code ?? "HTTP 409"}); it denies approvals nobody answers in time, and the run went on`,
        { hermes: { event: "approval.late", choice, code: err.code } },
      );
    }
    await this.req.events.note({ [APPROVAL_KEY]: null });
  }

  /** The run's answer becomes the task's artifact: `output` is the answer alone (deltas may include narration). */
  private completed(output: unknown, usage: unknown): ExecutionOutcome {
    const { events } = this.req;
    const text = typeof output === "string" ? output : "";
    const unsure = this.unsure;
    if (unsure) {
      if (visible(text).startsWith(reasoningText(unsure.text))) this.said.push(unsure);
      else this.showReasoning(unsure);
      this.unsure = undefined;
    }
    // What Hermes said of the answer (its reasoning.available copies) stays with it, for programs.
    const metadata = this.said.length > 0 ? { metadata: { hermes: { "reasoning.available": this.said } } } : {};
    if (text && text !== this.streamed)
      events.artifact(
        { artifactId: this.artifactId, name: "answer", parts: [{ text }], ...metadata },
        { lastChunk: true },
      );
    else if (this.streamed)
      events.artifact(
        { artifactId: this.artifactId, name: "answer", parts: [{ text: "" }], ...metadata },
        { append: true, lastChunk: true },
      );
    const outcome: ExecutionOutcome = { state: "TASK_STATE_COMPLETED" };
    if (!text && !this.streamed) outcome.message = "Hermes finished the run without an answer";
    if (usage && typeof usage === "object") outcome.metadata = { "hermes/usage": usage };
    return outcome;
  }

  private refusedKey(err: HermesHttpError, runId: string | undefined): ExecutionOutcome {
    const key = this.api.auth().authorization
      ? "refused this node's API key"
      : "wants an API key, and this node has none";
    return {
      state: "TASK_STATE_AUTH_REQUIRED",
      message:
        `Hermes at ${this.api.base} ${key} (HTTP ${err.status}${err.code ? ` ${err.code}` : ""}${runId ? `; run ${runId} had started` : ""}). ` +
        "The node's operator must set the key Hermes expects (API_SERVER_KEY there; here the hermes_api_key_file, then SIGHUP, or HERMES_API_KEY and a restart); " +
        "then send any message to this task to run it again, or cancel it.",
    };
  }

  /**
   * After a cancel: asks Hermes to stop the run and waits (bounded: timing.stopWaitMs) until its status is
   * `cancelled` (or any other end), so the cancel is recorded once the run is over there. Returns what became of
   * the run, said after the canceller's reason.
   */
  private async stopRun(runId: string): Promise<string> {
    const giveUpAt = Date.now() + this.timing.stopWaitMs;
    const signal = AbortSignal.timeout(this.timing.stopWaitMs);
    try {
      await this.api.stop(runId, signal);
    } catch (err) {
      // 404: the run is no longer active there (it ended just before, or Hermes restarted).
      if (!(err instanceof HermesHttpError && err.status === 404))
        return `could not ask Hermes at ${this.api.base} to stop run ${runId}: ${(err as Error).message}`;
    }
    let status = "stopping";
    for (let delay = this.timing.pollFirstMs; ; delay = Math.min(delay * 2, this.timing.pollMaxMs)) {
      try {
        status = (await this.api.status(runId, signal)).status;
      } catch (err) {
        if (err instanceof HermesHttpError && err.status === 404) return `Hermes no longer knows run ${runId}`;
        if (signal.aborted) break;
      }
      if (status === "cancelled") return `Hermes stopped run ${runId}`;
      if (TERMINAL_RUN.has(status)) return `run ${runId} had already ended on Hermes (${status})`;
      if (Date.now() + delay > giveUpAt) break;
      await new Promise((r) => setTimeout(r, delay));
    }
    const waited = this.timing.stopWaitMs / 1000;
    return `Hermes is still stopping run ${runId} (its status was ${status} after ${Number.isInteger(waited) ? waited : waited.toFixed(1)} s; it stops once the model call in flight returns)`;
  }

  /** How the execution ends after an error or a stop. */
  private async ended(err: unknown, runId: string | undefined): Promise<ExecutionOutcome> {
    const { signal } = this.req;
    const cause = stopCause(signal);
    // The node is stopping: the run goes on, and the next start of the node re-attaches to it.
    if (cause === "shutdown") return { state: "TASK_STATE_FAILED", message: "interrupted: the node shut down" };
    // Hermes refused the key (its 401 invalid_api_key): a run already started goes on there, and the retry
    // (the next message to the task, see src/tasks/auth-retry.ts) re-attaches to it by its noted id.
    if (err instanceof HermesHttpError && (err.status === 401 || err.status === 403) && !signal.aborted)
      return this.refusedKey(err, runId);
    if (signal.aborted) {
      const stopNote = runId ? await this.stopRun(runId) : undefined;
      return {
        state: "TASK_STATE_CANCELED",
        message: (signal.reason as Error | undefined)?.message ?? "canceled",
        ...(stopNote ? { stopNote } : {}),
      };
    }
    if (runId) await this.api.stop(runId, AbortSignal.timeout(2000)).catch(() => {});
    let message: string;
    if (err instanceof GaveUp) message = err.message;
    else if (err instanceof HermesHttpError) message = `Hermes at ${this.api.base}: ${err.message}`;
    else message = `Hermes at ${this.api.base} is unreachable: ${(err as Error).message}`;
    return { state: "TASK_STATE_FAILED", message };
  }
}

/** Run statuses that are an end (`TERMINAL_STATUSES`; `cancelled` aside, it is what a stop waits for). */
const TERMINAL_RUN = new Set(["completed", "failed", "interrupted"]);

/** The text of a reasoning.available as Hermes derives it from a message: tags stripped, trimmed. */
function reasoningText(v: unknown): string {
  return typeof v === "string" ? v.replace(/<\/?(?:REASONING_SCRATCHPAD|think|reasoning)>/g, "").trim() : "";
}

/** Streamed text as Hermes would put it in a reasoning.available (for telling the two apart). */
function visible(text: string): string {
  return text.replace(/<\/?(?:REASONING_SCRATCHPAD|think|reasoning)>/g, "").trim();
}

/** What tells one approval from another: its request id (newer servers), else what it asks about. */
function keyOf(approval: HermesApproval): string {
  return requestIdOf(approval) ?? JSON.stringify([approval.command ?? "", approval.description ?? ""]);
}

/** The task gave up waiting on Hermes; its message is the whole story. */
class GaveUp extends Error {}

/**
 * The Hermes session of an A2A conversation: the same for every task of one context of one caller, so Hermes
 * keeps the conversation; the caller is part of it, so two peers that pick the same contextId never share one.
 */
export function sessionId(caller: string, contextId: string): string {
  return `a2a-${createHash("sha256").update(`${caller}\0${contextId}`).digest("hex").slice(0, 32)}`;
}

/** The text Hermes gets: the message's text parts, and its data parts as JSON. */
function inputText(message: Message): string {
  const out: string[] = [];
  for (const p of message.parts) {
    if (typeof p.text === "string") out.push(p.text);
    else if (p.data !== undefined) out.push(JSON.stringify(p.data));
  }
  return out.join("\n");
}

function str(v: unknown, fallback = ""): string {
  return typeof v === "string" ? v : v === undefined || v === null ? fallback : JSON.stringify(v);
}

function clip(s: string, n: number): string {
  return s.length > n ? `${s.slice(0, n)}…` : s;
}

/** Resolves after `ms`, or rejects with the signal's reason when it is aborted first. */
function sleep(ms: number, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal.addEventListener("abort", onAbort, { once: true });
  });
}
