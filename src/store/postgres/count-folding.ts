import type { SQL } from "bun";
import type { Logger } from "../../log";
import { reasonOf } from "../../reason";

/**
 * task_counts (see schema.ts) gains rows with every write; it is folded to one row per (owner, state) after
 * this many task writes on this replica, or when a ListTasks summed more rows than COMPACT_ROWS for its caller.
 * Between the two a count sums at most a few thousand small index entries.
 */
const COMPACT_AFTER_WRITES = 2_000;
const COMPACT_ROWS = 1_000;
/** The advisory lock of a compaction (any 64-bit number of our own): one replica folds at a time. */
const COMPACT_LOCK = 0x61326163_6f756e74n;
/** Folds task_counts: the rows a compaction deletes are exactly the rows it sums (see fold). */
const COMPACT_COUNTS = `WITH gone AS (DELETE FROM task_counts RETURNING owner, state, n)
  INSERT INTO task_counts (owner, state, n) SELECT owner, state, sum(n) FROM gone GROUP BY owner, state HAVING sum(n) <> 0`;
/** Folds caller_usage the same way, in the same transaction. */
const COMPACT_USAGE = `WITH gone AS (DELETE FROM caller_usage RETURNING owner, tasks, bytes)
  INSERT INTO caller_usage (owner, tasks, bytes) SELECT owner, sum(tasks), sum(bytes) FROM gone GROUP BY owner HAVING sum(tasks) <> 0 OR sum(bytes) <> 0`;

/**
 * Keeps task_counts and caller_usage (rows of changes, see schema.ts) short: the Postgres task store tells it
 * how much it wrote and how many rows a count summed, and it folds them now and then, in the background.
 */
export class CountFolding {
  private writesSinceCompact = 0;
  private compacting: Promise<void> | undefined;

  constructor(
    private readonly sql: SQL,
    private readonly log: Logger,
  ) {}

  /** A count (ListTasks' totalSize, a caller's usage) summed this many rows: folded soon if too many. */
  summed(rows: number): void {
    if (rows > COMPACT_ROWS) this.compactSoon();
  }

  /** Resolves once a fold in progress has ended. */
  async settled(): Promise<void> {
    await this.compacting;
  }

  /**
   * Folds task_counts to one row per (owner, state), in the background. Safe beside every other write: the
   * DELETE removes only rows committed when it started (a row a concurrent write adds stays, and is summed by
   * the next fold), and the INSERT puts back exactly their sums, in one statement, so a reader sees the rows
   * before the fold or after it, with the same total. One replica folds at a time (a transaction-level
   * advisory lock, tried, not waited for). A fold that fails changes nothing and is tried again later.
   */
  fold(): Promise<void> {
    this.writesSinceCompact = 0;
    this.compacting ??= this.sql
      .begin(async (tx) => {
        const [{ locked }] = await tx`SELECT pg_try_advisory_xact_lock(${COMPACT_LOCK.toString()}::bigint) AS locked`;
        if (locked) {
          await tx.unsafe(COMPACT_COUNTS);
          await tx.unsafe(COMPACT_USAGE);
        }
      })
      .catch((err) =>
        this.log.warn("could not fold the task counts; will try again", {
          reason: reasonOf(err),
        }),
      )
      .finally(() => (this.compacting = undefined));
    return this.compacting;
  }

  /** Counts task writes towards the next fold of task_counts. */
  wrote(tasks: number): void {
    this.writesSinceCompact += tasks;
    if (this.writesSinceCompact >= COMPACT_AFTER_WRITES) this.compactSoon();
  }

  private compactSoon(): void {
    if (!this.compacting) void this.fold();
  }
}
