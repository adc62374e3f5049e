import type { ReplicaMessages } from "./replica-messages";
import type { AgentExecutor, ExecutionOutcome } from "../executors/executor";
import type { Message, Task, TaskState } from "../protocol/types";
import { isInterrupted } from "../protocol/types";
import { Admission, type AdmissionOptions } from "./admission";
import type { EventStream } from "./event-stream";
import { EventsSink } from "./events-sink";
import { Executions, type ExecutionOptions } from "./execution";
import { type Job, newJob, type StartOptions, stop } from "./job";
import { LeaseKeeper } from "./lease-keeper";
import type { TaskLeases } from "./leases";
import type { TaskLifecycle } from "./lifecycle";
import { OutcomeWriter } from "./outcome-writer";
import { OutputLimits, type OutputLimitOptions } from "./output-limits";
import { EventPublisher, type EventListener } from "./publisher";
import { Questions } from "./questions";
import { TaskRefusal } from "./refusal";
import { RunningJobs } from "./running-jobs";
import { Shutdown } from "./shutdown";
import type { TaskStore } from "./task-store";

export type { EventListener } from "./publisher";
export type { StartOptions } from "./job";
export { EXTENSIONS_KEY } from "./execution";

/** Each part's options are described where the part is (Admission, OutputLimits, Executions). */
export interface TaskRunnerOptions extends AdmissionOptions, OutputLimitOptions, ExecutionOptions {
  /** With a store several processes share: what they tell each other (cancels, answers, commits). */
  replicas?: ReplicaMessages;
  /** Told when tasks are taken, wait for input, and end (the daemon's task log lines and metrics). */
  lifecycle?: TaskLifecycle;
  /** For a shared store: the leases by which this process runs its tasks (none: every unfinished task is ours). */
  leases?: TaskLeases;
}

/**
 * Owns the life of running tasks: a bounded number execute at once, the rest wait, served fairly across the
 * callers that sent them (Admission). Everything that happens to a task is a numbered event: stored with its
 * task, and handed to live subscribers only once committed (EventPublisher), so what a subscriber saw is always
 * what a reconnecting one can replay. The executor's outcome alone decides a task's final state, written once
 * (Executions, OutcomeWriter); no HTTP timer ever touches a task. An execution may stop half-way to ask a
 * question (Questions): the task is INPUT_REQUIRED while it waits, and the next message for the task is its answer.
 *
 * A task the store could not keep whole (one of its writes failed: disk full, I/O error, a lost database) is
 * stopped and never ends COMPLETED (RunningJobs.track); if not even its failure can be stored, it is left as
 * stored for recovery (LeaseKeeper), counted in unstoredTasks() (readiness) until then.
 */
export class TaskRunner {
  private readonly jobs: RunningJobs;
  private readonly admission: Admission;
  private readonly events: EventPublisher;
  private readonly keeper: LeaseKeeper;
  private readonly outcomes: OutcomeWriter;
  private readonly questions: Questions;
  private readonly sink: EventsSink;
  private readonly executions: Executions;
  private readonly ending: Shutdown;

  constructor(
    store: TaskStore,
    private readonly executor: AgentExecutor,
    private readonly options: TaskRunnerOptions,
  ) {
    const { lifecycle } = options;
    const limits = new OutputLimits(options);
    this.admission = new Admission(options);
    this.events = new EventPublisher(store);
    // A job that lost a write while it waited for a slot never ran: it ends FAILED at once.
    this.jobs = new RunningJobs(store, this.events, (job) => this.endQueued(job, { state: "TASK_STATE_FAILED" }));
    this.keeper = new LeaseKeeper(store, executor, options.leases, {
      job: (id) => this.jobs.get(id),
      accepting: () => this.admission.accepting,
      start: (task, message, owner, startOptions) => void this.start(task, message, owner, startOptions),
    });
    this.outcomes = new OutcomeWriter(store, this.events, this.keeper, executor.kind, lifecycle, this.jobs);
    this.sink = new EventsSink(store, limits, this.jobs);
    this.questions = new Questions(store, limits, lifecycle, this.jobs, this.sink, {
      acquire: (job) => this.admission.acquire(job),
      release: (job) => this.executions.release(job),
    });
    this.ending = new Shutdown(this.admission, this.jobs, this.outcomes, this.keeper, executor, lifecycle);
    const { admission, outcomes, questions, sink } = this;
    const parts = { admission, limits, outcomes, questions, sink, shutdown: this.ending };
    this.executions = new Executions(store, executor, options, parts);
    // Another process was asked to cancel a task: this one does, if it runs it.
    options.replicas?.onCancelRequest((taskId, reason) => void this.cancel(taskId, reason)?.catch(() => {}));
  }

