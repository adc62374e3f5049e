import type { AgentExecutor } from "../executors/executor";
import type { Admission } from "./admission";
import { stop, type Job } from "./job";
import type { LeaseKeeper } from "./lease-keeper";
import type { TaskLifecycle } from "./lifecycle";
import type { OutcomeWriter } from "./outcome-writer";
import type { RunningJobs } from "./running-jobs";

/**
 * The node stopping: no task is taken any more, running ones get a grace period, then the rest are stopped.
 * Each ends in a recorded state (queued and stopped tasks FAILED, saying the node stopped), except where the
 * next start of the node (or, with leases, another process) takes over: those are left as stored (see
 * leftForRestart).
 */
export class Shutdown {
  constructor(
    private readonly admission: Admission,
    private readonly jobs: RunningJobs,
    private readonly outcomes: OutcomeWriter,
    private readonly keeper: LeaseKeeper,
    private readonly executor: AgentExecutor,
    private readonly lifecycle: TaskLifecycle | undefined,
  ) {}

  /**
   * Stops taking tasks, gives running ones `graceMs` to finish, then stops the rest: a task waiting for input
   * stays INPUT_REQUIRED (its answer starts it again), and one whose executor re-attaches to remote work stays
   * as stored (the restart re-attaches to it); the others end FAILED.
   */
  async run(graceMs: number): Promise<void> {
    this.admission.accepting = false;
    for (const job of this.admission.queue.drain()) {
      // With leases another process starts it (see leftForRestart); alone, it ends here.
      if (this.keeper.shared && this.leftForRestart(job)) this.detach(job);
      else
        void this.outcomes.record(job, {
          state: "TASK_STATE_FAILED",
          message: "interrupted: the node shut down before this task started",
        });
    }
    const pending = this.jobs
      .all()
      .filter((j) => !j.waiting)
      .map((j) => j.done.promise);
    if (pending.length > 0) {
      let timer: ReturnType<typeof setTimeout> | undefined;
      const grace = new Promise<void>((r) => (timer = setTimeout(r, graceMs)));
      await Promise.race([Promise.allSettled(pending), grace]);
      clearTimeout(timer);
    }
    for (const job of this.jobs.all()) stop(job, "shutdown", "node shutting down");
    await Promise.allSettled(this.jobs.all().map((j) => j.done.promise));
    // Unstored tasks stay as stored: the next start (or, with leases, another process) takes them up.
    this.keeper.stop();
  }

  /**
   * Whether a task stopped by the shutdown is better left as stored for the next start than ended FAILED: one
   * waiting for input (its answer restarts it), and one of an executor that re-attaches to remote work.
   */
  leftForRestart(job: Job): boolean {
    if (job.handedOver) return true;
    // With leases another process takes the task over (its lease is released below) unless it must fail.
    if (this.keeper.shared && (this.executor.onRestart ?? "fail") !== "fail") return true;
    return job.task.status.state === "TASK_STATE_INPUT_REQUIRED" || this.executor.onRestart === "reattach";
  }

  /** Ends the execution without an outcome: the stored task is what the next start of the node sees. */
  detach(job: Job): void {
    this.lifecycle?.leftForRestart(job.task, job.caller);
    this.jobs.forget(job);
    // Handed over: another process claims it (at once, since nobody holds it now).
    if (!job.handedOver) this.keeper.release(job.task.id);
    for (const s of job.subscribers) s.end();
    job.subscribers.clear();
    job.turn.resolve(job.task);
    job.done.resolve(job.task);
  }
}
