import type { Database, Statement } from "bun:sqlite";
import type { ListTaskPushNotificationConfigsResult, TaskPushNotificationConfig } from "../protocol/types";
import {
  ConfigOwnedElsewhere,
  overPushLimits,
  type PushConfigLimits,
  type PushConfigStore,
  type StoredPushConfig,
} from "../push/push-config-store";
import { now } from "../clock";
import type { OpenDatabase } from "./database";
import { configPage, configPageSize, decodeConfigPageToken } from "./page-token";
import { savedConfig, toConfig, toStored, type PushConfigRow } from "./push-config-rows";
import { writeAlone } from "./write-alone";

/**
 * PushConfigStore on the node's SQLite database (table push_configs; primary key (task_id, id), so all of a
 * task's configs are one b-tree range). Plain prepared statements, like the task store's hot path.
 */
export class SqlitePushConfigStore implements PushConfigStore {
  private readonly sqlite: Database;
  /**
   * Tasks that have at least one webhook. forTask() runs on every task event, and almost no task has a
   * webhook: this set answers for those without touching the database.
   */
  private readonly withConfigs = new Set<string>();
  private readonly q: Record<
    | "upsert"
    | "exists"
    | "countTask"
    | "countOwner"
    | "get"
    | "page"
    | "pageAfter"
    | "del"
    | "delDeliveries"
    | "forTask"
    | "forDelivery"
    | "delTask"
    | "delTaskDeliveries",
    Statement
  >;

  constructor(database: OpenDatabase) {
    this.sqlite = database.sqlite;
    const prep = (s: string) => database.sqlite.prepare(s);
    this.q = {
      // The WHERE on the update keeps one owner from overwriting another's config that happens to share the
      // (taskId, id) pair: the statement then changes nothing and create() refuses.
      upsert: prep(
        `INSERT INTO push_configs (task_id, id, owner, url, token, authentication, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
         ON CONFLICT (task_id, id) DO UPDATE SET url = excluded.url, token = excluded.token, authentication = excluded.authentication
         WHERE push_configs.owner = excluded.owner`,
      ),
      exists: prep("SELECT 1 FROM push_configs WHERE task_id = ?1 AND id = ?2"),
      countTask: prep("SELECT count(*) AS n FROM push_configs WHERE task_id = ?1"),
      // push_configs_owner (migration 0009): a range of the caller's configs, which the limit keeps short.
      countOwner: prep("SELECT count(*) AS n FROM push_configs WHERE owner = ?1"),
      get: prep("SELECT * FROM push_configs WHERE task_id = ?1 AND id = ?2 AND owner = ?3"),
      page: prep("SELECT * FROM push_configs WHERE task_id = ?1 AND owner = ?2 ORDER BY id LIMIT ?3"),
      pageAfter: prep("SELECT * FROM push_configs WHERE task_id = ?1 AND owner = ?2 AND id > ?3 ORDER BY id LIMIT ?4"),
      del: prep("DELETE FROM push_configs WHERE task_id = ?1 AND id = ?2 AND owner = ?3"),
      delDeliveries: prep("DELETE FROM push_deliveries WHERE task_id = ?1 AND config_id = ?2"),
      forTask: prep("SELECT * FROM push_configs WHERE task_id = ?1 ORDER BY id"),
      forDelivery: prep("SELECT * FROM push_configs WHERE task_id = ?1 AND id = ?2"),
      delTask: prep("DELETE FROM push_configs WHERE task_id = ?1"),
      delTaskDeliveries: prep("DELETE FROM push_deliveries WHERE task_id = ?1"),
    };
    for (const r of database.sqlite.prepare("SELECT DISTINCT task_id AS t FROM push_configs").all() as { t: string }[])
      this.withConfigs.add(r.t);
  }

