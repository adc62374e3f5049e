import type { ReplicaMessages } from "./replica-messages";
import type { AgentExecutor, ExecutionEvents, ExecutionOutcome } from "../executors/executor";
import type { Message, StreamResponse, Task, TaskState, TaskStatus } from "../protocol/types";
import { isInterrupted } from "../protocol/types";
import { Admission } from "./admission";
import { accumulate, agentMessage } from "./artifacts";
import { authRetryOf } from "./auth-retry";
import { now } from "../clock";
import type { EventStream } from "./event-stream";
import { abortOf, causeOf, type Job, newJob, stop } from "./job";
import { LeaseKeeper } from "./lease-keeper";
import type { TaskLeases } from "./leases";
import type { TaskLifecycle } from "./lifecycle";
import { notStored, OutcomeWriter, stoppedOutcome } from "./outcome-writer";
import { OutputLimits } from "./output-limits";
import { EventPublisher, type EventListener } from "./publisher";
import { Questions } from "./questions";
import { TaskRefusal } from "./refusal";
import type { TaskStore } from "./task-store";

export type { EventListener } from "./publisher";

/**
 * The task's node state (shown in its metadata too): the A2A extensions activated for the message the task's
 * execution runs (see ExecutionRequest.extensions).
 */
export const EXTENSIONS_KEY = "a2a-node/extensions";

/** How a task is started (see TaskRunner.start). */
export interface StartOptions {
  /** The number of its last stored event (0 for a new task). */
  lastSeq?: number;
  /** It continues a task a previous process started (restart recovery). */
  resumed?: boolean;
  /**
   * The commit of the write that recorded it (the task's creation, the follow-up message), if not settled yet;
   * if it fails, the execution stops and the task does not end COMPLETED.
   */
  committed?: Promise<void>;
  /** The A2A extensions activated for the message it runs (undefined: those its state names). */
  extensions?: string[];
  /** Its node state as stored (see TaskChange.state): what earlier executions noted. */
  state?: Record<string, unknown>;
}

export interface TaskRunnerOptions {
  /** With a store several processes share: what they tell each other (cancels, answers, commits). */
  replicas?: ReplicaMessages;
  /** Tasks executing at once. */
  maxConcurrent: number;
  /** Tasks allowed to wait (SUBMITTED) for a slot; beyond this new tasks are refused. */
  maxQueued: number;
  /**
   * The part of `maxConcurrent` and of `maxQueued` one caller may hold (0-1, default 1: no limit), so one peer's
   * stuck tasks cannot lock every other peer out of the node.
   */
  callerShare?: number;
  /** Earlier messages of the context handed to the executor. */
  historyMessages: number;
  /** A task still running after this long is stopped and ends FAILED (default: none). */
  deadlineMs?: number;
  /** Artifact text beyond this many bytes is cut, the executor stopped, and the task marked truncated. */
  outputCapBytes?: number;
  /**
   * Bytes a task's artifacts may hold, every part and chunk counted (see partBytes): output past it is not
   * kept, the executor is stopped and the task ends FAILED saying so.
   */
  maxArtifactBytes?: number;
  /**
   * Messages a task's history may hold. A question that would leave no room for its answer and the task's
   * final message ends the task FAILED instead (callers' messages are checked by the request handler).
   */
  maxTaskMessages?: number;
  /** Parts an agent's reply may have; a reply with more ends the task FAILED. */
  maxMessageParts?: number;
  /**
   * Bytes a task may hold, its messages and artifacts counted as partBytes counts them (max_task_bytes): an
   * agent's question, artifact or outcome past it ends the task FAILED (callers' messages are checked by the
   * request handler).
   */
  maxTaskBytes?: number;
  /** Told when tasks are taken, wait for input, and end (the daemon's task log lines and metrics). */
  lifecycle?: TaskLifecycle;
  /**
   * For a store other processes share: the leases by which this process runs its tasks (see TaskLeases and
   * keepLeases). Without them every unfinished task is this process's to recover.
   */
  leases?: TaskLeases;
}

