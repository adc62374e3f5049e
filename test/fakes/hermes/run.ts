/**
 * A fake Hermes run as the real gateway drives it: the agent side (`_execute_run` / `_run_and_close`) plays the
 * script, the status side copies `_set_run_status`, approvals copy the blocking gateway wait of
 * tools/approval.py (`_await_gateway_decision`, `resolve_gateway_approval`). Sources are named on each part.
 * What the agent loop adds around the script, as the real one does (agent/conversation_loop.py and run_agent.py
 * of 0.18.2 @ 306e2d23, the same in the newer generation):
 * - after each assistant message with text, `reasoning.available {text}` carrying that text (stripped, its first
 *   500 characters): the answer itself, not reasoning (`tool_progress_callback("reasoning.available", ...)`);
 * - after a tool iteration, the next text delta starts with a paragraph break "\n\n" (`_stream_needs_break`);
 * - the session's messages go to the SessionDB (sessions.ts).
 */
import type { HermesEvent } from "./stream";
import { RunQueue } from "./stream";
import {
  branchFor,
  choicesFor,
  defaultUsage,
  type ApprovalOutcome,
  type ApprovalSpec,
  type HermesStep,
} from "./script";
import type { SessionDb } from "./sessions";
import { hex32, monotonicSeconds, nowSeconds, type Generation } from "./wire";

export type RunStatus = Record<string, unknown> & { object: "hermes.run"; run_id: string; status: string };

/** `TERMINAL_STATUSES` (gateway/platforms/api_server_run_idempotency.py). */
export const TERMINAL = new Set(["completed", "failed", "cancelled", "interrupted"]);

/** What the POST /v1/runs that created a run carried, as the server read it. */
export interface RunRequest {
  body: Record<string, unknown>;
  headers: Record<string, string>;
  /** `input` as sent: a string or a list of {role, content}. */
  input: unknown;
  /** The user turn: `input`, or the last item's content. */
  userMessage: unknown;
  /**
   * The earlier turns the agent got: `conversation_history`, else all but the last `input` item
   * (`_resolve_conversation_history`), else (newer only) the session's messages loaded by session_id.
   */
  history: { role: string; content: string }[];
  /** Where `history` came from. */
  historyFrom: "body" | "input" | "session" | "none";
  instructions: unknown;
  sessionId: unknown;
  model: unknown;
  /** The Idempotency-Key the newer server honoured (the older one ignores it). */
  idempotencyKey?: string;
}

export interface ApprovalAnswer {
  choice: string;
  requestId?: string;
  all: boolean;
  /** How many pending approvals it resolved. */
  resolved: number;
  body: unknown;
}

/** One gateway process: everything it keeps in memory, lost when it restarts. */
export class GatewayProcess {
  alive = true;
  draining = false;
  /** `_run_statuses`. */
  readonly statuses = new Map<string, RunStatus>();
  /** `_run_streams` (+ `_run_streams_created`): the queue a GET /events may still subscribe to. */
  readonly streams = new Map<string, RunQueue>();
  readonly streamCreated = new Map<string, number>();
  /** `_run_stream_subscribers` (newer; the transport sweep spares these). */
  readonly subscribers = new Set<string>();
  /** `_active_run_tasks` / `_active_run_agents`: runs whose agent still works. */
  readonly live = new Map<string, FakeRun>();
  /** `_run_approval_sessions`. */
  readonly approvalSessions = new Set<string>();
  /** Every run this process admitted. */
  readonly runs = new Map<string, FakeRun>();
}

/** What the engine needs from the fake around it. */
export interface RunContext {
  generation: Generation;
  approvalTimeoutMs: number;
  holdStops: boolean;
  /** Durable run status of newer idempotent runs (the runs_idempotency.db row), by run id. */
  durable: Map<string, { status: RunStatus }>;
  /** Releases given before any run reached the gate (label -> count). */
  earlyReleases: Map<string, number>;
  /** The SessionDB (survives restarts). */
  sessions: SessionDb;
  /** Something changed: hooks re-check. */
  changed(): void;
}

interface PendingApproval {
  event: HermesEvent;
  requestId?: string;
  settle(outcome: ApprovalOutcome): void;
  timer?: ReturnType<typeof setTimeout>;
}

