import type { Database, Statement } from "bun:sqlite";
import type { StreamResponse } from "../protocol/types";
import type { DeliveryQueue, QueuedDelivery } from "../push/delivery-queue";
import type { StoredPushConfig } from "../push/push-config-store";
import { newId } from "../clock";
import type { QueuedWithEvent } from "../tasks/task-store";
import type { OpenDatabase } from "./database";

/**
 * The push delivery queue in the home's SQLite file (table push_deliveries), on the node's shared connection:
 * rows queued while the task store's group transaction is open commit with it. The task store queues an
 * event's deliveries itself, in the commit of the event (queueWith).
 */
export class SqliteDeliveryQueue implements DeliveryQueue {
  private readonly sqlite: Database;
  private readonly q: Record<"insert" | "byId" | "all" | "remove" | "retry" | "dropLane", Statement>;

  constructor(database: OpenDatabase) {
    this.sqlite = database.sqlite;
    const prep = (s: string) => database.sqlite.prepare(s);
    this.q = {
      insert: prep(
        "INSERT INTO push_deliveries (id, task_id, config_id, body, attempts, next_attempt_at) VALUES (?1, ?2, ?3, ?4, 0, ?5)",
      ),
      byId: prep("SELECT id, task_id, config_id, body, attempts, next_attempt_at FROM push_deliveries WHERE id = ?1"),
      all: prep("SELECT id, task_id, config_id, attempts, next_attempt_at FROM push_deliveries ORDER BY id"),
      remove: prep("DELETE FROM push_deliveries WHERE id = ?1"),
      retry: prep("UPDATE push_deliveries SET attempts = ?2, next_attempt_at = ?3, last_error = ?4 WHERE id = ?1"),
      dropLane: prep("DELETE FROM push_deliveries WHERE task_id = ?1 AND config_id = ?2"),
    };
  }

  async add(rows: Omit<QueuedDelivery, "attempts">[]): Promise<void> {
    this.sqlite.transaction(() => {
      for (const r of rows) this.q.insert.run(r.id, r.task_id, r.config_id, r.body, r.next_attempt_at);
    })();
  }

  /**
   * Queues one delivery per event for each of `webhooks`, at once, on the node's connection: called by the task
   * store inside the commit that stores the events (see TaskStore.onDeliveriesQueued), so both commit or
   * neither does. Ids are ULIDs made in order, so a webhook's deliveries go out in event order.
   */
  queueWith(
    taskId: string,
    webhooks: Pick<StoredPushConfig, "id" | "owner" | "url">[],
    events: StreamResponse[],
  ): QueuedWithEvent[] {
    if (webhooks.length === 0) return [];
    const nextAttemptAt = new Date().toISOString();
    const queued: QueuedWithEvent[] = [];
    for (const event of events) {
      const body = JSON.stringify(event);
      for (const w of webhooks) {
        const id = newId();
        this.q.insert.run(id, taskId, w.id, body, nextAttemptAt);
        queued.push({ id, taskId, configId: w.id, owner: w.owner, url: w.url, nextAttemptAt });
      }
    }
    return queued;
  }

  async load(): Promise<Omit<QueuedDelivery, "body">[]> {
    return this.q.all.all() as Omit<QueuedDelivery, "body">[];
  }

  async get(id: string): Promise<QueuedDelivery | undefined> {
    return (this.q.byId.get(id) as QueuedDelivery | null) ?? undefined;
  }

  async remove(id: string): Promise<void> {
    this.q.remove.run(id);
  }

  async retry(id: string, attempts: number, nextAttemptAt: string, error: string): Promise<void> {
    this.q.retry.run(id, attempts, nextAttemptAt, error);
  }

  async dropLane(taskId: string, configId: string): Promise<number> {
    return this.q.dropLane.run(taskId, configId).changes;
  }
}