/**
 * Owns the life of running tasks: a bounded number execute at once, the rest wait, served fairly across the
 * callers that sent them. Everything that happens to a task is a numbered event: stored with its task, and
 * handed to live subscribers only once committed, so what a subscriber saw is always what a reconnecting one
 * can replay. The executor's outcome alone decides a task's final state, written once, here; no HTTP timer ever
 * touches a task. An execution may also stop half-way to ask a question (input()): the task is then
 * INPUT_REQUIRED while the execution waits, and the next message for the task is its answer.
 *
 * A task the store could not keep whole (one of its writes failed: disk full, I/O error, a lost database, data
 * that cannot be serialised) is stopped and never ends COMPLETED: it is recorded FAILED saying so, its events
 * continuing from the last stored one. If even that cannot be stored (the database does not take writes), its
 * callers are refused (not-stored) and the task is left as stored, never held here: with leases, its lease is let
 * go so that a process claims it and applies the restart policy; alone, this process does that itself once the
 * store takes writes again (see recoverUnstored). Until then the task counts in unstoredTasks() (readiness).
 */
export class TaskRunner {
  private readonly jobs = new Map<string, Job>();
  private readonly admission: Admission;
  private readonly events: EventPublisher;
  private readonly limits: OutputLimits;
  private readonly keeper: LeaseKeeper;
  private readonly outcomes: OutcomeWriter;
  private readonly questions: Questions;

  constructor(
    private readonly store: TaskStore,
    private readonly executor: AgentExecutor,
    private readonly options: TaskRunnerOptions,
  ) {
    this.admission = new Admission(options);
    this.events = new EventPublisher(store);
    this.limits = new OutputLimits(options);
    this.keeper = new LeaseKeeper(store, executor, options.leases, {
      job: (id) => this.jobs.get(id),
      accepting: () => this.admission.accepting,
      start: (task, message, owner, startOptions) => void this.start(task, message, owner, startOptions),
    });
    const forget = (job: Job) => void this.jobs.delete(job.task.id);
    const emit = (job: Job, response: StreamResponse, rowUpdated?: boolean) => this.emit(job, response, rowUpdated);
    this.outcomes = new OutcomeWriter(store, this.events, this.keeper, executor.kind, options.lifecycle, {
      emit,
      forget,
    });
    this.questions = new Questions(store, this.limits, options.lifecycle, {
      job: (id) => this.jobs.get(id),
      track: (job, write) => this.track(job, write),
      emit,
      acquire: (job) => this.admission.acquire(job),
      release: (job) => this.release(job),
      setWorking: (job, text) => this.setWorking(job, text),
    });
    // Another process was asked to cancel a task: this one does, if it runs it.
    options.replicas?.onCancelRequest((taskId, reason) => void this.cancel(taskId, reason)?.catch(() => {}));
  }

  get executorKind(): string {
    return this.executor.kind;
  }

  /** Tasks executing now, waiting for a slot, and waiting for an answer (held here without a slot). */
  load(): { running: number; queued: number; waitingForInput: number } {
    let waitingForInput = 0;
    for (const job of this.jobs.values()) if (job.waiting) waitingForInput++;
    return { running: this.admission.runningCount, queued: this.admission.queue.size, waitingForInput };
  }

  /**
   * Tasks whose writes could not be stored, not even their failure, waiting for the store to take writes again
   * (see LeaseKeeper); `reason` is the latest failure. /health/ready is not ready while there are any.
   */
  unstoredTasks(): { count: number; reason?: string } {
    return this.keeper.unstoredTasks();
  }

  /** Registers the one listener of committed events (the push dispatcher). */
  onEvent(listener: EventListener): void {
    this.events.listener = listener;
  }

  /**
   * Refuses a message the executor cannot take, before anything is recorded for it. `task`: the task a
   * message continues when no execution here waits for it (see AgentExecutor.check).
   */
  check(message: Message, task?: { state: Record<string, unknown> }): void {
    const refusal = this.executor.check?.(message, task);
    if (refusal) throw new TaskRefusal(refusal.kind, refusal.message);
  }

