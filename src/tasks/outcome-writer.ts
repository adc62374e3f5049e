import type { ExecutionOutcome, StopCause } from "../executors/executor";
import type { Message, StreamResponse, Task, TaskState, TaskStatus } from "../protocol/types";
import { accumulate, agentMessage } from "./artifacts";
import { authNote } from "./auth-retry";
import { now } from "../clock";
import type { Job } from "./job";
import type { LeaseKeeper } from "./lease-keeper";
import type { TaskLifecycle } from "./lifecycle";
import type { EventPublisher } from "./publisher";
import { TaskRefusal } from "./refusal";
import { DroppedWrite, HeldElsewhere, WriteRefused, type TaskStore } from "./task-store";
import { reasonOf } from "../reason";

/** What the outcome writer asks of the runner whose executions it ends. */
export interface OutcomeWriterHost {
  /** Emits an event of the job's, its write watched (see RunningJobs.track). */
  emit(job: Job, response: StreamResponse, rowUpdated?: boolean): Promise<void>;
  /** The execution is over here: the runner forgets it. */
  forget(job: Job): void;
}

/**
 * The one place a task's final state is written: the executor's outcome (its status, artifacts, reply and
 * metadata), or FAILED when part of the task could not be stored, once, after which the task's waiters hear
 * its end; and the end of a task nothing executes here (endIdle). When not even FAILED can be stored, the task is left
 * as stored for recovery (see LeaseKeeper).
 */
export class OutcomeWriter {
  private readonly replies = new WeakMap<Task, Message>();

  constructor(
    private readonly store: TaskStore,
    private readonly events: EventPublisher,
    private readonly keeper: LeaseKeeper,
    private readonly executorKind: string,
    private readonly lifecycle: TaskLifecycle | undefined,
    private readonly host: OutcomeWriterHost,
  ) {}

  /** The Message an executor answered a settled task with (SendMessage returns it instead of the Task). */
  replyOf(task: Task): Message | undefined {
    return this.replies.get(task);
  }

  /**
   * Writes the outcome once; resolves `done` (and the turn) after it is committed. A task that lost a write
   * ends FAILED instead; if the outcome cannot be stored, FAILED is tried once more without the outcome's
   * data. If even that cannot be stored, `done` and the turn reject with a not-stored refusal saying so, and
   * the task is left as stored for recovery (see strand), or, when the store refused it (another process holds
   * it now, or it was never stored), left to whoever holds it.
   */
  async record(job: Job, outcome: ExecutionOutcome): Promise<void> {
    const { task } = job;
    job.final = true;
    try {
      if (job.lost !== undefined)
        await this.writeFailed(
          job,
          `the node could not store part of this task, so its result is not kept: ${job.lost}`,
        );
      else {
        try {
          await this.writeOutcome(job, outcome);
        } catch (err) {
          // Dropped: a write before the outcome failed (see RunningJobs.track); else the outcome's own write failed.
          const what = err instanceof DroppedWrite ? "part of this task" : "this task's outcome";
          await this.writeFailed(
            job,
            `the node could not store ${what}, so its result is not kept: ${job.lost ?? reasonOf(err)}`,
          );
        }
      }
    } catch (err) {
      if (err instanceof WriteRefused) {
        const error = notStored(task.id, job.lost ?? err);
        for (const s of job.subscribers) s.fail(error);
        this.host.forget(job);
        // Another process holds the task now and runs it to its end: nothing ended here.
        if (err instanceof HeldElsewhere) this.lifecycle?.leftForRestart(task, job.caller);
        else this.finished(job, "TASK_STATE_FAILED");
        job.turn.reject(error);
        job.done.reject(error);
      } else this.strand(job, job.lost ?? reasonOf(err));
      return;
    }
    this.host.forget(job);
    this.finished(job, job.task.status.state);
    this.keeper.release(task.id);
    job.turn.resolve(job.task);
    job.done.resolve(job.task);
  }

