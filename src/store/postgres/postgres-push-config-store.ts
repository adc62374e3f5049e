import type { SQL } from "bun";
import type { ListTaskPushNotificationConfigsResult, TaskPushNotificationConfig } from "../../protocol/types";
import { ConfigOwnedElsewhere, PUSH_CONFIG_PAGE, type PushConfigStore, type StoredPushConfig } from "../../push/push-config-store";
import { newId, now } from "../../tasks/clock";
import { decodeConfigPageToken, encodeConfigPageToken } from "../page-token";
import type { PostgresDatabase } from "./database";
import { toConfig, toStored, type PushConfigRow } from "../push-config-rows";


/**
 * PushConfigStore on the shared Postgres database (table push_configs, primary key (task_id, id)): a webhook
 * registered through one replica is seen by all of them. Unlike SQLite's store it keeps no cache of which
 * tasks have webhooks, since another replica may add one at any time.
 */
export class PostgresPushConfigStore implements PushConfigStore {
  private readonly sql: SQL;

  constructor(database: PostgresDatabase) {
    this.sql = database.sql;
  }

  async create(owner: string, config: TaskPushNotificationConfig): Promise<TaskPushNotificationConfig> {
    const saved: TaskPushNotificationConfig = { id: config.id || newId(), taskId: config.taskId, url: config.url };
    if (config.token) saved.token = config.token;
    if (config.authentication) saved.authentication = { ...config.authentication };
    // The WHERE on the update keeps one owner from overwriting another's config of the same (taskId, id).
    const rows = await this.sql`
      INSERT INTO push_configs (task_id, id, owner, url, token, authentication, created_at)
      VALUES (${saved.taskId}, ${saved.id}, ${owner}, ${saved.url}, ${saved.token ?? null}, ${saved.authentication ? JSON.stringify(saved.authentication) : null}, ${now()})
      ON CONFLICT (task_id, id) DO UPDATE SET url = excluded.url, token = excluded.token, authentication = excluded.authentication
      WHERE push_configs.owner = excluded.owner
      RETURNING id`;
    if (rows.length === 0) throw new ConfigOwnedElsewhere(saved.taskId);
    return saved;
  }

  async get(owner: string, taskId: string, id: string): Promise<TaskPushNotificationConfig | undefined> {
    const [row] = await this.sql`SELECT * FROM push_configs WHERE task_id = ${taskId} AND id = ${id} AND owner = ${owner}`;
    return row ? toConfig(row as PushConfigRow) : undefined;
  }

  async list(owner: string, taskId: string, pageSize?: number, pageToken?: string): Promise<ListTaskPushNotificationConfigsResult> {
    const size = Math.min(Math.max(Math.trunc(pageSize ?? PUSH_CONFIG_PAGE.default), 1), PUSH_CONFIG_PAGE.max);
    const after = pageToken ? decodeConfigPageToken(pageToken) : undefined;
    // One row more than the page tells whether another page follows.
    const rows = (
      after === undefined
        ? await this.sql`SELECT * FROM push_configs WHERE task_id = ${taskId} AND owner = ${owner} ORDER BY id LIMIT ${size + 1}`
        : await this.sql`SELECT * FROM push_configs WHERE task_id = ${taskId} AND owner = ${owner} AND id > ${after} ORDER BY id LIMIT ${size + 1}`
    ) as PushConfigRow[];
    const page = rows.slice(0, size);
    const last = page[page.length - 1];
    return { configs: page.map(toConfig), nextPageToken: rows.length > size && last ? encodeConfigPageToken(last.id) : "" };
  }

  async delete(owner: string, taskId: string, id: string): Promise<boolean> {
    // One transaction: a deleted webhook must not keep receiving what was queued for it.
    return this.sql.begin(async (tx) => {
      const gone = await tx`DELETE FROM push_configs WHERE task_id = ${taskId} AND id = ${id} AND owner = ${owner} RETURNING id`;
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

  async forTask(taskId: string): Promise<StoredPushConfig[]> {
    return ((await this.sql`SELECT * FROM push_configs WHERE task_id = ${taskId} ORDER BY id`) as PushConfigRow[]).map(toStored);
  }

  async forDelivery(taskId: string, id: string): Promise<StoredPushConfig | undefined> {
    const [row] = await this.sql`SELECT * FROM push_configs WHERE task_id = ${taskId} AND id = ${id}`;
    return row ? toStored(row as PushConfigRow) : undefined;
  }
}
