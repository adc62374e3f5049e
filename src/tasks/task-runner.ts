import type { ReplicaMessages } from "./replica-messages";
import type { AgentExecutor, ExecutionEvents, ExecutionOutcome, InputRequest } from "../executors/executor";
import { A2AError } from "../protocol/errors";
import type { Message, StreamResponse, Task, TaskState, TaskStatus } from "../protocol/types";
import { isInterrupted } from "../protocol/types";
import { accumulate, agentMessage, ArtifactSizes, capParts, historyBytes, messageBytes } from "./artifacts";
import { now } from "./clock";
import type { EventStream } from "./event-stream";
import { FairQueue } from "./fair-queue";
import type { TaskLifecycle } from "./lifecycle";
import { abortOf, causeOf, deferred, type Job, newJob, stop, type Waiting } from "./job";
import { EventPublisher, type EventListener } from "./publisher";
import { recoverUnfinished } from "./recovery";
import { authNote, authRetryOf } from "./auth-retry";
import type { TaskLeases } from "./leases";
import { DroppedWrite, HeldElsewhere, WriteRefused, type TaskStore, type UnfinishedTask } from "./task-store";

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

/** Orphaned tasks claimed at a time (the rest are claimed at the next renewal). */
const ORPHANS_PER_CLAIM = 100;
/**
 * How soon a task whose writes could not be stored is tried again (see recoverUnstored), doubling while the
 * store still fails, up to the most: a database back after an outage is used within seconds.
 */
const RECOVERY_FIRST_MS = 250;
const RECOVERY_MOST_MS = 5_000;

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
 * callers get an error (-32603) and the task is left as stored, never held here: with leases, its lease is let
 * go so that a process claims it and applies the restart policy; alone, this process does that itself once the
 * store takes writes again (see recoverUnstored). Until then the task counts in unstoredTasks() (readiness).
 */
export class TaskRunner {
  private readonly jobs = new Map<string, Job>();
  private readonly queue: FairQueue<Job>;
  private running = 0;
  private readonly runningBy = new Map<string, number>();
  private readonly perCallerRunning: number;
  private readonly perCallerQueued: number;
  private accepting = true;
  private readonly replies = new WeakMap<Task, Message>();
  private readonly events: EventPublisher;
  /** Tasks whose execution ended here without any outcome stored, waiting to be recovered (see recoverUnstored). */
  private readonly unstored = new Map<string, { task: UnfinishedTask; reason: string }>();
  private recoveryTimer: ReturnType<typeof setTimeout> | undefined;
  private recoveryDelay = RECOVERY_FIRST_MS;
  private stopped = false;

  constructor(
    private readonly store: TaskStore,
    private readonly executor: AgentExecutor,
    private readonly options: TaskRunnerOptions,
  ) {
    const share = options.callerShare ?? 1;
    this.perCallerRunning = Math.max(1, Math.ceil(options.maxConcurrent * share));
    this.perCallerQueued = Math.max(1, Math.ceil(options.maxQueued * share));
    this.queue = new FairQueue((job) => job.caller);
    this.events = new EventPublisher(store);
    // Another process was asked to cancel a task: this one does, if it runs it.
    options.replicas?.onCancelRequest((taskId, reason) => void this.cancel(taskId, reason)?.catch(() => {}));
    // Another process passed on an answer: taken if the task's execution waits here for its caller.
    options.replicas?.onAnswerRequest((taskId, owner, message) => {
      const job = this.jobs.get(taskId);
      if (!job?.waiting || job.caller !== owner) return undefined;
      const answered = this.answer(taskId, message);
      return answered.committed.then(() => ({ lastSeq: answered.lastSeq }));
    }, (taskId) => this.jobs.get(taskId)?.waiting !== undefined);
  }

  get executorKind(): string {
    return this.executor.kind;
  }

  /** Tasks executing now, waiting for a slot, and waiting for an answer (held here without a slot). */
  load(): { running: number; queued: number; waitingForInput: number } {
    let waitingForInput = 0;
    for (const job of this.jobs.values()) if (job.waiting) waitingForInput++;
    return { running: this.running, queued: this.queue.size, waitingForInput };
  }

  /**
   * Tasks whose writes could not be stored, not even their failure, waiting for the store to take writes again
   * (see recoverUnstored); `reason` is the latest failure. /health/ready is not ready while there are any.
   */
  unstoredTasks(): { count: number; reason?: string } {
    let reason: string | undefined;
    for (const u of this.unstored.values()) reason = u.reason;
    return { count: this.unstored.size, reason };
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
    if (refusal) throw refusal;
  }