  get executorKind(): string {
    return this.executor.kind;
  }

  /** Tasks executing now, waiting for a slot, and waiting for an answer (held here without a slot). */
  load(): { running: number; queued: number; waitingForInput: number } {
    const { runningCount: running, queue } = this.admission;
    return { running, queued: queue.size, waitingForInput: this.jobs.waitingForInput() };
  }

  /** Tasks not even whose failure could be stored (see LeaseKeeper): /health/ready is not ready while any are. */
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
    const { lastSeq = 0, resumed = false } = options;
    const job = newJob(task, message, caller, options);
    this.events.adopt(job);
    this.jobs.add(job);
    this.options.lifecycle?.accepted(task, caller, resumed ? "resumed" : lastSeq > 0 ? "continued" : "new");
    if (options.committed) this.jobs.track(job, options.committed);
    // Taken first: an execution that asks a question at once starts the next turn before run() returns.
    const settled = job.turn.promise;
    if (this.admission.hasSlotFor(caller)) void this.executions.run(job);
    else {
      this.admission.queue.push(job);
      // A message that continues a task (an answer, a retry) takes it out of its interrupted state now, even
      // while it waits for a slot: INPUT_REQUIRED would read as still asking.
      if (lastSeq > 0 && !resumed && isInterrupted(task.status.state)) this.sink.setWorking(job);
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
    return this.jobs.isWaitingForInput(taskId, caller);
  }

  /** Why the execution of this task stopped waiting for input, if it did and still runs (a late answer hears it). */
  withdrawnQuestion(taskId: string): string | undefined {
    return this.jobs.get(taskId)?.withdrawn;
  }

  /** Gives `message` to the execution waiting for this task's next message (see Questions.answer). */
  answer(taskId: string, message: Message): ReturnType<Questions["answer"]> {
    return this.questions.answer(taskId, message);
  }

  /** Adds a subscriber of every event committed from now on; false if the task is not running here. */
  subscribe(taskId: string, caller: string, stream: EventStream): boolean {
    return this.jobs.subscribe(taskId, caller, stream);
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
    if (!this.endQueued(job, { state: "TASK_STATE_CANCELED", message: reason })) stop(job, "canceled", reason);
    return job.done.promise;
  }

  /** Ends a task nothing executes here (CANCELED, or FAILED): see OutcomeWriter.endIdle. */
  endIdle(task: Task, state: TaskState, reason: string, peer: string): Promise<void> {
    return this.outcomes.endIdle(task, state, reason, peer);
  }

  /** Picks up what the last run of the node left unfinished (see LeaseKeeper.recover). */
  recover(): Promise<{ resumed: number; failed: number }> {
    return this.keeper.recover();
  }

  /** Holds the task for this process before it runs here (a follow-up): false if another process holds it. */
  hold(taskId: string): Promise<boolean> {
    return this.keeper.hold(taskId);
  }

  /** Lets go of a task held for a moment (see hold) that this process did not run after all. */
  letGo(taskId: string): void {
    this.keeper.release(taskId);
  }

  /** What the processes sharing the store tell each other (see ReplicaMessages); none for a process alone. */
  get replicas(): ReplicaMessages | undefined {
    return this.options.replicas;
  }

  /** With leases, how long they last: a process that holds a task and is alive answers within it. */
  get leaseMs(): number | undefined {
    return this.keeper.ttlMs;
  }

  /** With leases: keeps this process's tasks, and takes up those of processes that died (see LeaseKeeper.keep). */
  keepLeases(onError: (err: unknown) => void): () => void {
    return this.keeper.keep(onError);
  }

  /** Stops taking tasks, gives running ones `graceMs` to finish, then stops the rest (see Shutdown). */
  shutdown(graceMs: number): Promise<void> {
    return this.ending.run(graceMs);
  }

  /** Ends a job still waiting for a slot with `outcome`; false when it is not queued (it runs, or waits for input). */
  private endQueued(job: Job, outcome: ExecutionOutcome): boolean {
    if (!this.admission.queue.remove(job)) return false;
    void this.outcomes.record(job, outcome);
    return true;
  }
}
