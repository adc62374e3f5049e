/**
 * Group commit: writes requested during one turn of the event loop are applied together in one SQLite
 * transaction, and every caller of that turn shares one promise that resolves once the transaction has
 * committed. Under load, tens of tasks share a commit instead of paying one each; idle, a write waits at most
 * until the end of the turn.
 */
export class GroupCommit {
  private next: { promise: Promise<void>; resolve(): void; reject(err: unknown): void } | undefined;
  /** Tasks in the last group: when several arrive together, waiting a moment gathers more of them. */
  private lastGroupSize = 0;

  constructor(
    /** Applies everything pending inside one transaction and says how many tasks it wrote; throws on failure. */
    private readonly flushPending: () => number,
  ) {}

  /** Resolves once everything requested so far is committed. */
  commit(): Promise<void> {
    if (!this.next) {
      let resolve!: () => void;
      let reject!: (err: unknown) => void;
      const promise = new Promise<void>((res, rej) => {
        resolve = res;
        reject = rej;
      });
      // A caller may not wait (a write merged into a later outcome); its failure then surfaces through the
      // write that is awaited, so never let it become an unhandled rejection.
      promise.catch(() => {});
      this.next = { promise, resolve, reject };
      // Alone, a write commits at the end of this turn. Under concurrent load (the last group held several
      // tasks), the group stays open for about a millisecond so that one commit serves many more tasks.
      if (this.lastGroupSize > 1) setTimeout(() => this.flush(), 1);
      else setImmediate(() => this.flush());
    }
    return this.next.promise;
  }

  /** Commits now (used on close, so nothing requested is left behind). */
  flush(): void {
    const batch = this.next;
    this.next = undefined;
    try {
      this.lastGroupSize = this.flushPending();
    } catch (err) {
      this.lastGroupSize = 0;
      batch?.reject(err);
      return;
    }
    batch?.resolve();
  }
}