  /** Throws (before anything is committed) when the node cannot take another task from `caller`. */
  assertCapacity(caller: string): void {
    if (!this.accepting) throw A2AError.busy("this node is shutting down; retry against it later or use another peer");
    if (this.running >= this.options.maxConcurrent && this.queue.size >= this.options.maxQueued)
      throw A2AError.busy(`this node is at capacity (${this.running} tasks running, ${this.queue.size} waiting); retry later`);
    const running = this.runningBy.get(caller) ?? 0;
    const queued = this.queue.sizeOf(caller);
    if (running >= this.perCallerRunning && queued >= this.perCallerQueued)
      throw A2AError.busy(
        `${caller} already has ${running} tasks running and ${queued} waiting on this node, its share of it; retry when some have finished`,
      );
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
    if (this.hasSlotFor(caller)) void this.run(job);
    else {
      this.queue.push(job);
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
    return this.replies.get(task);
  }

  /** Whether an execution here waits for the next message of this task (see input()). */
  isWaitingForInput(taskId: string): boolean {
    return this.jobs.get(taskId)?.waiting !== undefined;
  }

  /**
   * Why the execution of this task stopped waiting for input, if it did and still runs: a message meant as an
   * answer that arrives after that hears it.
   */
  withdrawnQuestion(taskId: string): string | undefined {
    return this.jobs.get(taskId)?.withdrawn;
  }

  /**
   * Gives `message` to the execution waiting for this task's next message (see isWaitingForInput). Refuses,
   * with nothing recorded, an answer the question's check turns down. Returns the task as the answer left it
   * (WORKING again, the answer in its history: never the question it answered, which a caller would take for
   * the task's state), the sequence number of its last event before the answer, when the answer is durable,
   * and the task's next settled state after it.
   */
  answer(taskId: string, message: Message): { task: Task; committed: Promise<void>; settled: Promise<Task>; lastSeq: number } {
    const job = this.jobs.get(taskId);
    const waiting = job?.waiting;
    if (!job || !waiting) throw A2AError.unsupportedOperation(`task ${taskId} is not waiting for input`);
    const why = waiting.request.check?.(message);
    if (why !== undefined) throw A2AError.invalidParams(why);
    const { task } = job;
    const lastSeq = job.seq;
    task.history = [...(task.history ?? []), message];
    if (job.historyBytes !== undefined) job.historyBytes += messageBytes(message);
    const committed = this.track(job, this.store.record(taskId, { history: [message] }));
    job.waiting = undefined;
    waiting.detach();
    this.acquire(job);
    this.setWorking(job);
    const after = { ...task, status: { ...task.status }, history: [...task.history], artifacts: task.artifacts && [...task.artifacts] };
    const settled = job.turn.promise;
    this.options.lifecycle?.answered(task, job.caller);
    waiting.answered.resolve(message);
    return { task: after, committed, settled, lastSeq };
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
    if (this.queue.remove(job)) void this.record(job, { state: "TASK_STATE_CANCELED", message: reason });
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
    const stored = this.store.record(task.id, { status, history: [status.message!], events: { firstSeq: seq, items: [ended] }, rowSeq: seq });
    // Nothing ran it in this process: no time of its own to report, only that it ended.
    void stored.then(() => this.options.lifecycle?.finished(task, peer, state, 0, 0), () => {});
    return stored;
  }

  /**
   * Picks up what the last run of the node left unfinished (see recoverUnfinished); with leases, only the
   * tasks no live process holds, claimed for this one.
   */
  async recover(): Promise<{ resumed: number; failed: number }> {
    const leases = this.options.leases;
    const tasks = leases ? await leases.claimOrphans(ORPHANS_PER_CLAIM) : undefined;
    return this.resume(tasks);
  }

  /**
   * Holds the task for this process before it runs here (a follow-up message): false when another live
   * process holds it, which must then be the one to run it. Always true without leases.
   */
  async hold(taskId: string): Promise<boolean> {
    // A task given up here after its writes failed, now taken again: its lease must not be let go meanwhile.
    this.unstored.delete(taskId);
    return this.options.leases ? this.options.leases.acquire(taskId) : true;
  }

  /** Lets go of a task held for a moment (see hold) that this process did not run after all. */
  letGo(taskId: string): void {
    this.releaseLease(taskId);
  }

  /** With leases, how long they last: a process that holds a task and is alive answers within it. */
  /** What the processes sharing the store tell each other (see ReplicaMessages); none for a process alone. */
  get replicas(): ReplicaMessages | undefined {
    return this.options.replicas;
  }

  get leaseMs(): number | undefined {
    return this.options.leases?.ttlMs;
  }

  /**
   * With leases: renews this process's leases every third of their time, stops (without writing anything)
   * the executions of tasks it lost to another process meanwhile, and claims and resumes the tasks of
   * processes that died. Returns a function that stops it.
   */
  keepLeases(onError: (err: unknown) => void): () => void {
    const leases = this.options.leases;
    if (!leases) return () => {};
    let renewing = false;
    let claiming = false;
    // Renewed until the runner is stopped (executions in their shutdown grace still hold their tasks).
    const renew = async () => {
      for (const id of await leases.renew()) {
        const job = this.jobs.get(id);
        if (!job) continue;
        job.handedOver = true;
        stop(job, "shutdown", "another replica took this task over");
      }
    };
    // Unstored tasks are let go in the same sequence as the claims (see abandonUnstored).
    const claim = async () => {
      await this.abandonUnstored(leases);
      if (this.accepting) await this.resume(await leases.claimOrphans(ORPHANS_PER_CLAIM));
    };
    const tick = () => {
      // Apart: a renewal never waits for a claim in progress (taking up many tasks at once, after an outage,
      // may take longer than a lease lasts), and each runs one at a time.
      if (!renewing) {
        renewing = true;
        void renew()
          .catch(onError)
          .finally(() => (renewing = false));
      }
      if (!claiming) {
        claiming = true;
        void claim()
          .catch(onError)
          .finally(() => (claiming = false));
      }
    };
    const timer = setInterval(tick, Math.max(50, Math.floor(leases.ttlMs / 3)));
    timer.unref?.();
    return () => clearInterval(timer);
  }

  private resume(tasks: UnfinishedTask[] | undefined): Promise<{ resumed: number; failed: number }> {
    return recoverUnfinished(
      this.store,
      this.executor,
      (task, message, owner, options) => void this.start(task, message, owner, options),
      tasks,
      (id) => void this.options.leases?.release(id).catch(() => {}),
      (task, err) => {
        // Refused: another process holds it now, or it is not stored at all; nothing is this process's to do.
        if (err instanceof WriteRefused) this.releaseLease(task.id);
        else this.keepUnstored(task, reasonOf(err));
      },
    );
  }

  /**
   * A task whose execution ended here with nothing of its outcome stored (see strand), or whose recovery could
   * not be stored: never held here any more. With leases its lease is let go (at once, or it runs out if the
   * database does not answer) and whichever process claims it next applies the restart policy; alone, this
   * process recovers it itself once the store takes writes again. Tried again with a growing delay meanwhile.
   */
  private keepUnstored(task: UnfinishedTask, reason: string): void {
    const again = this.unstored.has(task.id);
    this.unstored.set(task.id, { task, reason });
    // With leases: not renewed from now on; the lease itself goes at the next renewal (see abandonUnstored).
    if (this.options.leases) return this.options.leases.forget([task.id]);
    if (!again) this.recoveryDelay = RECOVERY_FIRST_MS;
    this.scheduleRecovery();
  }

  /**
   * With leases, before each claim of orphans: deletes the leases of the unstored tasks, so that the next claim
   * (this process's, or another's) takes each up. Before the claim, never beside it: a delete of this process's
   * lease must not overtake its own claim of the task. What fails stays for the next time.
   */
  private async abandonUnstored(leases: TaskLeases): Promise<void> {
    await Promise.all(
      [...this.unstored.keys()].map((id) => {
        // Running here again (an answer started it): nothing to give up.
        if (this.jobs.has(id)) return void this.unstored.delete(id);
        return leases.abandon(id).then(
          () => void this.unstored.delete(id),
          () => {},
        );
      }),
    );
  }

  private scheduleRecovery(): void {
    if (this.recoveryTimer || this.stopped || this.options.leases || this.unstored.size === 0) return;
    this.recoveryTimer = setTimeout(() => void this.recoverUnstored(), this.recoveryDelay);
    this.recoveryTimer.unref?.();
  }

  /**
   * Without leases: one try at recovering the unstored tasks here as a restart would (see recoverUnfinished),
   * which stores each restart (or end) before running the task again. What still fails is tried again later.
   */
  private async recoverUnstored(): Promise<void> {
    const before = this.unstored.size;
    const entries = [...this.unstored.entries()];
    try {
      await this.resume(entries.filter(([id]) => !this.jobs.has(id)).map(([, u]) => u.task));
      // Started, ended or found settled: done. (One that failed again was put back by keepUnstored, anew.)
      for (const [id, u] of entries) if (this.unstored.get(id) === u) this.unstored.delete(id);
    } catch (err) {
      // A read failed (the store does not answer): what was not taken up is tried again.
      for (const [, u] of entries) u.reason = reasonOf(err);
    }
    this.recoveryTimer = undefined;
    this.recoveryDelay = this.unstored.size < before ? RECOVERY_FIRST_MS : Math.min(RECOVERY_MOST_MS, this.recoveryDelay * 2);
    this.scheduleRecovery();
  }

  /**
   * Stops taking tasks, gives running ones `graceMs` to finish, then stops the rest; each ends in a recorded
   * state (queued and stopped tasks FAILED, saying the node stopped), except where the next start of the node
   * takes over: a task waiting for input stays INPUT_REQUIRED (its answer starts it again), and one whose
   * executor re-attaches to remote work stays as stored (the restart re-attaches to it).
   */
  async shutdown(graceMs: number): Promise<void> {
    this.accepting = false;
    for (const job of this.queue.drain()) {
      // With leases another process starts it (see leftForRestart); alone, it ends here.
      if (this.options.leases && this.leftForRestart(job)) this.detach(job);
      else void this.record(job, { state: "TASK_STATE_FAILED", message: "interrupted: the node shut down before this task started" });
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
    this.stopped = true;
    clearTimeout(this.recoveryTimer);
    this.recoveryTimer = undefined;
  }

  private hasSlotFor(caller: string): boolean {
    return this.running < this.options.maxConcurrent && (this.runningBy.get(caller) ?? 0) < this.perCallerRunning;
  }

  private acquire(job: Job): void {
    if (job.counted) return;
    job.counted = true;
    this.running++;
    this.runningBy.set(job.caller, (this.runningBy.get(job.caller) ?? 0) + 1);
  }

  /** Gives back a job's slot and starts whoever may take it. */
  private release(job: Job): void {
    if (!job.counted) return;
    job.counted = false;
    this.running--;
    const n = (this.runningBy.get(job.caller) ?? 1) - 1;
    if (n === 0) this.runningBy.delete(job.caller);
    else this.runningBy.set(job.caller, n);
    while (this.running < this.options.maxConcurrent) {
      const next = this.queue.shift((caller) => (this.runningBy.get(caller) ?? 0) < this.perCallerRunning);
      if (!next) break;
      void this.run(next);
    }
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
    this.acquire(job);
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
          (await this.store.contextHistory(task.contextId, job.caller, this.options.historyMessages + 1 + (retry?.skip.size ?? 0))).filter(
            (m) => m.messageId !== message.messageId && !retry?.skip.has(m.messageId),
          );
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
          input: (request) => this.input(job, request),
        });
      } catch (err) {
        outcome = { state: "TASK_STATE_FAILED", message: `executor ${this.executor.kind} failed: ${(err as Error).message}` };
      } finally {
        clearTimeout(deadline);
        job.waiting?.detach();
        job.waiting = undefined;
        job.executorMs += performance.now() - executing;
      }
      const cause = causeOf(job);
      if (job.stopped === "limit") {
        outcome = { state: "TASK_STATE_FAILED", message: `stopped: ${job.limitReason}` };
      } else if (job.stopped === "output-cap") {
        outcome = {
          state: "TASK_STATE_COMPLETED",
          message: `output cut at ${this.options.outputCapBytes} bytes (this node's output cap)`,
          metadata: { ...outcome.metadata, truncated: true, outputCapBytes: this.options.outputCapBytes },
        };
      } else if (job.stopped === "deadline") {
        outcome = { state: "TASK_STATE_FAILED", message: `stopped: the task ran longer than this node's deadline of ${Math.round((this.options.deadlineMs ?? 0) / 1000)} s` };
      } else if (cause === "canceled") {
        const reason = job.cancelReason ?? "canceled";
        outcome = { state: "TASK_STATE_CANCELED", message: outcome.stopNote ? `${reason}; ${outcome.stopNote}` : reason };
      } else if (cause === "shutdown") {
        if (this.leftForRestart(job)) return this.detach(job);
        outcome = { state: "TASK_STATE_FAILED", message: "interrupted: the node shut down while this task was running" };
      }
      outcome = this.capOutcome(job, outcome);
      // The node's own outcomes (a limit, the deadline, a cancel) are recorded as they are: only what the
      // executor made is held to the limits.
      const own = job.stopped === undefined && cause !== "canceled" && cause !== "shutdown";
      const over = own ? this.outcomeOverLimit(job, outcome) : undefined;
      if (over) outcome = { state: "TASK_STATE_FAILED", message: `stopped: ${over}` };
      await this.record(job, outcome);
    } finally {
      this.release(job);
    }
  }

  /**
   * output_cap applies to artifacts an executor returns whole as it does to streamed ones: their text past
   * what the cap leaves (after what was streamed) is cut, and the task is marked truncated. The executor's
   * state and reply are kept; without a reply, the status message says the output was cut.
   */
  private capOutcome(job: Job, outcome: ExecutionOutcome): ExecutionOutcome {
    const cap = this.options.outputCapBytes;
    if (cap === undefined || !outcome.artifacts?.length || job.stopped) return outcome;
    let over = false;
    const artifacts = outcome.artifacts.map((a) => {
      const cut = capParts(a, cap - job.outputBytes);
      job.outputBytes += cut.bytes;
      over ||= cut.over;
      return cut.artifact;
    });
    if (!over) return outcome;
    const capped: ExecutionOutcome = { ...outcome, artifacts, metadata: { ...outcome.metadata, truncated: true, outputCapBytes: cap } };
    if (!outcome.reply) capped.message = `output cut at ${cap} bytes (this node's output cap)`;
    return capped;
  }

  /**
   * Why an outcome cannot be recorded as the executor gave it: its artifacts would pass max_artifact_bytes, or
   * its reply has more parts than max_message_parts. Undefined when it fits.
   */
  private outcomeOverLimit(job: Job, outcome: ExecutionOutcome): string | undefined {
    const maxParts = this.options.maxMessageParts;
    const parts = outcome.reply?.parts?.length ?? 0;
    if (maxParts !== undefined && parts > maxParts)
      return `the agent's reply has ${parts} parts, more than this node's limit of ${maxParts} per message (max_message_parts); it was not kept`;
    const maxBytes = this.options.maxArtifactBytes;
    const maxTask = this.options.maxTaskBytes;
    if (maxBytes === undefined && maxTask === undefined) return undefined;
    const sizes = new ArtifactSizes(job.task.artifacts);
    for (const a of outcome.artifacts ?? []) sizes.add(a, false);
    if (maxBytes !== undefined && sizes.total > maxBytes) return artifactsOver(sizes.total, maxBytes);
    // What the outcome adds: its artifacts over those the task has, and its reply or status message.
    const message = outcome.reply ?? (outcome.message ? agentMessage(job.task.id, job.task.contextId, outcome.message) : undefined);
    const before = job.artifactSizes?.total ?? new ArtifactSizes(job.task.artifacts).total;
    const grown = this.taskBytesOver(job, sizes.total - before + (message ? messageBytes(message) : 0));
    if (grown) return `the agent's outcome ${grown}; it was not kept`;
    return undefined;
  }

  /**
   * With max_task_bytes, how adding `added` bytes would pass it ("would make the task hold N bytes, more than
   * ..."), or undefined when it fits. The history's bytes are counted on first use and kept up to date.
   */
  private taskBytesOver(job: Job, added: number): string | undefined {
    const max = this.options.maxTaskBytes;
    if (max === undefined) return undefined;
    job.historyBytes ??= historyBytes(job.task.history);
    const artifacts = job.artifactSizes?.total ?? (job.artifactSizes = new ArtifactSizes(job.task.artifacts)).total;
    const total = job.historyBytes + artifacts + added;
    if (total <= max) return undefined;
    return `would make the task hold ${total} bytes, more than this node's limit of ${max} per task (max_task_bytes)`;
  }

  /** The executor's output passed one of the node's limits: it is stopped, and the task ends FAILED saying why. */
  private overLimit(job: Job, reason: string): void {
    job.stopped = "limit";
    job.limitReason = reason;
    stop(job, "limit", reason);
  }

  /**
   * At shutdown, whether a stopped task is better left as stored for the next start than ended FAILED: one
   * waiting for input (its answer restarts it), and one of an executor that re-attaches to remote work.
   */
  private leftForRestart(job: Job): boolean {
    if (job.handedOver) return true;
    // With leases another process takes the task over (its lease is released below) unless it must fail.
    if (this.options.leases && (this.executor.onRestart ?? "fail") !== "fail") return true;
    return job.task.status.state === "TASK_STATE_INPUT_REQUIRED" || this.executor.onRestart === "reattach";
  }

  /** Ends the execution without an outcome: the stored task is what the next start of the node sees. */
  private detach(job: Job): void {
    this.options.lifecycle?.leftForRestart(job.task, job.caller);
    this.jobs.delete(job.task.id);
    // Handed over: another process claims it (at once, since nobody holds it now).
    if (!job.handedOver) this.releaseLease(job.task.id);
    for (const s of job.subscribers) s.end();
    job.subscribers.clear();
    job.turn.resolve(job.task);
    job.done.resolve(job.task);
  }

  /**
   * The execution asks a question: INPUT_REQUIRED is recorded and published (a blocking caller gets its answer
   * now), the execution's slot is given back, and the next message for the task resolves the returned promise.
   */
  private input(job: Job, request: InputRequest): Promise<Message> {
    const signal = abortOf(job).signal;
    if (signal.aborted) return Promise.reject(signal.reason);
    if (!this.jobs.has(job.task.id)) return Promise.reject(new Error("the task has ended"));
    if (job.waiting) return Promise.reject(new Error("this execution already waits for input"));
    if (request.signal?.aborted) return Promise.reject(request.signal.reason);
    const { task } = job;
    const maxMessages = this.options.maxTaskMessages;
    const held = task.history?.length ?? 0;
    // Room for the question, its answer and the task's final message, or the question is not asked.
    if (maxMessages !== undefined && held + 3 > maxMessages) {
      this.overLimit(
        job,
        `the agent asked for input, but the task holds ${held} messages: the question, its answer and the final message would pass this node's limit of ${maxMessages} per task (max_task_messages)`,
      );
      return Promise.reject(abortOf(job).signal.reason);
    }
    const question = agentMessage(task.id, task.contextId, request.text);
    if (request.metadata) question.metadata = request.metadata;
    const grown = this.taskBytesOver(job, messageBytes(question));
    if (grown) {
      this.overLimit(job, `the agent's question ${grown}`);
      return Promise.reject(abortOf(job).signal.reason);
    }
    if (job.historyBytes !== undefined) job.historyBytes += messageBytes(question);
    const status: TaskStatus = { state: "TASK_STATE_INPUT_REQUIRED", timestamp: now(), message: question };
    task.status = status;
    task.history = [...(task.history ?? []), question];
    job.withdrawn = undefined;
    const answered = deferred<Message>();
    // Time spent waiting for the answer is not the executor's: it is taken off its share when the wait ends.
    const asked = performance.now();
    answered.promise.then(
      () => void (job.executorMs -= performance.now() - asked),
      () => void (job.executorMs -= performance.now() - asked),
    );
    const onStop = () => {
      if (job.waiting !== waiting) return;
      job.waiting = undefined;
      waiting.detach();
      answered.reject(signal.reason);
    };
    const onWithdraw = () => {
      if (job.waiting !== waiting) return;
      job.waiting = undefined;
      waiting.detach();
      const reason = request.signal?.reason;
      job.withdrawn = reason instanceof Error ? reason.message : String(reason ?? "the question was withdrawn");
      this.acquire(job);
      this.setWorking(job, `no longer waiting for an answer: ${job.withdrawn}`);
      answered.reject(reason ?? new Error(job.withdrawn));
    };
    const waiting: Waiting = {
      request,
      answered,
      detach: () => {
        signal.removeEventListener("abort", onStop);
        request.signal?.removeEventListener("abort", onWithdraw);
      },
    };
    job.waiting = waiting;
    signal.addEventListener("abort", onStop, { once: true });
    request.signal?.addEventListener("abort", onWithdraw, { once: true });
    void this.track(job, this.store.record(task.id, { status, history: status.message ? [status.message] : undefined }));
    const committed = this.emit(job, { statusUpdate: { taskId: task.id, contextId: task.contextId, status } }, true);
    const turn = job.turn;
    job.turn = deferred();
    this.options.lifecycle?.waitingForInput(task, job.caller);
    committed.then(
      () => turn.resolve(job.task),
      (err) => turn.reject(notStored(task.id, err)),
    );
    this.release(job);
    return answered.promise;
  }

  /** The sink an executor reports through; events after the task settled are ignored. */
  private eventsFor(job: Job): ExecutionEvents {
    const { task } = job;
    return {
      progress: (text, metadata) => {
        if (!this.jobs.has(task.id) || job.waiting || job.lost !== undefined) return;
        const status: TaskStatus = { state: "TASK_STATE_WORKING", timestamp: now(), message: agentMessage(task.id, task.contextId, text) };
        // The task's status is the latest progress, for those who read it with GetTask rather than a stream.
        task.status = status;
        void this.track(job, this.store.record(task.id, { status }));
        this.emit(job, { statusUpdate: { taskId: task.id, contextId: task.contextId, status, ...(metadata ? { metadata } : {}) } }, true);
      },
      artifact: (artifact, options = {}) => {
        if (!this.jobs.has(task.id) || job.stopped || job.lost !== undefined) return;
        let lastChunk = options.lastChunk === true;
        const cap = this.options.outputCapBytes;
        if (cap !== undefined) {
          const cut = capParts(artifact, cap - job.outputBytes);
          job.outputBytes += cut.bytes;
          if (cut.over) {
            artifact = cut.artifact;
            lastChunk = true;
            job.stopped = "output-cap";
            stop(job, "output-cap", "output cap");
          }
        }
        const maxBytes = this.options.maxArtifactBytes;
        if (maxBytes !== undefined || this.options.maxTaskBytes !== undefined) {
          const sizes = (job.artifactSizes ??= new ArtifactSizes(task.artifacts));
          const total = sizes.after(artifact, options.append === true);
          // Not kept: what is stored stays within the limit, and the task ends FAILED saying so.
          if (maxBytes !== undefined && total > maxBytes) return this.overLimit(job, `${artifactsOver(total, maxBytes)}; the artifact event that passed it was not kept`);
          const grown = this.taskBytesOver(job, total - sizes.total);
          if (grown) return this.overLimit(job, `the artifact event ${grown}; it was not kept`);
          sizes.add(artifact, options.append === true);
        }
        task.artifacts = accumulate(task.artifacts ?? [], artifact, options.append === true);
        const update = { taskId: task.id, contextId: task.contextId, artifact, ...(options.append ? { append: true } : {}), ...(lastChunk ? { lastChunk: true } : {}) };
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
   * and it cannot end COMPLETED (see record). What the task wrote after it and is not committed yet is dropped
   * (stored after the gap, its events would skip a number), and nothing more of the execution is written: its
   * end continues from what is stored. Returns the write.
   */
  private track(job: Job, write: Promise<void>): Promise<void> {
    write.catch((err) => {
      if (job.lost !== undefined) return;
      job.lost = reasonOf(err);
      this.store.discard(job.task.id);
      if (job.final) return; // the outcome being written was dropped too: record() writes FAILED instead
      if (this.queue.remove(job)) void this.record(job, { state: "TASK_STATE_FAILED" });
      else stop(job, "unstored", `the node could not store this task: ${job.lost}`);
    });
    return write;
  }

  /**
   * Writes the outcome once; resolves `done` (and the turn) after it is committed. A task that lost a write
   * ends FAILED instead; if the outcome cannot be stored, FAILED is tried once more without the outcome's
   * data. If even that cannot be stored, `done` and the turn reject with a -32603 error saying so, and the task
   * is left as stored for recovery (see strand), or, when the store refused it (another process holds it now,
   * or it was never stored), left to whoever holds it.
   */
  private async record(job: Job, outcome: ExecutionOutcome): Promise<void> {
    const { task } = job;
    job.final = true;
    try {
      if (job.lost !== undefined) await this.writeFailed(job, `the node could not store part of this task, so its result is not kept: ${job.lost}`);
      else {
        try {
          await this.writeOutcome(job, outcome);
        } catch (err) {
          // Dropped: a write before the outcome failed (see track); else the outcome's own write failed.
          const what = err instanceof DroppedWrite ? "part of this task" : "this task's outcome";
          await this.writeFailed(job, `the node could not store ${what}, so its result is not kept: ${job.lost ?? reasonOf(err)}`);
        }
      }
    } catch (err) {
      if (err instanceof WriteRefused) {
        const error = notStored(task.id, job.lost ?? err);
        for (const s of job.subscribers) s.fail(error);
        this.jobs.delete(task.id);
        // Another process holds the task now and runs it to its end: nothing ended here.
        if (err instanceof HeldElsewhere) this.options.lifecycle?.leftForRestart(task, job.caller);
        else this.finished(job, "TASK_STATE_FAILED");
        job.turn.reject(error);
        job.done.reject(error);
      } else this.strand(job, job.lost ?? reasonOf(err));
      return;
    }
    this.jobs.delete(task.id);
    this.finished(job, job.task.status.state);
    this.releaseLease(task.id);
    job.turn.resolve(job.task);
    job.done.resolve(job.task);
  }

  /**
   * Nothing of the task's end could be stored (the database does not take writes): the execution is over here,
   * its callers get -32603, and the task, as stored (WORKING or SUBMITTED), goes to recovery (keepUnstored):
   * this process neither holds it nor reports it finished, so its view and the database's agree.
   */
  private strand(job: Job, reason: string): void {
    const { task } = job;
    const error = A2AError.internal(
      `the node could not store task ${task.id} (${reason}); it is taken up again as after a restart once the database takes writes: follow it with GetTask or SubscribeToTask`,
    );
    for (const s of job.subscribers) s.fail(error);
    job.subscribers.clear();
    this.jobs.delete(task.id);
    this.options.lifecycle?.notStored?.(task, job.caller, reason);
    job.turn.reject(error);
    job.done.reject(error);
    this.keepUnstored({ id: task.id, owner: job.caller, state: task.status.state, executor: this.executor.kind }, reason);
  }

  private finished(job: Job, state: TaskState): void {
    this.options.lifecycle?.finished(job.task, job.caller, state, (performance.now() - job.acceptedAt) / 1000, Math.max(0, job.executorMs) / 1000);
  }

  private releaseLease(taskId: string): void {
    void this.options.leases?.release(taskId).catch(() => {}); // an unreleased lease only runs out
  }

  /** The outcome as the task's final status, artifacts, reply and metadata; resolves once committed. */
  private async writeOutcome(job: Job, outcome: ExecutionOutcome): Promise<void> {
    const { task } = job;
    const status: TaskStatus = { state: outcome.state, timestamp: now() };
    const replyText = outcome.message;
    if (outcome.reply) {
      const reply = { ...outcome.reply, taskId: task.id, contextId: task.contextId };
      this.replies.set(task, reply);
      status.message = reply;
    } else if (replyText) status.message = agentMessage(task.id, task.contextId, replyText);
    for (const a of outcome.artifacts ?? []) {
      task.artifacts = accumulate(task.artifacts ?? [], a, false);
      void this.emit(job, { artifactUpdate: { taskId: task.id, contextId: task.contextId, artifact: a, lastChunk: true } });
    }
    task.status = status;
    if (status.message) task.history = [...(task.history ?? []), status.message];
    const note = authNote(outcome, job.state, job.ran ?? job.message);
    if (note) {
      job.state = { ...job.state, ...note };
      outcome = { ...outcome, metadata: { ...outcome.metadata, ...note } };
    }
    if (outcome.metadata) task.metadata = { ...task.metadata, ...outcome.metadata };
    const finalEvent: StreamResponse = { statusUpdate: { taskId: task.id, contextId: task.contextId, status } };
    // Both writes join the same group commit (and share the task's outcome in it).
    await Promise.all([
      this.store.record(task.id, { status, history: status.message ? [status.message] : undefined, artifacts: task.artifacts, metadata: outcome.metadata, state: note }),
      this.emit(job, finalEvent, true),
    ]);
  }

  /**
   * The task's writes or its outcome could not be stored: records FAILED with `message`, with nothing of the
   * outcome's own data (which may be what could not be stored), its event numbered after the last stored one
   * (what was not stored is dropped first, see track). The live task becomes the stored one. Throws if this
   * cannot be stored either.
   */
  private async writeFailed(job: Job, message: string): Promise<void> {
    const { task } = job;
    this.store.discard(task.id);
    // Events of the task being committed now (a group in flight on a database server) settle first: the
    // numbering continues from what is stored once they have.
    await Promise.allSettled(job.unpublished.map((u) => u.committed));
    job.unpublished = [];
    job.seq = await this.store.lastEventSeq(task.id);
    const status: TaskStatus = { state: "TASK_STATE_FAILED", timestamp: now(), message: agentMessage(task.id, task.contextId, message) };
    await Promise.all([
      this.store.record(task.id, { status, history: [status.message!] }),
      this.events.emit(job, { statusUpdate: { taskId: task.id, contextId: task.contextId, status } }, true),
    ]);
    job.task = (await this.store.snapshot(task.id, job.caller))?.task ?? { ...task, status };
  }
}

function artifactsOver(total: number, max: number): string {
  return `the task's artifacts would hold ${total} bytes, more than this node's limit of ${max} (max_artifact_bytes)`;
}

/** The error a caller gets when its task could not be stored: -32603, naming the task and the store's reason. */
export function notStored(taskId: string, err: unknown): A2AError {
  if (err instanceof A2AError) return err;
  return A2AError.internal(`the node could not store task ${taskId}, so it is not kept: ${reasonOf(err)}`);
}

function reasonOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

function storedExtensions(state: Record<string, unknown>): string[] {
  const v = state[EXTENSIONS_KEY];
  return Array.isArray(v) ? v.filter((u): u is string => typeof u === "string") : [];
}