  /** Refuses (busy, before anything is committed) when the node cannot take another task from `caller`. */
  assertCapacity(caller: string): void {
    this.admission.assertCapacity(caller);
  }

  /**
   * Runs (or queues) a task already recorded as SUBMITTED (or interrupted, for a follow-up message); see
   * StartOptions. Resolves when the task next settles.
   */
  start(task: Task, message: Message, caller: string, options: StartOptions = {}): Promise<Task> {
    const { lastSeq = 0, resumed = false, committed } = options;
    const job = newJob(task, message, caller, lastSeq, resumed, options.state ?? {});
    job.extensions = options.extensions;
    this.events.adopt(job);
    this.jobs.set(task.id, job);
    this.options.lifecycle?.accepted(task, caller, resumed ? "resumed" : lastSeq > 0 ? "continued" : "new");
    if (committed) this.track(job, committed);
    // Taken first: an execution that asks a question at once starts the next turn before run() returns.
    const settled = job.turn.promise;
    if (this.admission.hasSlotFor(caller)) void this.run(job);
    else {
      this.admission.queue.push(job);
      // A message that continues a task (an answer, a retry) takes it out of its interrupted state now, even
      // while it waits for a slot: INPUT_REQUIRED would read as still asking.
      if (lastSeq > 0 && !resumed && isInterrupted(task.status.state)) this.setWorking(job);
    }
    return settled;
  }

  /** The promise of a task's next settled state, if this runner is working on it. */
  settledOf(taskId: string): Promise<Task> | undefined {
    return this.jobs.get(taskId)?.turn.promise;
  }

  /** The Message an executor answered a settled task with (SendMessage returns it instead of the Task). */
  replyOf(task: Task): Message | undefined {
    return this.outcomes.replyOf(task);
  }

  /** Whether an execution here waits for the next message of this task (see Questions); `caller`: from that caller. */
  isWaitingForInput(taskId: string, caller?: string): boolean {
    const job = this.jobs.get(taskId);
    return job?.waiting !== undefined && (caller === undefined || job.caller === caller);
  }

  /**
   * Why the execution of this task stopped waiting for input, if it did and still runs: a message meant as an
   * answer that arrives after that hears it.
   */
  withdrawnQuestion(taskId: string): string | undefined {
    return this.jobs.get(taskId)?.withdrawn;
  }

  /** Gives `message` to the execution waiting for this task's next message (see Questions.answer). */
  answer(
    taskId: string,
    message: Message,
  ): { task: Task; committed: Promise<void>; settled: Promise<Task>; lastSeq: number } {
    return this.questions.answer(taskId, message);
  }

  /**
   * Adds a subscriber to a task this runner is working on; it receives every event committed from now on.
   * Returns false if the task is not running here (it is settled and nothing executes it).
   */
  subscribe(taskId: string, caller: string, stream: EventStream): boolean {
    const job = this.jobs.get(taskId);
    if (!job || job.caller !== caller) return false;
    job.subscribers.add(stream);
    // Subscribing to a task that waits for input means following it through the answer to its end.
    if (job.waiting) job.untilTerminal.add(stream);
    return true;
  }

  /** Keeps a subscriber of a task that waits for input until the task runs again and ends. */
  park(taskId: string, stream: EventStream): void {
    this.events.park(taskId, stream);
  }

  unsubscribe(taskId: string, stream: EventStream): void {
    this.events.unsubscribe(this.jobs.get(taskId), taskId, stream);
  }

  /** Stops a running, waiting or queued task; resolves with its final (CANCELED) state, or undefined if not ours. */
  cancel(taskId: string, reason: string): Promise<Task> | undefined {
    const job = this.jobs.get(taskId);
    if (!job) return undefined;
    job.cancelReason = reason;
    if (this.admission.queue.remove(job))
      void this.outcomes.record(job, { state: "TASK_STATE_CANCELED", message: reason });
    else stop(job, "canceled", reason);
    return job.done.promise;
  }