const turn = () => new Promise<void>((r) => setImmediate(r));

/** One run. Tests read its public fields; the engine below drives it. */
export class FakeRun {
  /** Every event the server put out for the run, in order, delivered or not (older: no subagent events). */
  readonly emitted: HermesEvent[] = [];
  /** Events no queue took (the reader had left and the producer checks the registration). */
  readonly dropped: HermesEvent[] = [];
  /** Events written to a connected reader. */
  readonly read: HermesEvent[] = [];
  /** Events a reader took off the queue after its client had gone: lost. */
  readonly lost: HermesEvent[] = [];
  /** The approval.request events, in order. */
  readonly approvalRequests: HermesEvent[] = [];
  /** POST /approval answers that resolved something. */
  readonly answers: ApprovalAnswer[] = [];
  /** approval.request events the timeout denied. */
  readonly expired: HermesEvent[] = [];
  readonly gatesReached: string[] = [];
  outcome?: "completed" | "failed" | "cancelled";
  /** The gateway process died while the run was still working (it never got an outcome). */
  killedByRestart = false;
  streamsOpened = 0;
  clientsLeft = 0;
  queuesDropped = 0;
  stopRequests = 0;

  /** The run's own queue (the handler's local `q`; registered in `proc.streams` until a reader drops it). */
  readonly queue = new RunQueue();
  readonly pending: PendingApproval[] = [];
  waitingAt?: string;
  stopRequested = false;
  done = false;
  private cursor = 0;
  private textSinceTool = "";
  /** The assistant message being written (its text deltas as the model gave them). */
  private segment = "";
  /** A tool iteration ran: the next text delta starts with "\n\n". */
  private needsBreak = false;
  /** When the last tool.started went out (performance.now()). */
  private toolStartedAt = 0;
  private readonly releases = new Map<string, number>();
  private wakeWait: () => void = () => {};
  private stopRelease?: () => void;

  constructor(
    readonly id: string,
    readonly request: RunRequest,
    readonly proc: GatewayProcess,
    private readonly steps: HermesStep[],
    private readonly ctx: RunContext,
  ) {}

  /** The session the run writes to (session_id, or the run id). */
  get sessionId(): string {
    return typeof this.request.sessionId === "string" && this.request.sessionId !== ""
      ? this.request.sessionId
      : this.id;
  }

  /** The agent is still at work in a living process. */
  get active(): boolean {
    return this.proc.alive && !this.done;
  }

  // ---- status: `_set_run_status` -------------------------------------------------------------------

  setStatus(status: string, fields: Record<string, unknown> = {}): void {
    if (!this.proc.alive) return;
    const now = nowSeconds();
    const cur = (this.proc.statuses.get(this.id) ?? {}) as RunStatus;
    const previous = cur.status;
    Object.assign(cur, { object: "hermes.run", run_id: this.id, status, updated_at: now });
    const { created_at, ...rest } = fields;
    if (!("created_at" in cur)) cur.created_at = created_at ?? now;
    Object.assign(cur, rest);
    if (this.ctx.generation === "newer" && status !== "waiting_for_approval") delete cur.approval;
    this.proc.statuses.set(this.id, cur);
    // Newer: an idempotent run's status is persisted on a status change, a terminal status, or these fields.
    const durable = this.ctx.durable.get(this.id);
    const persist =
      status !== previous ||
      TERMINAL.has(status) ||
      ["output", "error", "usage", "session_id"].some((k) => k in fields);
    if (durable && persist) durable.status = structuredClone(cur);
    this.ctx.changed();
  }

  // ---- events: where each producer puts them ---------------------------------------------------------

