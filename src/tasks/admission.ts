import { FairQueue } from "./fair-queue";
import type { Job } from "./job";
import { TaskRefusal } from "./refusal";

export interface AdmissionOptions {
  /** Tasks executing at once. */
  maxConcurrent: number;
  /** Tasks allowed to wait (SUBMITTED) for a slot; beyond this new tasks are refused. */
  maxQueued: number;
  /**
   * The part of both one caller may hold (0-1, default 1: no limit), so one peer's stuck tasks cannot lock every
   * other peer out of the node.
   */
  callerShare?: number;
}

/**
 * Which tasks execute now: a bounded number of slots, the rest waiting in a queue served fairly across the
 * callers that sent them, each caller held to its share of both so that one peer's stuck tasks cannot lock
 * every other peer out of the node. A task waiting for input holds no slot.
 */
export class Admission {
  private running = 0;
  private readonly runningBy = new Map<string, number>();
  private readonly perCallerRunning: number;
  private readonly perCallerQueued: number;
  readonly queue: FairQueue<Job>;
  /** Cleared at shutdown: no task is taken after. */
  accepting = true;

  constructor(private readonly options: AdmissionOptions) {
    const share = options.callerShare ?? 1;
    this.perCallerRunning = Math.max(1, Math.ceil(options.maxConcurrent * share));
    this.perCallerQueued = Math.max(1, Math.ceil(options.maxQueued * share));
    this.queue = new FairQueue((job) => job.caller);
  }

  /** Tasks holding a slot. */
  get runningCount(): number {
    return this.running;
  }

  /** Refuses (busy, before anything is committed) when the node cannot take another task from `caller`. */
  assertCapacity(caller: string): void {
    if (!this.accepting)
      throw TaskRefusal.busy("this node is shutting down; retry against it later or use another peer");
    if (this.running >= this.options.maxConcurrent && this.queue.size >= this.options.maxQueued)
      throw TaskRefusal.busy(
        `this node is at capacity (${this.running} tasks running, ${this.queue.size} waiting); retry later`,
      );
    const running = this.runningBy.get(caller) ?? 0;
    const queued = this.queue.sizeOf(caller);
    if (running >= this.perCallerRunning && queued >= this.perCallerQueued)
      throw TaskRefusal.busy(
        `${caller} already has ${running} tasks running and ${queued} waiting on this node, its share of it; retry when some have finished`,
      );
  }

  hasSlotFor(caller: string): boolean {
    return this.running < this.options.maxConcurrent && (this.runningBy.get(caller) ?? 0) < this.perCallerRunning;
  }

  /** Gives `job` a slot (once: a job that holds one keeps it). */
  acquire(job: Job): void {
    if (job.counted) return;
    job.counted = true;
    this.running++;
    this.runningBy.set(job.caller, (this.runningBy.get(job.caller) ?? 0) + 1);
  }

  /** Gives back a job's slot, and runs (`run`) the queued jobs that may take the free slots, one by one. */
  release(job: Job, run: (next: Job) => void): void {
    if (!job.counted) return;
    job.counted = false;
    this.running--;
    const n = (this.runningBy.get(job.caller) ?? 1) - 1;
    if (n === 0) this.runningBy.delete(job.caller);
    else this.runningBy.set(job.caller, n);
    while (this.running < this.options.maxConcurrent) {
      const next = this.queue.shift((caller) => (this.runningBy.get(caller) ?? 0) < this.perCallerRunning);
      if (!next) break;
      // Run at once, before the next is picked: the run takes its slot as it starts.
      run(next);
    }
  }
}