  /**
   * Cancels a task nothing executes here (one interrupted while it waited for input): records CANCELED and its
   * event. Resolves once committed. `peer`: the task's owner, for the lifecycle's watchers.
   */
  async cancelIdle(task: Task, reason: string, peer: string): Promise<void> {
    return this.endIdle(task, "TASK_STATE_CANCELED", reason, peer);
  }

  /**
   * Ends a task nothing executes here in `state` (CANCELED, or FAILED for one that could not be started after
   * it was recorded): records the state, its message and its event. Resolves once committed.
   */
  async endIdle(task: Task, state: TaskState, reason: string, peer: string): Promise<void> {
    const status: TaskStatus = { state, timestamp: now(), message: agentMessage(task.id, task.contextId, reason) };
    const seq = (await this.store.lastEventSeq(task.id)) + 1;
    const ended = { statusUpdate: { taskId: task.id, contextId: task.contextId, status } };
    const stored = this.store.record(task.id, {
      status,
      history: [status.message!],
      events: { firstSeq: seq, items: [ended] },
      rowSeq: seq,
    });
    // Nothing ran it in this process: no time of its own to report, only that it ended.
    void stored.then(
      () => this.options.lifecycle?.finished(task, peer, state, 0, 0),
      () => {},
    );
    return stored;
  }

  /**
   * Picks up what the last run of the node left unfinished (see recoverUnfinished); with leases, only the
   * tasks no live process holds, claimed for this one.
   */
  recover(): Promise<{ resumed: number; failed: number }> {
    return this.keeper.recover();
  }

  /**
   * Holds the task for this process before it runs here (a follow-up message): false when another live
   * process holds it, which must then be the one to run it. Always true without leases.
   */
  hold(taskId: string): Promise<boolean> {
    return this.keeper.hold(taskId);
  }

  /** Lets go of a task held for a moment (see hold) that this process did not run after all. */
  letGo(taskId: string): void {
    this.keeper.release(taskId);
  }

  /** With leases, how long they last: a process that holds a task and is alive answers within it. */
  /** What the processes sharing the store tell each other (see ReplicaMessages); none for a process alone. */
  get replicas(): ReplicaMessages | undefined {
    return this.options.replicas;
  }

  get leaseMs(): number | undefined {
    return this.keeper.ttlMs;
  }

  /** With leases: keeps this process's tasks, and takes up those of processes that died (see LeaseKeeper.keep). */
  keepLeases(onError: (err: unknown) => void): () => void {
    return this.keeper.keep(onError);
  }

  /**
   * Stops taking tasks, gives running ones `graceMs` to finish, then stops the rest; each ends in a recorded
   * state (queued and stopped tasks FAILED, saying the node stopped), except where the next start of the node
   * takes over: a task waiting for input stays INPUT_REQUIRED (its answer starts it again), and one whose
   * executor re-attaches to remote work stays as stored (the restart re-attaches to it).
   */
  async shutdown(graceMs: number): Promise<void> {
    this.admission.accepting = false;
    for (const job of this.admission.queue.drain()) {
      // With leases another process starts it (see leftForRestart); alone, it ends here.
      if (this.options.leases && this.leftForRestart(job)) this.detach(job);
      else
        void this.outcomes.record(job, {
          state: "TASK_STATE_FAILED",
          message: "interrupted: the node shut down before this task started",
        });
    }
    const pending = [...this.jobs.values()].filter((j) => !j.waiting).map((j) => j.done.promise);
    if (pending.length > 0) {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const grace = new Promise<void>((r) => (timer = setTimeout(r, graceMs)));
      await Promise.race([Promise.allSettled(pending), grace]);
      clearTimeout(timer);
    }
    for (const job of this.jobs.values()) stop(job, "shutdown", "node shutting down");
    await Promise.allSettled([...this.jobs.values()].map((j) => j.done.promise));
    // Unstored tasks stay as stored: the next start (or, with leases, another process) takes them up.
    this.keeper.stop();
  }

