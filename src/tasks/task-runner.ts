import type { AgentExecutor, ExecutionOutcome } from "../executors/executor";
import { A2AError } from "../protocol/errors";
import type { Message, Task, TaskStatus } from "../protocol/types";
import { newId, now } from "./clock";
import type { TaskStore } from "./task-store";

export interface TaskRunnerOptions {
  /** Tasks executing at once. */
  maxConcurrent: number;
  /** Tasks allowed to wait (SUBMITTED) for a slot; beyond this new tasks are refused. */
  maxQueued: number;
  /** Earlier messages of the context handed to the executor. */
  historyMessages: number;
}

interface Job {
  task: Task;
  message: Message;
  caller: string;
  abort: AbortController;
  cancelReason?: string;
  settled: Promise<Task>;
  resolve(task: Task): void;
  reject(err: unknown): void;
}

/**
 * Owns the life of running tasks: a bounded number execute at once, the rest wait in order. The executor's
 * outcome is the only thing that decides a task's final state, and it is written once, here. Callers that
 * want to wait (a blocking SendMessage, a cancel) await `settled`; no HTTP timer ever touches the task.
 */
export class TaskRunner {
  private readonly jobs = new Map<string, Job>();
  private readonly queue: Job[] = [];
  private running = 0;
  private accepting = true;

  constructor(
    private readonly store: TaskStore,
    private readonly executor: AgentExecutor,
    private readonly options: TaskRunnerOptions,
  ) {}

  get executorKind(): string {
    return this.executor.kind;
  }

  /** Throws (before anything is committed) when the node cannot take another task. */
  assertCapacity(): void {
    if (!this.accepting) throw A2AError.busy("this node is shutting down; retry against it later or use another peer");
    if (this.running >= this.options.maxConcurrent && this.queue.length >= this.options.maxQueued)
      throw A2AError.busy(
        `this node is at capacity (${this.running} tasks running, ${this.queue.length} waiting); retry later`,
      );
  }

  /** Runs (or queues) a task that is already committed as SUBMITTED. Resolves when it settles. */
  start(task: Task, message: Message, caller: string): Promise<Task> {
    let resolve!: (t: Task) => void;
    let reject!: (err: unknown) => void;
    const settled = new Promise<Task>((res, rej) => {
      resolve = res;
      reject = rej;
    });
    settled.catch(() => {}); // a waiter may never come; the failure is logged by record()
    const job: Job = { task, message, caller, abort: new AbortController(), settled, resolve, reject };
    this.jobs.set(task.id, job);
    if (this.running < this.options.maxConcurrent) void this.run(job);
    else this.queue.push(job);
    return settled;
  }

  /** The promise of a task this runner is working on, if it is. */
  settledOf(taskId: string): Promise<Task> | undefined {
    return this.jobs.get(taskId)?.settled;
  }

  /** Stops a running or queued task; resolves with its final (CANCELED) state, or undefined if not ours. */
  cancel(taskId: string, reason: string): Promise<Task> | undefined {
    const job = this.jobs.get(taskId);
    if (!job) return undefined;
    job.cancelReason = reason;
    const queued = this.queue.indexOf(job);
    if (queued !== -1) {
      this.queue.splice(queued, 1);
      void this.record(job, { state: "TASK_STATE_CANCELED", message: reason });
    } else job.abort.abort(new Error(reason));
    return job.settled;
  }

  /**
   * Tasks a previous run of the node left SUBMITTED or WORKING can no longer be answered by the process that
   * took them; they end FAILED with a message saying so, so that every accepted task has a recorded end.
   */
  async failLeftovers(): Promise<number> {
    const left = this.store.unfinished();
    const writes = left.map((t) =>
      this.store.finish(
        t.id,
        {
          state: "TASK_STATE_FAILED",
          timestamp: now(),
          message: {
            messageId: newId(),
            role: "ROLE_AGENT",
            parts: [{ text: "interrupted: the node stopped before this task finished; send it again" }],
            taskId: t.id,
          },
        },
        [],
      ),
    );
    await Promise.all(writes);
    return left.length;
  }

  get activeCount(): number {
    return this.jobs.size;
  }

  /**
   * Stops taking tasks, gives running ones `graceMs` to finish, then aborts the rest; each ends in a recorded
   * state (queued and aborted tasks FAILED, saying the node stopped).
   */
  async shutdown(graceMs: number): Promise<void> {
    this.accepting = false;
    for (const job of this.queue.splice(0))
      void this.record(job, { state: "TASK_STATE_FAILED", message: "interrupted: the node shut down before this task started" });
    const pending = [...this.jobs.values()].map((j) => j.settled);
    if (pending.length === 0) return;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const grace = new Promise<void>((r) => (timer = setTimeout(r, graceMs)));
    await Promise.race([Promise.allSettled(pending), grace]);
    clearTimeout(timer);
    for (const job of this.jobs.values()) job.abort.abort(new Error("node shutting down"));
    await Promise.allSettled([...this.jobs.values()].map((j) => j.settled));
  }

  private async run(job: Job): Promise<void> {
    this.running++;
    const { task } = job;
    try {
      const working: TaskStatus = { state: "TASK_STATE_WORKING", timestamp: now() };
      // Not awaited: it commits with the next group, and if the task finishes first the two writes merge.
      this.store.setStatus(task.id, working).catch(() => {});
      task.status = working;
      let outcome: ExecutionOutcome;
      try {
        const history = () =>
          this.store
            .contextHistory(task.contextId, job.caller, this.options.historyMessages + 1)
            .filter((m) => m.messageId !== job.message.messageId);
        outcome = await this.executor.execute({
          taskId: task.id,
          contextId: task.contextId,
          message: job.message,
          history,
          caller: job.caller,
          signal: job.abort.signal,
        });
      } catch (err) {
        outcome = { state: "TASK_STATE_FAILED", message: `executor ${this.executor.kind} failed: ${(err as Error).message}` };
      }
      if (job.abort.signal.aborted) {
        outcome = job.cancelReason
          ? { state: "TASK_STATE_CANCELED", message: job.cancelReason }
          : { state: "TASK_STATE_FAILED", message: "interrupted: the node shut down while this task was running" };
      }
      await this.record(job, outcome);
    } finally {
      this.running--;
      const next = this.queue.shift();
      if (next) void this.run(next);
    }
  }

  /** Writes the outcome once; resolves `settled` after it is committed (rejects if it could not be). */
  private async record(job: Job, outcome: ExecutionOutcome): Promise<void> {
    const { task } = job;
    const status: TaskStatus = { state: outcome.state, timestamp: now() };
    if (outcome.message)
      status.message = {
        messageId: newId(),
        role: "ROLE_AGENT",
        parts: [{ text: outcome.message }],
        taskId: task.id,
        contextId: task.contextId,
      };
    const produced = outcome.artifacts ?? [];
    try {
      await this.store.finish(task.id, status, produced, outcome.metadata);
    } catch (err) {
      // The store itself failed (disk full, database gone): nothing can be recorded, so say so loudly.
      console.error(`a2a-node: could not record the outcome of task ${task.id}: ${(err as Error).message}`);
      this.jobs.delete(task.id);
      job.reject(err);
      return;
    }
    task.status = status;
    if (produced.length > 0) task.artifacts = [...(task.artifacts ?? []), ...produced];
    if (status.message) task.history = [...(task.history ?? []), status.message];
    if (outcome.metadata) task.metadata = { ...task.metadata, ...outcome.metadata };
    this.jobs.delete(task.id);
    job.resolve(task);
  }
}
