import type { UnfinishedTask } from "./task-store";

/**
 * Which process runs which task, for a store several processes share (replicas on one database). A process
 * holds a lease on each task it runs and renews them together; when it dies its leases run out and another
 * process claims the tasks, and runs them again, re-attaches or fails them as the executor's restart policy
 * says. A store that honours leases refuses the writes of a process to a task another live process holds, so
 * one that stalled past its leases cannot write over the one that took its tasks: one runner at a time.
 */
export interface TaskLeases {
  /** How long a lease lasts without renewal (ms); renewals come every third of it. */
  readonly ttlMs: number;
  /** Holds the task for this process, unless another live process does; true when held. */
  acquire(taskId: string): Promise<boolean>;
  /** Lets the task go (it ended here, or is handed over): another process may claim it at once. */
  release(taskId: string): Promise<void>;
  /**
   * Stops holding the task (it is not renewed from now on) and deletes its lease, so that any process may
   * claim it; if the store cannot be reached, the lease runs out by itself. For a task whose execution ended
   * here with no outcome stored (see TaskRunner): another process, or this one, claims it and applies the
   * restart policy. Rejects when the lease could not be deleted (call it again).
   */
  abandon(taskId: string): Promise<void>;
  /** Stops holding these tasks here (their leases are left as they are: deleted by the store, or abandoned). */
  forget(taskIds: Iterable<string>): void;
  /** Renews the lease of every task this process holds; returns those it held but no longer does (taken over). */
  renew(): Promise<string[]>;
  /** Claims unfinished tasks nobody holds (their process died), up to `limit`, oldest first. */
  claimOrphans(limit: number): Promise<UnfinishedTask[]>;
}