  /**
   * Queues an event (or the end sentinel) the way its producer does. Some producers hold the run's own queue
   * (it still receives after a reader dropped the registration, unreachable); others look the run up in
   * `_run_streams` (nothing registered: dropped). In both generations (0.18.2 included) only approval.request
   * uses the local `q` (`_approval_notify`); message.delta (`_text_cb`), run.* and the sentinel
   * (`_put_event_if_active` / `put_event`), tool progress (`_push`) and approval.responded check the
   * registration. (Older servers before 0.18.2 put deltas, run.* and the sentinel on the local `q` too.)
   */
  deliver(item: HermesEvent | null, producer: "text" | "progress" | "approval" | "control" | "terminal"): void {
    if (!this.proc.alive) return;
    if (item) this.emitted.push(item);
    const local = ["approval"];
    const registered = this.proc.streams.get(this.id);
    if (local.includes(producer)) this.queue.put(item);
    else if (registered) registered.put(item);
    else if (item) this.dropped.push(item);
    this.ctx.changed();
  }

  private event(name: string, fields: Record<string, unknown> = {}): HermesEvent {
    return { event: name, run_id: this.id, timestamp: nowSeconds(), ...fields };
  }

  // ---- the agent: `_execute_run` (newer) / `_run_and_close` (older) -----------------------------------

  async drive(): Promise<void> {
    await turn(); // asyncio.create_task: the 202 answer goes out first
    if (!this.active) return;
    this.setStatus("running");
    this.ctx.sessions.append(this.sessionId, { role: "user", content: String(this.request.userMessage ?? "") });
    for (;;) {
      if (!this.active) return;
      if (this.stopRequested) return this.settleStop();
      const step = this.steps[this.cursor++];
      if (!step) return this.complete(this.completion());
      switch (step.kind) {
        case "emit":
          this.emit(step);
          await turn();
          break;
        case "gate":
          await this.gate(step.label);
          break;
        case "sleep":
          await this.sleep(step.ms);
          break;
        case "approval": {
          const outcome = await this.ask(step.specs);
          this.textSinceTool = "";
          this.needsBreak = true;
          this.steps.splice(this.cursor, 0, ...branchFor(step.branches, outcome));
          break;
        }
        case "complete":
          return this.complete(this.completion(step.output, step.usage));
        case "fail":
          return this.finish("failed", { error: step.error });
      }
    }
  }

  private completion(output?: string, usage?: unknown): Record<string, unknown> {
    const out = output ?? this.textSinceTool;
    return { output: out, usage: usage ?? defaultUsage(String(this.request.userMessage ?? ""), out) };
  }

  /** The final answer: its message ends (reasoning.available, the SessionDB row), then run.completed. */
  private complete(fields: Record<string, unknown>): void {
    const output = String(fields.output ?? "");
    this.endMessage(this.segment.trim() ? this.segment : output);
    this.ctx.sessions.append(this.sessionId, { role: "assistant", content: output, finish_reason: "stop" });
    this.finish("completed", fields);
  }

  /**
   * An assistant message with text ends: `reasoning.available` with that text, as the agent loop emits it for
   * every assistant message with content (the tag strip, the strip, the first 500 characters).
   */
  private endMessage(text: string): void {
    this.segment = "";
    const think = text.replace(/<\/?(?:REASONING_SCRATCHPAD|think|reasoning)>/g, "").trim();
    if (!think) return;
    this.setStatus(String(this.proc.statuses.get(this.id)?.status ?? "running"), { last_event: "reasoning.available" });
    this.deliver(this.event("reasoning.available", { text: think.slice(0, 500) }), "progress");
  }

  private emit(step: Extract<HermesStep, { kind: "emit" }>): void {
    if (step.channel === "text") {
      const raw = String(step.fields.delta ?? "");
      let delta = raw;
      if (this.needsBreak && raw.trim() !== "") {
        delta = `\n\n${raw}`;
        this.needsBreak = false;
      }
      this.textSinceTool += raw;
      this.segment += raw;
      return this.deliver(this.event(step.event, { ...step.fields, delta }), "text");
    }
    if (step.event === "tool.started") {
      const narration = this.segment;
      this.endMessage(narration);
      this.ctx.sessions.append(this.sessionId, {
        role: "assistant",
        content: narration.trim() || null,
        tool_calls: [
          {
            id: `call_${hex32().slice(0, 12)}`,
            type: "function",
            function: { name: String(step.fields.tool ?? ""), arguments: "{}" },
          },
        ],
        finish_reason: "tool_calls",
      });
    }
    let fields = step.fields;
    if (step.event === "tool.started") this.toolStartedAt = performance.now();
    if (step.event === "tool.completed") {
      if (step.measured) fields = { ...fields, duration: Math.round(performance.now() - this.toolStartedAt) / 1000 };
      this.needsBreak = true;
      this.ctx.sessions.append(this.sessionId, {
        role: "tool",
        content: step.fields.error === true ? "error" : "done",
        tool_name: String(step.fields.tool ?? ""),
      });
    }
    const ev = this.event(step.event, fields);
    this.textSinceTool = "";
    // The older tool_progress callback forwards tool.* and reasoning only; subagent events go nowhere.
    if (step.newerOnly && this.ctx.generation === "older") return;
    // `_push`: the status keeps its value, last_event moves (even when no queue takes the event).
    this.setStatus(String(this.proc.statuses.get(this.id)?.status ?? "running"), { last_event: step.event });
    this.deliver(ev, "progress");
  }

