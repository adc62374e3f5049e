import type { Logger } from "../log";
import type { TaskStore } from "./task-store";
import { reasonOf } from "../reason";

export interface RetentionOptions {
  /** Finished tasks older than this are deleted; 0 keeps them forever. */
  maxAgeMs: number;
  /** Tasks deleted per batch: small, so a batch never holds the database (or the event loop) for long. */
  batch?: number;
  /** Time between sweeps once the backlog is cleared. */
  intervalMs?: number;
  /** Told the ids of each deleted batch, to forget what other stores keep for them (webhooks). */
  forget?(taskIds: string[]): Promise<void> | void;
  log?: Logger;
  now?: () => number;
}

export const RETENTION_DEFAULTS = { batch: 200, intervalMs: 10 * 60_000 } as const;

/**
 * Keeps a node that runs for months from growing without bound: finished tasks older than the retention age
 * are deleted in small batches, in the background. A sweep that finds a full batch goes on at the next turn of
 * the event loop (a backlog of a million tasks is worked off without stalling requests in between); one that
 * finds less waits for the next interval.
 */
export class RetentionSweeper {
  private timer: ReturnType<typeof setTimeout> | undefined;
  private stopped = false;
  private running: Promise<number> | undefined;

  constructor(
    private readonly store: Pick<TaskStore, "deleteFinished">,
    private readonly options: RetentionOptions,
  ) {}

  /** Starts sweeping (a first sweep right away). Does nothing when retention is off. */
  start(): void {
    if (this.options.maxAgeMs <= 0 || this.timer || this.stopped) return;
    this.schedule(0);
  }

  /** Deletes everything due now, batch by batch; resolves with how many tasks were deleted. */
  sweep(): Promise<number> {
    this.running ??= this.sweepAll().finally(() => (this.running = undefined));
    return this.running;
  }

  /** Stops sweeping; waits for a batch in progress. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    this.timer = undefined;
    await this.running?.catch(() => {});
  }

  private schedule(ms: number): void {
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.sweep().then(
        () => !this.stopped && this.schedule(this.options.intervalMs ?? RETENTION_DEFAULTS.intervalMs),
        (err) => {
          this.options.log?.error("retention sweep failed; trying again at the next interval", {
            reason: reasonOf(err),
          });
          if (!this.stopped) this.schedule(this.options.intervalMs ?? RETENTION_DEFAULTS.intervalMs);
        },
      );
    }, ms);
    this.timer.unref?.();
  }

  private async sweepAll(): Promise<number> {
    const batch = this.options.batch ?? RETENTION_DEFAULTS.batch;
    const before = new Date((this.options.now ?? Date.now)() - this.options.maxAgeMs).toISOString();
    let total = 0;
    for (;;) {
      const ids = await this.store.deleteFinished(before, batch);
      if (ids.length) await this.options.forget?.(ids);
      total += ids.length;
      if (ids.length < batch || this.stopped) break;
      // Let requests in between batches.
      await new Promise<void>((r) => setImmediate(r));
    }
    if (total) this.options.log?.info("deleted finished tasks past the retention age", { count: total, before });
    return total;
  }
}
