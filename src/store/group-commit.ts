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
  private open: Outcomes<K> | undefined;

  constructor(
    /**
     * Applies everything pending, isolating failures by key: returns the keys whose writes were not
     * committed, each with its reason. Throwing means nothing pending was committed.
     */
    private readonly flushPending: () => Map<K, unknown>,
  ) {}

  /** Resolves once `key`'s writes requested so far are committed; rejects if they could not be. */
  commit(key: K): Promise<void> {
    return this.schedule().of(key);
  }

  /**
   * Withdraws `key` from the open group: its writers' promise rejects with `reason` (the caller drops the
   * key's pending writes itself), and a later commit(key) starts a new outcome.
   */
  drop(key: K, reason: unknown): void {
    this.open?.drop(key, reason);
  }

  /** Makes sure a group is open: it closes, committing, at the end of this turn of the event loop. */
  schedule(): Outcomes<K> {
    if (this.open) return this.open;
    this.open = new Outcomes();
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
      outcomes?.fail(err);
      return;
    }
    outcomes?.settle(failed);
  }
}

/**
 * The outcomes of one group, by key: the writers of a key share its outcome, settled when the group is
 * committed, each key on its own (see GroupCommit and SerialGroupCommit).
 */
export class Outcomes<K> extends Map<K, Outcome> {
  /** The promise of `key`'s outcome in this group (made on first use). */
  of(key: K): Promise<void> {
    let outcome = this.get(key);
    if (!outcome) this.set(key, (outcome = newOutcome()));
    return outcome.promise;
  }

  /** Withdraws `key`: its writers' promise rejects with `reason`, and a later of(key) makes a new outcome. */
  drop(key: K, reason: unknown): void {
    const outcome = this.get(key);
    if (!outcome) return;
    this.delete(key);
    outcome.reject(reason);
  }

  /** The group was committed: the keys in `failed` reject with their reasons, every other key resolves. */
  settle(failed: Map<K, unknown>): void {
    for (const [key, o] of this) {
      if (failed.has(key)) o.reject(failed.get(key));
      else o.resolve();
    }
  }

  /** Nothing of the group was committed: every key rejects with `err`. */
  fail(err: unknown): void {
    for (const o of this.values()) o.reject(err);
  }
}

/** A writer's promise and the means to settle it. */
export interface Outcome {
  promise: Promise<void>;
  resolve(): void;
  reject(err: unknown): void;
}

function newOutcome(): Outcome {
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