  /** Terminal status, then `run.<status>`, then the sentinel; the run's control state is retired. */
  finish(status: "completed" | "failed" | "cancelled", fields: Record<string, unknown> = {}): void {
    if (this.done || !this.proc.alive) return;
    this.done = true;
    this.outcome = status;
    this.wakeWait();
    // unregister_gateway_notify wakes every blocked approval; nobody answered them.
    for (const p of this.pending.splice(0)) {
      clearTimeout(p.timer);
      p.settle("interrupted");
    }
    this.setStatus(status, { ...fields, last_event: `run.${status}` });
    this.deliver(this.event(`run.${status}`, fields), "terminal");
    this.deliver(null, "terminal");
    this.proc.live.delete(this.id);
    this.proc.approvalSessions.delete(this.id);
    this.ctx.changed();
  }

  // ---- gates and slow model calls --------------------------------------------------------------------

  /** A model call that takes `ms`: a stop (or the process dying) cuts it short. */
  private async sleep(ms: number): Promise<void> {
    if (this.stopRequested) return;
    await new Promise<void>((resolve) => {
      const t = setTimeout(resolve, ms);
      this.wakeWait = () => {
        clearTimeout(t);
        resolve();
      };
    });
  }

  private async gate(label: string): Promise<void> {
    this.gatesReached.push(label);
    const own = this.releases.get(label) ?? 0;
    const early = this.ctx.earlyReleases.get(label) ?? 0;
    if (own > 0) this.releases.set(label, own - 1);
    else if (early > 0) this.ctx.earlyReleases.set(label, early - 1);
    else {
      this.waitingAt = label;
      this.ctx.changed();
      await new Promise<void>((r) => (this.wakeWait = r));
      this.waitingAt = undefined;
    }
    this.ctx.changed();
  }

  /** Lets the run past `label`: now if it waits there, else when it gets there. */
  release(label: string): void {
    if (this.waitingAt === label) this.wakeWait();
    else this.releases.set(label, (this.releases.get(label) ?? 0) + 1);
  }

  // ---- approvals: tools/approval.py -----------------------------------------------------------------

  private ask(specs: ApprovalSpec[]): Promise<ApprovalOutcome> {
    const settled = specs.map((spec) => new Promise<ApprovalOutcome>((resolve) => this.requestApproval(spec, resolve)));
    this.wakeWait = () => {
      // A stop interrupts the wait (`_poll_event` -> "interrupted"): the entries leave the queue.
      for (const p of this.pending.splice(0)) {
        clearTimeout(p.timer);
        p.settle("interrupted");
      }
    };
    return Promise.all(settled).then((outcomes) => outcomes[0]!);
  }

