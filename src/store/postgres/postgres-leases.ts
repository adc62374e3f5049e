import type { SQL } from "bun";
import type { TaskLeases } from "../../tasks/leases";
import type { UnfinishedTask } from "../../tasks/task-store";

/** Now in epoch milliseconds, by the database's clock: every replica compares leases by the same clock. */
export const DB_NOW_MS = "(extract(epoch from clock_timestamp()) * 1000)::bigint";

/**
 * TaskLeases in the shared database (table task_leases: task, replica, expiry). Times are the database's, so
 * the replicas' own clocks do not matter. PostgresTaskStore writes the lease of a task it creates in the same
 * transaction as the task (a new task is never without one) and refuses writes to a task another live replica
 * holds (see fence).
 */
export class PostgresLeases implements TaskLeases {
  /** The tasks this replica holds, each with the number of the hold (a new one each time it is taken). */
  private readonly held = new Map<string, number>();
  private holds = 0;
  /** Tasks whose cancel request (task_leases.cancel_reason) this replica has passed on, with the hold it was under. */
  private readonly cancelsHeard = new Map<string, number>();
  private cancelListener: ((taskId: string, reason: string) => void) | undefined;

  constructor(
    private readonly sql: SQL,
    /** This replica's name in the table: unique per process. */
    readonly replica: string,
    readonly ttlMs: number,
  ) {}

  /** Marks tasks as held (their leases were written by the store with the tasks). */
  adopt(taskIds: Iterable<string>): void {
    for (const id of taskIds) this.held.set(id, ++this.holds);
  }

  /**
   * Which hold of this replica's the task is under, or undefined when it holds none: two answers alike mean
   * nobody else could have written the task in between (see PostgresTaskStore's row cache).
   */
  holdOf(taskId: string): number | undefined {
    return this.held.get(taskId);
  }

  async acquire(taskId: string): Promise<boolean> {
    const rows = await this.sql.unsafe(
      `INSERT INTO task_leases (task_id, replica, expires_at) VALUES ($1, $2, ${DB_NOW_MS} + $3)
       ON CONFLICT (task_id) DO UPDATE SET replica = excluded.replica, expires_at = excluded.expires_at
       WHERE task_leases.replica = excluded.replica OR task_leases.expires_at < ${DB_NOW_MS}
       RETURNING task_id`,
      [taskId, this.replica, this.ttlMs],
    );
    if (rows.length) this.held.set(taskId, ++this.holds);
    return rows.length > 0;
  }

  async release(taskId: string): Promise<void> {
    // Not held (any more): the store let it go with the task's final write, or it was never this replica's.
    if (!this.held.delete(taskId)) return;
    await this.sql`DELETE FROM task_leases WHERE task_id = ${taskId} AND replica = ${this.replica}`;
  }

  async abandon(taskId: string): Promise<void> {
    this.held.delete(taskId);
    await this.sql`DELETE FROM task_leases WHERE task_id = ${taskId} AND replica = ${this.replica}`;
  }

  /** Tasks whose leases the store deleted with their final writes. */
  forget(taskIds: Iterable<string>): void {
    for (const id of taskIds) this.held.delete(id);
  }

  /**
   * Hears the cancel requests stored with the leases of the tasks this replica holds (see
   * PostgresTaskStore.requestCancel), at each renewal: once per hold of a task. The NOTIFY of a request is the fast
   * path; this is the one that cannot be missed (a notice is lost while the listening connection is down).
   */
  onCancelRequested(listener: (taskId: string, reason: string) => void): void {
    this.cancelListener = listener;
  }

  async renew(): Promise<string[]> {
    // Only the tasks this replica holds: a lease it let go of (abandon) while the database could not be
    // reached is left to run out, never kept alive by a replica that no longer runs its task.
    const ids = [...this.held.keys()];
    if (ids.length === 0) return [];
    const rows = (await this.sql.unsafe(
      `UPDATE task_leases SET expires_at = ${DB_NOW_MS} + $2 WHERE replica = $1 AND task_id = ANY($3::text[]) RETURNING task_id, cancel_reason`,
      [this.replica, this.ttlMs, pgArray(ids)],
    )) as { task_id: string; cancel_reason: string | null }[];
    this.passOnCancels(rows);
    const still = new Set(rows.map((r) => r.task_id));
    // Held when the renewal began and still held now (not released meanwhile), but no longer in the table.
    const lost = ids.filter((id) => !still.has(id) && this.held.has(id));
    for (const id of lost) this.held.delete(id);
    return lost;
  }

  /** The cancel requests found with leases this replica holds, each passed on once per hold. */
  private passOnCancels(rows: { task_id: string; cancel_reason: string | null }[]): void {
    for (const id of this.cancelsHeard.keys()) if (!this.held.has(id)) this.cancelsHeard.delete(id);
    for (const { task_id: id, cancel_reason: reason } of rows) {
      const hold = this.held.get(id);
      if (reason === null || hold === undefined || this.cancelsHeard.get(id) === hold) continue;
      this.cancelsHeard.set(id, hold);
      this.cancelListener?.(id, reason);
    }
  }

  async claimOrphans(limit: number): Promise<UnfinishedTask[]> {
    // Two replicas claiming one task: the second waits on the first's row, then finds its lease live.
    const claimed = (await this.sql.unsafe(
      `WITH orphans AS (
         SELECT t.id FROM tasks t LEFT JOIN task_leases l ON l.task_id = t.id
         WHERE t.state IN ('TASK_STATE_SUBMITTED', 'TASK_STATE_WORKING') AND (l.task_id IS NULL OR l.expires_at < ${DB_NOW_MS})
         ORDER BY t.id LIMIT $3)
       INSERT INTO task_leases (task_id, replica, expires_at) SELECT id, $1, ${DB_NOW_MS} + $2 FROM orphans
       ON CONFLICT (task_id) DO UPDATE SET replica = excluded.replica, expires_at = excluded.expires_at
       WHERE task_leases.expires_at < ${DB_NOW_MS}
       RETURNING task_id`,
      [this.replica, this.ttlMs, limit],
    )) as { task_id: string }[];
    if (claimed.length === 0) return [];
    const ids = claimed.map((r) => r.task_id);
    this.adopt(ids);
    const rows = (await this
      .sql`SELECT id, owner, state, executor FROM tasks WHERE id IN ${this.sql(ids)} ORDER BY id`) as UnfinishedTask[];
    return rows.map(({ id, owner, state, executor }) => ({ id, owner, state, executor }));
  }

  /**
   * The condition a write to task `$n` must meet: no other replica holds a live lease on it (a task nobody
   * holds, waiting for input or idle, takes writes from anyone).
   */
  fence(param: string): string {
    return `NOT EXISTS (SELECT 1 FROM task_leases WHERE task_id = ${param} AND replica <> '${this.replica.replaceAll("'", "''")}' AND expires_at > ${DB_NOW_MS})`;
  }
}

/** A Postgres array literal of text values. */
export function pgArray(items: string[]): string {
  return `{${items.map((s) => `"${s.replaceAll("\\", "\\\\").replaceAll('"', '\\"')}"`).join(",")}}`;
}
