import type { SQL } from "bun";
import type { ListTaskPushNotificationConfigsResult, TaskPushNotificationConfig } from "../../protocol/types";
import {
  ConfigOwnedElsewhere,
  overPushLimits,
  type PushConfigLimits,
  type PushConfigStore,
  type StoredPushConfig,
} from "../../push/push-config-store";
import { now } from "../../clock";
import { configPage, configPageSize, decodeConfigPageToken } from "../page-token";
import type { PostgresDatabase } from "./database";
import { savedConfig, toConfig, toStored, type PushConfigRow } from "../push-config-rows";

/**
 * PushConfigStore on the shared Postgres database (table push_configs, primary key (task_id, id)): a webhook
 * registered through one replica is seen by all of them. Unlike SQLite's store it keeps no cache of which
 * tasks have webhooks, since another replica may add one at any time.
 */
export class PostgresPushConfigStore implements PushConfigStore {
  private readonly sql: SQL;
  /** forTask look-ups waiting for this turn's query. */
  private asked:
    | Map<
        string,
        { promise: Promise<StoredPushConfig[]>; resolve(v: StoredPushConfig[]): void; reject(e: unknown): void }
      >
    | undefined;

  constructor(database: PostgresDatabase) {
    this.sql = database.sql;
  }

  async create(
    owner: string,
    config: TaskPushNotificationConfig,
    limits?: PushConfigLimits,
  ): Promise<TaskPushNotificationConfig> {
    const saved = savedConfig(config);
    const upsert = (tx: SQL) => tx`
      INSERT INTO push_configs (task_id, id, owner, url, token, authentication, created_at)
      VALUES (${saved.taskId}, ${saved.id}, ${owner}, ${saved.url}, ${saved.token ?? null}, ${saved.authentication ? JSON.stringify(saved.authentication) : null}, ${now()})
      ON CONFLICT (task_id, id) DO UPDATE SET url = excluded.url, token = excluded.token, authentication = excluded.authentication
      WHERE push_configs.owner = excluded.owner
      RETURNING id`;
    // The WHERE on the update keeps one owner from overwriting another's config of the same (taskId, id).
    // With limits, the counts and the insert share a transaction that holds the caller's advisory lock, so
    // two replicas taking the same caller's configs at once cannot both pass the limit.
    const rows = limits
      ? await this.sql.begin(async (tx) => {
          await tx`SELECT pg_advisory_xact_lock(hashtextextended(${`push_configs ${owner}`}, 0))`;
          const [exists] = await tx`SELECT 1 FROM push_configs WHERE task_id = ${saved.taskId} AND id = ${saved.id}`;
          if (!exists) {
            const [{ task, caller }] =
              await tx`SELECT (SELECT count(*)::int FROM push_configs WHERE task_id = ${saved.taskId}) AS task,
                                                      (SELECT count(*)::int FROM push_configs WHERE owner = ${owner}) AS caller`;
            const over = overPushLimits(limits, task, caller);
            if (over) throw over;
          }
          return await upsert(tx as unknown as SQL);
        })
      : await upsert(this.sql);
    if (rows.length === 0) throw new ConfigOwnedElsewhere(saved.taskId);
    return saved;
  }

  async countForOwner(owner: string): Promise<number> {
    const [row] = await this.sql`SELECT count(*)::int AS n FROM push_configs WHERE owner = ${owner}`;
    return (row as { n: number }).n;
  }

  async get(owner: string, taskId: string, id: string): Promise<TaskPushNotificationConfig | undefined> {
    const [row] = await this
      .sql`SELECT * FROM push_configs WHERE task_id = ${taskId} AND id = ${id} AND owner = ${owner}`;
    return row ? toConfig(row as PushConfigRow) : undefined;
  }

  async list(
    owner: string,
    taskId: string,
    pageSize?: number,
    pageToken?: string,
  ): Promise<ListTaskPushNotificationConfigsResult> {
    const size = configPageSize(pageSize);
    const after = pageToken ? decodeConfigPageToken(pageToken) : undefined;
    // One row more than the page tells whether another page follows.
    const rows = (
      after === undefined
        ? await this
            .sql`SELECT * FROM push_configs WHERE task_id = ${taskId} AND owner = ${owner} ORDER BY id LIMIT ${size + 1}`
        : await this
            .sql`SELECT * FROM push_configs WHERE task_id = ${taskId} AND owner = ${owner} AND id > ${after} ORDER BY id LIMIT ${size + 1}`
    ) as PushConfigRow[];
    return configPage(rows, size, toConfig);
  }

  async delete(owner: string, taskId: string, id: string): Promise<boolean> {
    // One transaction: a deleted webhook must not keep receiving what was queued for it.
    return this.sql.begin(async (tx) => {
      const gone =
        await tx`DELETE FROM push_configs WHERE task_id = ${taskId} AND id = ${id} AND owner = ${owner} RETURNING id`;
      if (gone.length === 0) return false;
      await tx`DELETE FROM push_deliveries WHERE task_id = ${taskId} AND config_id = ${id}`;
      return true;
    });
  }

  async deleteForTasks(taskIds: readonly string[]): Promise<void> {
    if (taskIds.length === 0) return;
    const ids = [...taskIds];
    await this.sql.begin(async (tx) => {
      await tx`DELETE FROM push_configs WHERE task_id IN ${tx(ids)}`;
      await tx`DELETE FROM push_deliveries WHERE task_id IN ${tx(ids)}`;
    });
  }

  /**
   * Look-ups asked for in one turn of the event loop (the events of every task one group commit stored) are
   * one query, `task_id = ANY(...)`, rather than one each.
   */
  forTask(taskId: string): Promise<StoredPushConfig[]> {
    let asked = this.asked;
    if (!asked) {
      asked = this.asked = new Map();
      setImmediate(() => void this.lookUp());
    }
    let waiter = asked.get(taskId);
    if (!waiter) asked.set(taskId, (waiter = deferred()));
    return waiter.promise;
  }

  private async lookUp(): Promise<void> {
    const asked = this.asked!;
    this.asked = undefined;
    const ids = [...asked.keys()];
    try {
      const rows = (await this
        .sql`SELECT * FROM push_configs WHERE task_id = ANY(${this.sql.array(ids, "TEXT")}) ORDER BY task_id, id`) as PushConfigRow[];
      const byTask = new Map<string, StoredPushConfig[]>();
      for (const row of rows) {
        const list = byTask.get(row.task_id) ?? [];
        list.push(toStored(row));
        byTask.set(row.task_id, list);
      }
      for (const [id, waiter] of asked) waiter.resolve(byTask.get(id) ?? []);
    } catch (err) {
      for (const waiter of asked.values()) waiter.reject(err);
    }
  }

  async forDelivery(taskId: string, id: string): Promise<StoredPushConfig | undefined> {
    const [row] = await this.sql`SELECT * FROM push_configs WHERE task_id = ${taskId} AND id = ${id}`;
    return row ? toStored(row as PushConfigRow) : undefined;
  }
}

function deferred<T>(): { promise: Promise<T>; resolve(v: T): void; reject(e: unknown): void } {
  let resolve!: (v: T) => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}
