import type { Database } from "bun:sqlite";

/**
 * Runs `write` in a transaction of its own that takes the write lock as it begins (BEGIN IMMEDIATE, waiting
 * out another connection's write with busy_timeout), once the task store's group transaction on this
 * connection has ended.
 *
 * Why: the group commit (SqliteTaskStore) opens its transaction at a turn's first idempotency read and commits
 * it at the end of the turn, so until then it is a read snapshot. A write made inside it after another
 * connection committed (the readiness probe writes health_probe through its own) fails at once with
 * SQLITE_BUSY_SNAPSHOT, which no busy timeout waits out: callers got -32603 for a webhook they created or
 * deleted. The group's own writes recover by retrying after a rollback; a write of another store cannot roll
 * that transaction back, so it waits for its end: the flush is the turn's first setImmediate, so one turn at most.
 * The write is then committed when this resolves.
 */
export async function writeAlone<T>(sqlite: Database, write: () => T): Promise<T> {
  while (sqlite.inTransaction) await new Promise<void>((resolve) => setImmediate(resolve));
  return sqlite.transaction(write).immediate();
}