  private requestApproval(spec: ApprovalSpec, settle: (o: ApprovalOutcome) => void): void {
    const patternKey = spec.patternKey ?? spec.description;
    const base: Record<string, unknown> = {
      command: spec.command,
      pattern_key: patternKey,
      pattern_keys: spec.patternKeys ?? [patternKey],
      description: spec.description,
    };
    let requestId: string | undefined;
    if (this.ctx.generation === "older") {
      // 0.18.2: `approval_data` has allow_permanent (and smart_denied when set), no allow_session, no ids.
      base.allow_permanent = spec.allowPermanent !== false && !spec.smartDenied;
      if (spec.smartDenied) base.smart_denied = true;
    } else {
      // `_human_decision` data, then `_ApprovalEntry` adds approval_id = request_id and a MONOTONIC expires_at.
      base.allow_permanent = spec.allowPermanent !== false && !spec.smartDenied;
      base.allow_session = spec.allowSession !== false && !spec.smartDenied;
      if (spec.smartDenied) base.smart_denied = true;
      requestId = hex32();
      Object.assign(base, {
        approval_id: requestId,
        request_id: requestId,
        expires_at: monotonicSeconds() + this.ctx.approvalTimeoutMs / 1000,
      });
    }
    const choices = choicesFor(spec, this.ctx.generation);
    const ev: HermesEvent = { ...base, ...this.event("approval.request"), choices };
    const entry: PendingApproval = { event: ev, requestId, settle };
    this.pending.push(entry);
    entry.timer = setTimeout(() => this.expire(entry), this.ctx.approvalTimeoutMs);
    this.setStatus("waiting_for_approval", {
      last_event: "approval.request",
      ...(this.ctx.generation === "newer" ? { approval: structuredClone(ev) } : {}),
    });
    this.approvalRequests.push(ev);
    this.deliver(ev, "approval");
  }

  /**
   * The approvals.timeout elapsed for the oldest pending approval (or `entry`): it leaves the queue and the
   * agent sees "BLOCKED: Command timed out without user response". No event, no status change: the status
   * stays `waiting_for_approval` until the next status change.
   */
  expire(entry: PendingApproval | undefined = this.pending[0]): boolean {
    if (!entry || !this.pending.includes(entry) || !this.proc.alive) return false;
    this.pending.splice(this.pending.indexOf(entry), 1);
    clearTimeout(entry.timer);
    this.expired.push(entry.event);
    entry.settle("timeout");
    this.ctx.changed();
    return true;
  }

  /** `resolve_gateway_approval(session_key, choice, resolve_all, request_id)`: how many it resolved. */
  resolve(choice: ApprovalOutcome, opts: { all: boolean; requestId?: string }): number {
    if (this.pending.length === 0) return 0;
    let targets: PendingApproval[];
    if (opts.requestId) targets = this.pending.filter((p) => p.requestId === opts.requestId);
    else targets = opts.all ? [...this.pending] : [this.pending[0]!];
    for (const t of targets) {
      this.pending.splice(this.pending.indexOf(t), 1);
      clearTimeout(t.timer);
      t.settle(choice);
    }
    return targets.length;
  }

  // ---- stop -----------------------------------------------------------------------------------------

  /**
   * `_handle_stop_run`: status `stopping`, the agent is interrupted and settles as cancelled once it reaches a
   * safe point (`holdStops`: when the test says; 0.18.2 takes about 2 s, the model call in flight).
   */
  requestStop(): void {
    this.stopRequests++;
    this.setStatus("stopping", { last_event: "run.stopping" });
    this.stopRequested = true;
    this.wakeWait();
  }

  private async settleStop(): Promise<void> {
    if (this.ctx.holdStops) {
      await new Promise<void>((r) => (this.stopRelease = r));
      if (!this.active) return;
    }
    this.finish("cancelled");
  }

  /** With `holdStops`: the stopped agent finally exits. */
  finishStop(): void {
    this.stopRelease?.();
  }

  /**
   * The gateway shuts down (SIGTERM) with the run in flight: its asyncio task is cancelled (`except
   * asyncio.CancelledError`), the status becomes cancelled and the stream gets a bare `run.cancelled`, the same
   * event a stop gives, then the end.
   */
  cancelByShutdown(): void {
    if (!this.active) return;
    this.finish("cancelled");
  }

  /** The process died under the run: the agent is gone, nothing more happens (no outcome, no event). */
  kill(): void {
    if (!this.done) this.killedByRestart = true;
    const pending = this.pending.splice(0);
    for (const p of pending) clearTimeout(p.timer);
    this.queue.kill();
    this.waitingAt = undefined;
    for (const p of pending) p.settle("interrupted");
    this.wakeWait();
    this.stopRelease?.();
  }
}