  async create(
    owner: string,
    config: TaskPushNotificationConfig,
    limits?: PushConfigLimits,
  ): Promise<TaskPushNotificationConfig> {
    const saved = savedConfig(config);
    // The counts and the insert in one transaction of their own (see writeAlone), committed when it resolves.
    const r = await writeAlone(this.sqlite, () => {
      if (limits && !this.q.exists.get(saved.taskId, saved.id)) {
        const over = overPushLimits(
          limits,
          (this.q.countTask.get(saved.taskId) as { n: number }).n,
          (this.q.countOwner.get(owner) as { n: number }).n,
        );
        if (over) throw over;
      }
      return this.upsert(owner, saved);
    });
    // Same answer as for a task the caller cannot see: nothing about the other owner leaks.
    if (r.changes === 0) throw new ConfigOwnedElsewhere(saved.taskId);
    return saved;
  }

  /**
   * Stores the webhook sent with a new task, synchronously, inside the task store's commit that inserts the
   * task (SqliteTaskStoreOptions.webhooks): one transaction for both.
   */
  storeWithTask(owner: string, config: TaskPushNotificationConfig): void {
    this.upsert(owner, config);
  }

  private upsert(owner: string, saved: TaskPushNotificationConfig): { changes: number } {
    const r = this.q.upsert.run(
      saved.taskId,
      saved.id,
      owner,
      saved.url,
      saved.token ?? null,
      saved.authentication ? JSON.stringify(saved.authentication) : null,
      now(),
    );
    // Known before the commit (a rolled-back one leaves a task here without webhooks: forTask reads the table).
    if (r.changes > 0) this.withConfigs.add(saved.taskId);
    return r;
  }

  async countForOwner(owner: string): Promise<number> {
    return (this.q.countOwner.get(owner) as { n: number }).n;
  }

  async get(owner: string, taskId: string, id: string): Promise<TaskPushNotificationConfig | undefined> {
    const row = this.q.get.get(taskId, id, owner) as PushConfigRow | null;
    return row ? toConfig(row) : undefined;
  }

  async list(
    owner: string,
    taskId: string,
    pageSize?: number,
    pageToken?: string,
  ): Promise<ListTaskPushNotificationConfigsResult> {
    const size = configPageSize(pageSize);
    // One row more than the page tells whether another page follows without a count query.
    const rows = (
      pageToken
        ? this.q.pageAfter.all(taskId, owner, decodeConfigPageToken(pageToken), size + 1)
        : this.q.page.all(taskId, owner, size + 1)
    ) as PushConfigRow[];
    return configPage(rows, size, toConfig);
  }

  async delete(owner: string, taskId: string, id: string): Promise<boolean> {
    // One transaction (see writeAlone): a deleted webhook must not keep receiving what was queued for it.
    return writeAlone(this.sqlite, () => {
      if (this.q.del.run(taskId, id, owner).changes === 0) return false;
      this.q.delDeliveries.run(taskId, id);
      return true;
    });
  }

  async deleteForTasks(taskIds: readonly string[]): Promise<void> {
    // Most tasks have no webhook: only those known to have one cost a statement.
    const withConfigs = taskIds.filter((id) => this.withConfigs.has(id));
    if (withConfigs.length === 0) return;
    await writeAlone(this.sqlite, () => {
      for (const id of withConfigs) {
        this.q.delTask.run(id);
        this.q.delTaskDeliveries.run(id);
        this.withConfigs.delete(id);
      }
    });
  }

  /**
   * The task's webhooks (id, owner, URL), at once: for the task store's commit, which queues their deliveries
   * with the events (see SqliteDeliveryQueue.queueWith). A task without any costs no statement.
   */
  webhooksOf(taskId: string): Pick<StoredPushConfig, "id" | "owner" | "url">[] {
    if (!this.withConfigs.has(taskId)) return [];
    return (this.q.forTask.all(taskId) as PushConfigRow[]).map((r) => ({ id: r.id, owner: r.owner, url: r.url }));
  }

  async forTask(taskId: string): Promise<StoredPushConfig[]> {
    if (!this.withConfigs.has(taskId)) return [];
    const rows = (this.q.forTask.all(taskId) as PushConfigRow[]).map(toStored);
    if (rows.length === 0) this.withConfigs.delete(taskId);
    return rows;
  }

  async forDelivery(taskId: string, id: string): Promise<StoredPushConfig | undefined> {
    const row = this.q.forDelivery.get(taskId, id) as PushConfigRow | null;
    return row ? toStored(row) : undefined;
  }
}
