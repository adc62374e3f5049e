import type { AgentExecutor } from "../executors/executor";
import type { Message, Task } from "../protocol/types";
import { stop, type Job, type StartOptions } from "./job";
import type { TaskLeases } from "./leases";
import { recoverUnfinished } from "./recovery";
import { WriteRefused, type TaskStore, type UnfinishedTask } from "./task-store";
import { reasonOf } from "../reason";

/** Orphaned tasks claimed at a time (the rest are claimed at the next renewal). */
const ORPHANS_PER_CLAIM = 100;
/**
 * How soon a task whose writes could not be stored is tried again (see recoverUnstored), doubling while the
 * store still fails, up to the most: a database back after an outage is used within seconds.
 */
const RECOVERY_FIRST_MS = 250;
const RECOVERY_MOST_MS = 5_000;

/** What the lease keeper asks of the runner it keeps tasks for. */
export interface LeaseKeeperHost {
  /** The execution of a task running here, if any. */
  job(taskId: string): Job | undefined;
  /** Whether the runner still takes tasks (not shutting down). */
  accepting(): boolean;
  /** Runs a recovered task (see TaskRunner.start). */
  start(task: Task, message: Message, owner: string, options: StartOptions): void;
}

/**
 * Which unfinished tasks are this process's to run, and taking up those nobody runs: at start (what the last
 * run left), with leases on a store other processes share (renewed, claimed from processes that died, let go
 * when a task ends here), and for tasks whose writes could not be stored (not even their failure), recovered
 * as after a restart once the store takes writes again. Without leases every unfinished task is this one's.
 */
export class LeaseKeeper {
  /** Tasks whose execution ended here without any outcome stored, waiting to be recovered (see recoverUnstored). */
  private readonly unstored = new Map<string, { task: UnfinishedTask; reason: string }>();
  private recoveryTimer: ReturnType<typeof setTimeout> | undefined;
  private recoveryDelay = RECOVERY_FIRST_MS;
  private stopped = false;

  constructor(
    private readonly store: TaskStore,
    private readonly executor: AgentExecutor,
    private readonly leases: TaskLeases | undefined,
    private readonly host: LeaseKeeperHost,
  ) {}

  /** Whether tasks are held by leases (a store other processes share). */
  get shared(): boolean {
    return this.leases !== undefined;
  }

  /** With leases, how long they last: a process that holds a task and is alive answers within it. */
  get ttlMs(): number | undefined {
    return this.leases?.ttlMs;
  }

  /**
   * Tasks whose writes could not be stored, not even their failure, waiting for the store to take writes again
   * (see recoverUnstored); `reason` is the latest failure.
   */
  unstoredTasks(): { count: number; reason?: string } {
    let reason: string | undefined;
    for (const u of this.unstored.values()) reason = u.reason;
    return { count: this.unstored.size, reason };
  }

  /**
   * Picks up what the last run of the node left unfinished (see recoverUnfinished); with leases, only the
   * tasks no live process holds, claimed for this one.
   */
  async recover(): Promise<{ resumed: number; failed: number }> {
    const tasks = this.leases ? await this.leases.claimOrphans(ORPHANS_PER_CLAIM) : undefined;
    return this.resume(tasks);
  }

  /**
   * Holds the task for this process before it runs here (a follow-up message): false when another live
   * process holds it, which must then be the one to run it. Always true without leases.
   */
  async hold(taskId: string): Promise<boolean> {
    // A task given up here after its writes failed, now taken again: its lease must not be let go meanwhile.
    this.unstored.delete(taskId);
    return this.leases ? this.leases.acquire(taskId) : true;
  }

  /** Lets go of a task: it ended here, is handed over, or was held for a moment and not run after all. */
  release(taskId: string): void {
    void this.leases?.release(taskId).catch(() => {}); // an unreleased lease only runs out
  }

  /**
   * With leases: renews this process's leases every third of their time, stops (without writing anything)
   * the executions of tasks it lost to another process meanwhile, and claims and resumes the tasks of
   * processes that died. Returns a function that stops it.
   */
  keep(onError: (err: unknown) => void): () => void {
    const leases = this.leases;
    if (!leases) return () => {};
    let renewing = false;
    let claiming = false;
    // Renewed until the runner is stopped (executions in their shutdown grace still hold their tasks).
    const renew = async () => {
      for (const id of await leases.renew()) {
        const job = this.host.job(id);
        if (!job) continue;
        job.handedOver = true;
        stop(job, "shutdown", "another replica took this task over");
      }
    };
    // Unstored tasks are let go in the same sequence as the claims (see abandonUnstored).
    const claim = async () => {
      await this.abandonUnstored(leases);
      if (this.host.accepting()) await this.resume(await leases.claimOrphans(ORPHANS_PER_CLAIM));
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

  /**
   * A task whose execution ended here with nothing of its outcome stored, or whose recovery could not be
   * stored: never held here any more. With leases its lease is let go (at once, or it runs out if the
   * database does not answer) and whichever process claims it next applies the restart policy; alone, this
   * process recovers it itself once the store takes writes again. Tried again with a growing delay meanwhile.
   */
  keepUnstored(task: UnfinishedTask, reason: string): void {
    const again = this.unstored.has(task.id);
    this.unstored.set(task.id, { task, reason });
    // With leases: not renewed from now on; the lease itself goes at the next renewal (see abandonUnstored).
    if (this.leases) return this.leases.forget([task.id]);
    if (!again) this.recoveryDelay = RECOVERY_FIRST_MS;
    this.scheduleRecovery();
  }

  /** At shutdown: unstored tasks stay as stored; the next start (or, with leases, another process) takes them up. */
  stop(): void {
    this.stopped = true;
    clearTimeout(this.recoveryTimer);
    this.recoveryTimer = undefined;
  }

  private resume(tasks: UnfinishedTask[] | undefined): Promise<{ resumed: number; failed: number }> {
    return recoverUnfinished(
      this.store,
      this.executor,
      (task, message, owner, options) => this.host.start(task, message, owner, options),
      tasks,
      (id) => void this.leases?.release(id).catch(() => {}),
      (task, err) => {
        // Refused: another process holds it now, or it is not stored at all; nothing is this process's to do.
        if (err instanceof WriteRefused) this.release(task.id);
        else this.keepUnstored(task, reasonOf(err));
      },
    );
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
        if (this.host.job(id)) return void this.unstored.delete(id);
        return leases.abandon(id).then(
          () => void this.unstored.delete(id),
          () => {},
        );
      }),
    );
  }

  private scheduleRecovery(): void {
    if (this.recoveryTimer || this.stopped || this.leases || this.unstored.size === 0) return;
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
      await this.resume(entries.filter(([id]) => !this.host.job(id)).map(([, u]) => u.task));
      // Started, ended or found settled: done. (One that failed again was put back by keepUnstored, anew.)
      for (const [id, u] of entries) if (this.unstored.get(id) === u) this.unstored.delete(id);
    } catch (err) {
      // A read failed (the store does not answer): what was not taken up is tried again.
      for (const [, u] of entries) u.reason = reasonOf(err);
    }
    this.recoveryTimer = undefined;
    this.recoveryDelay =
      this.unstored.size < before ? RECOVERY_FIRST_MS : Math.min(RECOVERY_MOST_MS, this.recoveryDelay * 2);
    this.scheduleRecovery();
  }
}
