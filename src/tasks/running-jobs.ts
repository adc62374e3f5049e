import type { StreamResponse } from "../protocol/types";
import type { EventStream } from "./event-stream";
import { stop, type Job } from "./job";
import type { EventPublisher } from "./publisher";
import type { TaskStore } from "./task-store";
import { reasonOf } from "../reason";

/**
 * The executions of this process, by task id, from their start (or queueing) to their recorded outcome, and the
 * watch on their writes: a task one of whose writes is not stored is not whole on disk, so its execution stops
 * (see track).
 */
export class RunningJobs {
  private readonly jobs = new Map<string, Job>();

  constructor(
    private readonly store: TaskStore,
    private readonly events: EventPublisher,
    /** Ends a job that lost a write while it waited for a slot (never ran); false when it is not queued. */
    private readonly endQueued: (job: Job) => boolean,
  ) {}

  get(taskId: string): Job | undefined {
    return this.jobs.get(taskId);
  }

  has(taskId: string): boolean {
    return this.jobs.has(taskId);
  }

  add(job: Job): void {
    this.jobs.set(job.task.id, job);
  }

  /** The execution is over here (see OutcomeWriterHost). */
  forget(job: Job): void {
    this.jobs.delete(job.task.id);
  }

  all(): Job[] {
    return [...this.jobs.values()];
  }

  /** Executions waiting for an answer (held here without a slot). */
  waitingForInput(): number {
    let n = 0;
    for (const job of this.jobs.values()) if (job.waiting) n++;
    return n;
  }

  /** Whether an execution here waits for the next message of this task; `caller`: from that caller. */
  isWaitingForInput(taskId: string, caller?: string): boolean {
    const job = this.jobs.get(taskId);
    return job?.waiting !== undefined && (caller === undefined || job.caller === caller);
  }

  /**
   * Adds a subscriber to the caller's task running here; it receives every event committed from now on. False if
   * the task is not running here (it is settled and nothing executes it).
   */
  subscribe(taskId: string, caller: string, stream: EventStream): boolean {
    const job = this.jobs.get(taskId);
    if (!job || job.caller !== caller) return false;
    job.subscribers.add(stream);
    // Subscribing to a task that waits for input means following it through the answer to its end.
    if (job.waiting) job.untilTerminal.add(stream);
    return true;
  }

  /** Emits an event of the job's (see EventPublisher.emit), its write watched. */
  emit(job: Job, response: StreamResponse, rowUpdated = false): Promise<void> {
    return this.track(job, this.events.emit(job, response, rowUpdated));
  }

  /**
   * Watches a write of the task: if it is not stored, the task is not whole on disk, so its execution stops and
   * it cannot end COMPLETED (see OutcomeWriter.record). What the task wrote after it and is not committed yet is
   * dropped (stored after the gap, its events would skip a number), and nothing more of the execution is written:
   * its end continues from what is stored. Returns the write.
   */
  track(job: Job, write: Promise<void>): Promise<void> {
    write.catch((err) => {
      if (job.lost !== undefined) return;
      job.lost = reasonOf(err);
      this.store.discard(job.task.id);
      if (job.final) return; // the outcome being written was dropped too: the outcome writer writes FAILED instead
      if (!this.endQueued(job)) stop(job, "unstored", `the node could not store this task: ${job.lost}`);
    });
    return write;
  }
}
