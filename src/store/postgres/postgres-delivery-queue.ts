import type { SQL } from "bun";
import type { DeliveryQueue, QueuedDelivery } from "../../push/delivery-queue";
import { DB_NOW_MS } from "./postgres-leases";

/**
 * The database's time, read once per statement (clock_timestamp() is read per row): the rows one statement
 * writes get one claim expiry, and `load` compares them all with one time. Read per row, a lane's newer row
 * could be taken up a tick before its older one (their claims ran out a millisecond apart) and sent first.
 */
const ONCE = `WITH t AS MATERIALIZED (SELECT ${DB_NOW_MS} AS now_ms)`;

/**
 * The push delivery queue in the shared database: each delivery is claimed by one replica at a time (the one
 * that queued it), which renews its claims; when a replica dies its claims run out and `load` on another
 * replica takes its deliveries up. So each queued event is sent by one replica (at least once overall: a
 * replica that dies after the receiver answered, before the row is deleted, leaves it to be sent again).
 */
export class PostgresDeliveryQueue implements DeliveryQueue {
  readonly renewEveryMs: number;

  constructor(
    private readonly sql: SQL,
    private readonly replica: string,
    private readonly claimMs: number,
  ) {
    this.renewEveryMs = Math.max(50, Math.floor(claimMs / 3));
  }

  async add(rows: Omit<QueuedDelivery, "attempts">[]): Promise<void> {
    if (rows.length === 0) return;
    const values: unknown[] = [this.replica, this.claimMs];
    const tuples = rows.map((r) => {
      const at = values.length;
      values.push(r.id, r.task_id, r.config_id, r.body, r.next_attempt_at);
      return `($${at + 1}::text, $${at + 2}::text, $${at + 3}::text, $${at + 4}::text, 0, $${at + 5}::text, $1::text, (SELECT now_ms FROM t) + $2::bigint)`;
    });
    await this.sql.unsafe(
      `${ONCE} INSERT INTO push_deliveries (id, task_id, config_id, body, attempts, next_attempt_at, claimed_by, claim_expires) VALUES ${tuples.join(", ")}`,
      values,
    );
  }

  async load(): Promise<Omit<QueuedDelivery, "body">[]> {
    // Claims what nobody holds any more, and returns it with what this replica holds already.
    const rows = (await this.sql.unsafe(
      `${ONCE} UPDATE push_deliveries SET claimed_by = $1, claim_expires = t.now_ms + $2 FROM t
       WHERE claimed_by = $1 OR claimed_by IS NULL OR claim_expires < t.now_ms
       RETURNING id, task_id, config_id, attempts, next_attempt_at`,
      [this.replica, this.claimMs],
    )) as Omit<QueuedDelivery, "body">[];
    return [...rows].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  }

  async renew(): Promise<void> {
    await this.sql.unsafe(
      `${ONCE} UPDATE push_deliveries SET claim_expires = t.now_ms + $2 FROM t WHERE claimed_by = $1`,
      [this.replica, this.claimMs],
    );
  }

  async get(id: string): Promise<QueuedDelivery | undefined> {
    // Only while this replica holds it: one that lost its claim (it stalled) leaves the delivery to the other.
    const [row] = await this
      .sql`SELECT id, task_id, config_id, body, attempts, next_attempt_at FROM push_deliveries WHERE id = ${id} AND claimed_by = ${this.replica}`;
    return row ? ({ ...row } as QueuedDelivery) : undefined;
  }

  async remove(id: string): Promise<void> {
    await this.sql`DELETE FROM push_deliveries WHERE id = ${id}`;
  }

  async retry(id: string, attempts: number, nextAttemptAt: string, error: string): Promise<void> {
    await this
      .sql`UPDATE push_deliveries SET attempts = ${attempts}, next_attempt_at = ${nextAttemptAt}, last_error = ${error} WHERE id = ${id} AND claimed_by = ${this.replica}`;
  }

  async dropLane(taskId: string, configId: string): Promise<number> {
    const rows = await this
      .sql`DELETE FROM push_deliveries WHERE task_id = ${taskId} AND config_id = ${configId} RETURNING id`;
    return rows.length;
  }
}
