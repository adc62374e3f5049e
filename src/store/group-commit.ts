import type { Database } from "bun:sqlite";
import { WriteRefused } from "../tasks/task-store";

/**
 * Group commit: writes requested during one turn of the event loop are applied together in one SQLite
 * transaction. Under load, tens of tasks share a commit instead of paying one each; idle, a write waits at most
 * until the end of the turn.
 *
 * Each key (a task) has its own outcome: the writers of one task share a promise that resolves once that
 * task's writes are committed, or rejects with why they could not be. One task's failure is never another's:
 * `flushPending` reports the keys it could not commit, and everyone else's promise resolves.
 */
export class GroupCommit<K> {
  /** The outcomes of the group being collected, by key; undefined when no group is open. */
  private open: Map<K, Outcome> | undefined;

  constructor(
    /**
     * Applies everything pending, isolating failures by key: returns the keys whose writes were not
     * committed, each with its reason. Throwing means nothing pending was committed.
     */
    private readonly flushPending: () => Map<K, unknown>,
  ) {}

  /** Resolves once `key`'s writes requested so far are committed; rejects if they could not be. */
  commit(key: K): Promise<void> {
    const open = this.schedule();
    let outcome = open.get(key);
    if (!outcome) open.set(key, (outcome = newOutcome()));
    return outcome.promise;
  }

  /**
   * Withdraws `key` from the open group: its writers' promise rejects with `reason` (the caller drops the
   * key's pending writes itself), and a later commit(key) starts a new outcome.
   */
  drop(key: K, reason: unknown): void {
    const outcome = this.open?.get(key);
    if (!outcome) return;
    this.open!.delete(key);
    outcome.reject(reason);
  }

  /** Makes sure a group is open: it closes, committing, at the end of this turn of the event loop. */
  schedule(): Map<K, Outcome> {
    if (this.open) return this.open;
    this.open = new Map();
    // Everything the requests read in this turn asked for shares one commit. (Holding it open longer,
    // measured, cost more in latency than it saved in commits.)
    setImmediate(() => this.flush());
    return this.open;
  }

  /** Commits now (used on close, so nothing requested is left behind). */
  flush(): void {
    const outcomes = this.open;
    this.open = undefined;
    let failed: Map<K, unknown>;
    try {
      failed = this.flushPending();
    } catch (err) {
      for (const o of outcomes?.values() ?? []) o.reject(err);
      return;
    }
    if (!outcomes) return;
    for (const [key, o] of outcomes) {
      if (failed.has(key)) o.reject(failed.get(key));
      else o.resolve();
    }
  }
}

/** A writer's promise and the means to settle it. */
export interface Outcome {
  promise: Promise<void>;
  resolve(): void;
  reject(err: unknown): void;
}

export function newOutcome(): Outcome {
  let resolve!: () => void;
  let reject!: (err: unknown) => void;
  const promise = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  // A writer may not wait (a write merged into a later outcome of the same task); its failure then surfaces
  // through the write that is awaited, so never let it become an unhandled rejection.
  promise.catch(() => {});
  return { promise, resolve, reject };
}

/**
 * Applies every item in one transaction (continuing the one already open, if any). An item whose `apply`
 * throws WriteRefused is left out: it applied nothing, and the others go on. If anything else fails (a
 * statement, or the COMMIT itself: disk full, I/O error, a constraint), the whole transaction is rolled back
 * and each item is tried again in a transaction of its own, so that only the items that fail again are lost.
 * Never throws: returns the keys of the items that were not committed, each with its reason.
 */
export function commitEach<K, V>(
  sqlite: Database,
  items: [K, V][],
  apply: (key: K, value: V) => void,
  onGroupFailure?: (err: unknown) => void,
): Map<K, unknown> {
  const failed = new Map<K, unknown>();
  if (items.length === 0 && !sqlite.inTransaction) return failed;
  try {
    // IMMEDIATE: the write lock is waited for (busy_timeout) here, never refused at once half-way (see
    // SqliteTaskStore.openGroupTransaction).
    if (!sqlite.inTransaction) sqlite.exec("BEGIN IMMEDIATE");
    for (const [key, value] of items) {
      try {
        apply(key, value);
      } catch (err) {
        if (!(err instanceof WriteRefused)) throw err;
        failed.set(key, err);
      }
    }
    sqlite.exec("COMMIT");
    return failed;
  } catch (err) {
    rollback(sqlite);
    onGroupFailure?.(err);
  }
  for (const [key, value] of items) {
    if (failed.has(key)) continue;
    try {
      sqlite.exec("BEGIN IMMEDIATE");
      apply(key, value);
      sqlite.exec("COMMIT");
    } catch (err) {
      rollback(sqlite);
      failed.set(key, err);
    }
  }
  return failed;
}

/** Ends the open transaction, if a failure has not already ended it (SQLite rolls back by itself on some). */
function rollback(sqlite: Database): void {
  if (!sqlite.inTransaction) return;
  try {
    sqlite.exec("ROLLBACK");
  } catch {
    // Nothing more can be done here; the connection's next BEGIN reports what is wrong.
  }
}