  /** Gives back a job's slot and starts whoever may take it. */
  private release(job: Job): void {
    this.admission.release(job, (next) => void this.run(next));
  }

  private setWorking(job: Job, text?: string): void {
    if (job.lost !== undefined) return; // nothing more of this execution is stored (see track)
    const { task } = job;
    const working: TaskStatus = { state: "TASK_STATE_WORKING", timestamp: now() };
    if (text) working.message = agentMessage(task.id, task.contextId, text);
    task.status = working;
    // Not awaited: it commits with the next group, and if the task finishes first the writes merge.
    void this.track(job, this.store.record(task.id, { status: working }));
    this.emit(job, { statusUpdate: { taskId: task.id, contextId: task.contextId, status: working } }, true);
  }

  private async run(job: Job): Promise<void> {
    this.admission.acquire(job);
    const { task } = job;
    try {
      this.setWorking(job);
      let outcome: ExecutionOutcome;
      const deadline = this.options.deadlineMs
        ? setTimeout(() => {
            job.stopped = "deadline";
            stop(job, "deadline", "deadline");
          }, this.options.deadlineMs)
        : undefined;
      const executing = performance.now();
      // A task whose last execution ended AUTH_REQUIRED runs that execution's message again.
      const retry = authRetryOf(task, job.state);
      const message = retry?.message ?? job.message;
      job.ran = message;
      try {
        const history = async () =>
          (
            await this.store.contextHistory(
              task.contextId,
              job.caller,
              this.options.historyMessages + 1 + (retry?.skip.size ?? 0),
            )
          ).filter((m) => m.messageId !== message.messageId && !retry?.skip.has(m.messageId));
        outcome = await this.executor.execute({
          taskId: task.id,
          contextId: task.contextId,
          message,
          history,
          caller: job.caller,
          get signal() {
            return abortOf(job).signal;
          },
          events: this.eventsFor(job),
          metadata: { ...task.metadata },
          state: { ...job.state },
          // A resumed execution (after a restart) has what the task recorded.
          extensions: job.extensions ?? storedExtensions(job.state),
          resumed: job.resumed,
          input: (request) => this.questions.ask(job, request),
        });
      } catch (err) {
        outcome = {
          state: "TASK_STATE_FAILED",
          message: `executor ${this.executor.kind} failed: ${(err as Error).message}`,
        };
      } finally {
        clearTimeout(deadline);
        job.waiting?.detach();
        job.waiting = undefined;
        job.executorMs += performance.now() - executing;
      }
      const cause = causeOf(job);
      const stopped = stoppedOutcome(job, cause, outcome, {
        outputCapBytes: this.limits.outputCapBytes,
        deadlineMs: this.options.deadlineMs,
      });
      if (stopped) outcome = stopped;
      else {
        // Stopped by the node's shutdown.
        if (this.leftForRestart(job)) return this.detach(job);
        outcome = {
          state: "TASK_STATE_FAILED",
          message: "interrupted: the node shut down while this task was running",
        };
      }
      outcome = this.limits.capOutcome(job, outcome);
      // The node's own outcomes (a limit, the deadline, a cancel) are recorded as they are: only what the
      // executor made is held to the limits.
      const own = job.stopped === undefined && cause !== "canceled" && cause !== "shutdown";
      const over = own ? this.limits.outcomeOverLimit(job, outcome) : undefined;
      if (over) outcome = { state: "TASK_STATE_FAILED", message: `stopped: ${over}` };
      await this.outcomes.record(job, outcome);
    } finally {
      this.release(job);
    }
  }

  /**
   * At shutdown, whether a stopped task is better left as stored for the next start than ended FAILED: one
   * waiting for input (its answer restarts it), and one of an executor that re-attaches to remote work.
   */
  private leftForRestart(job: Job): boolean {
    if (job.handedOver) return true;
    // With leases another process takes the task over (its lease is released below) unless it must fail.
    if (this.keeper.shared && (this.executor.onRestart ?? "fail") !== "fail") return true;
    return job.task.status.state === "TASK_STATE_INPUT_REQUIRED" || this.executor.onRestart === "reattach";
  }

