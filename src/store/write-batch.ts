/**
 * Group commit: writes requested during one turn of the event loop are applied together in one SQLite
 * transaction, and every caller of that turn shares one promise that resolves once the transaction has
 * committed. Under load, tens of tasks share a commit instead of paying one each; idle, a write waits at most
 * until the end of the turn.
 */
export class GroupCommit {
  private next: { promise: Promise<void>; resolve(): void; reject(err: unknown): void } | undefined;

  constructor(
    /** Applies everything pending inside one transaction; throws on failure. */
    private readonly flushPending: () => unknown,
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
      // The group closes at the end of this turn of the event loop: everything the requests read in this
      // turn asked for shares one commit. (Holding it open longer, measured, cost more in latency than it
      // saved in commits.)
      setImmediate(() => this.flush());
    }
    return this.next.promise;
  }

  /** Commits now (used on close, so nothing requested is left behind). */
  flush(): void {
    const batch = this.next;
    this.next = undefined;
    try {
      this.flushPending();
    } catch (err) {
      batch?.reject(err);
      return;
    }
    batch?.resolve();
  }
}
