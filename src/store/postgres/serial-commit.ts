import { Outcomes } from "../group-commit";

/**
 * Group commit for a store on a server: writes requested during one turn of the event loop are committed
 * together, one group at a time. While a group is being committed, new writes gather for the next one, so
 * the busier the node, the larger its groups; a task's writes are committed in the order they were made,
 * since no group starts before the one ahead of it has ended.
 *
 * Each key (a task) has its own outcome, as in the SQLite group commit (../group-commit.ts): `commitGroup`
 * returns the keys it could not commit with their reasons, and everyone else's promise resolves.
 */
export class SerialGroupCommit<K> {
  private open: Outcomes<K> | undefined;
  private scheduled = false;
  private running: Promise<void> | undefined;

  constructor(private readonly commitGroup: () => Promise<Map<K, unknown>>) {}

  /** Resolves once `key`'s writes requested so far are committed; rejects if they could not be. */
  commit(key: K): Promise<void> {
    const promise = (this.open ??= new Outcomes()).of(key);
    this.schedule();
    return promise;
  }

  /**
   * Withdraws `key` from the group not yet being committed: its writers' promise rejects with `reason` (the
   * caller drops the key's pending writes itself). A group already being committed is not touched.
   */
  drop(key: K, reason: unknown): void {
    this.open?.drop(key, reason);
  }

  /** Resolves once everything requested so far is committed (or failed). */
  async flush(): Promise<void> {
    while (this.open || this.running) {
      if (this.running) await this.running;
      else await this.run();
    }
  }

  private schedule(): void {
    if (this.scheduled || this.running) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      if (!this.running) void this.run();
    });
  }

  private run(): Promise<void> {
    const outcomes = this.open;
    this.open = undefined;
    if (!outcomes) return Promise.resolve();
    this.running = this.commitGroup().then(
      (failed) => outcomes.settle(failed),
      (err) => outcomes.fail(err),
    );
    return this.running.finally(() => {
      this.running = undefined;
      // What gathered while this group was committing goes next, after this turn of the event loop: writes its
      // commit set off (a task's WORKING, then its outcome from an executor that answers at once) join it.
      if (this.open) this.schedule();
    });
  }
}