  /** Ends the execution without an outcome: the stored task is what the next start of the node sees. */
  private detach(job: Job): void {
    this.options.lifecycle?.leftForRestart(job.task, job.caller);
    this.jobs.delete(job.task.id);
    // Handed over: another process claims it (at once, since nobody holds it now).
    if (!job.handedOver) this.keeper.release(job.task.id);
    for (const s of job.subscribers) s.end();
    job.subscribers.clear();
    job.turn.resolve(job.task);
    job.done.resolve(job.task);
  }

  /** The sink an executor reports through; events after the task settled are ignored. */
  private eventsFor(job: Job): ExecutionEvents {
    const { task } = job;
    return {
      progress: (text, metadata) => {
        if (!this.jobs.has(task.id) || job.waiting || job.lost !== undefined) return;
        const status: TaskStatus = {
          state: "TASK_STATE_WORKING",
          timestamp: now(),
          message: agentMessage(task.id, task.contextId, text),
        };
        // The task's status is the latest progress, for those who read it with GetTask rather than a stream.
        task.status = status;
        void this.track(job, this.store.record(task.id, { status }));
        this.emit(
          job,
          { statusUpdate: { taskId: task.id, contextId: task.contextId, status, ...(metadata ? { metadata } : {}) } },
          true,
        );
      },
      artifact: (artifact, options = {}) => {
        if (!this.jobs.has(task.id) || job.stopped || job.lost !== undefined) return;
        const kept = this.limits.streamed(job, artifact, options.append === true);
        if (!kept) return;
        artifact = kept.artifact;
        const lastChunk = options.lastChunk === true || kept.cut;
        task.artifacts = accumulate(task.artifacts ?? [], artifact, options.append === true);
        const update = {
          taskId: task.id,
          contextId: task.contextId,
          artifact,
          ...(options.append ? { append: true } : {}),
          ...(lastChunk ? { lastChunk: true } : {}),
        };
        this.emit(job, { artifactUpdate: update });
      },
      note: (state) => {
        if (!this.jobs.has(task.id)) return Promise.resolve();
        if (job.lost !== undefined) return Promise.reject(notStored(task.id, job.lost));
        // Read back from the node state only; the metadata shows it to the task's caller.
        job.state = { ...job.state, ...state };
        task.metadata = { ...task.metadata, ...state };
        return this.track(job, this.store.record(task.id, { state, metadata: state }));
      },
    };
  }

  private emit(job: Job, response: StreamResponse, rowUpdated = false): Promise<void> {
    return this.track(job, this.events.emit(job, response, rowUpdated));
  }

  /**
   * Watches a write of the task: if it is not stored, the task is not whole on disk, so its execution stops
   * and it cannot end COMPLETED (see OutcomeWriter.record). What the task wrote after it and is not committed yet is
   * dropped (stored after the gap, its events would skip a number), and nothing more of the execution is written: its
   * end continues from what is stored. Returns the write.
   */
  private track(job: Job, write: Promise<void>): Promise<void> {
    write.catch((err) => {
      if (job.lost !== undefined) return;
      job.lost = reasonOf(err);
      this.store.discard(job.task.id);
      if (job.final) return; // the outcome being written was dropped too: the outcome writer writes FAILED instead
      if (this.admission.queue.remove(job)) void this.outcomes.record(job, { state: "TASK_STATE_FAILED" });
      else stop(job, "unstored", `the node could not store this task: ${job.lost}`);
    });
    return write;
  }
}

function storedExtensions(state: Record<string, unknown>): string[] {
  const v = state[EXTENSIONS_KEY];
  return Array.isArray(v) ? v.filter((u): u is string => typeof u === "string") : [];
}

function reasonOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