  /**
   * Ends a task nothing executes here in `state` (CANCELED, or FAILED for one that could not be started after
   * it was recorded): records the state, its message and its event. Resolves once committed. `peer`: the task's
   * owner, for the lifecycle's watchers.
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
      () => this.lifecycle?.finished(task, peer, state, 0, 0),
      () => {},
    );
    return stored;
  }

  /**
   * Nothing of the task's end could be stored (the database does not take writes): the execution is over here,
   * its callers are refused (not-stored), and the task, as stored (WORKING or SUBMITTED), goes to recovery
   * (keepUnstored): this process neither holds it nor reports it finished, so its view and the database's agree.
   */
  private strand(job: Job, reason: string): void {
    const { task } = job;
    const error = TaskRefusal.notStored(
      `the node could not store task ${task.id} (${reason}); it is taken up again as after a restart once the database takes writes: follow it with GetTask or SubscribeToTask`,
    );
    for (const s of job.subscribers) s.fail(error);
    job.subscribers.clear();
    this.host.forget(job);
    this.lifecycle?.notStored?.(task, job.caller, reason);
    job.turn.reject(error);
    job.done.reject(error);
    this.keeper.keepUnstored(
      { id: task.id, owner: job.caller, state: task.status.state, executor: this.executorKind },
      reason,
    );
  }

  private finished(job: Job, state: TaskState): void {
    this.lifecycle?.finished(
      job.task,
      job.caller,
      state,
      (performance.now() - job.acceptedAt) / 1000,
      Math.max(0, job.executorMs) / 1000,
    );
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
      void this.host.emit(job, {
        artifactUpdate: { taskId: task.id, contextId: task.contextId, artifact: a, lastChunk: true },
      });
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
      this.store.record(task.id, {
        status,
        history: status.message ? [status.message] : undefined,
        artifacts: task.artifacts,
        metadata: outcome.metadata,
        state: note,
      }),
      this.host.emit(job, finalEvent, true),
    ]);
  }

  /**
   * The task's writes or its outcome could not be stored: records FAILED with `message`, with nothing of the
   * outcome's own data (which may be what could not be stored), its event numbered after the last stored one
   * (what was not stored is dropped first, see RunningJobs.track). The live task becomes the stored one. Throws if this
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
    const status: TaskStatus = {
      state: "TASK_STATE_FAILED",
      timestamp: now(),
      message: agentMessage(task.id, task.contextId, message),
    };
    await Promise.all([
      this.store.record(task.id, { status, history: [status.message!] }),
      this.events.emit(job, { statusUpdate: { taskId: task.id, contextId: task.contextId, status } }, true),
    ]);
    job.task = (await this.store.snapshot(task.id, job.caller))?.task ?? { ...task, status };
  }
}

/**
 * The outcome of an execution as the node records it: where the node stopped it (a limit, the output cap, the
 * deadline, a cancel), the node's own outcome, and otherwise the executor's. Undefined when the node's shutdown
 * stopped it: whether the task ends FAILED or is left for the next start is the runner's to say.
 */
export function stoppedOutcome(
  job: Job,
  cause: StopCause | undefined,
  outcome: ExecutionOutcome,
  limits: { outputCapBytes?: number; deadlineMs?: number },
): ExecutionOutcome | undefined {
  if (job.stopped === "limit") return { state: "TASK_STATE_FAILED", message: `stopped: ${job.limitReason}` };
  if (job.stopped === "output-cap")
    return {
      state: "TASK_STATE_COMPLETED",
      message: `output cut at ${limits.outputCapBytes} bytes (this node's output cap)`,
      metadata: { ...outcome.metadata, truncated: true, outputCapBytes: limits.outputCapBytes },
    };
  if (job.stopped === "deadline") {
    const seconds = Math.round((limits.deadlineMs ?? 0) / 1000);
    return {
      state: "TASK_STATE_FAILED",
      message: `stopped: the task ran longer than this node's deadline of ${seconds} s`,
    };
  }
  if (cause === "canceled") {
    const reason = job.cancelReason ?? "canceled";
    return { state: "TASK_STATE_CANCELED", message: outcome.stopNote ? `${reason}; ${outcome.stopNote}` : reason };
  }
  if (cause === "shutdown") return undefined;
  return outcome;
}

/** The refusal a caller gets when its task could not be stored (not-stored), naming the task and the store's reason. */
export function notStored(taskId: string, err: unknown): TaskRefusal {
  if (err instanceof TaskRefusal) return err;
  return TaskRefusal.notStored(`the node could not store task ${taskId}, so it is not kept: ${reasonOf(err)}`);
}
