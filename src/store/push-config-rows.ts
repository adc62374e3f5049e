import type { AuthenticationInfo, TaskPushNotificationConfig } from "../protocol/types";
import type { StoredPushConfig } from "../push/push-config-store";

/** A push_configs row, as both the SQLite and the Postgres stores keep it. */
export interface PushConfigRow {
  task_id: string;
  id: string;
  owner: string;
  url: string;
  token: string | null;
  authentication: string | null;
}

/** The config as its owner set it (and as Get/List return it). */
export function toConfig(row: PushConfigRow): TaskPushNotificationConfig {
  const c: TaskPushNotificationConfig = { id: row.id, taskId: row.task_id, url: row.url };
  if (row.token) c.token = row.token;
  if (row.authentication) c.authentication = JSON.parse(row.authentication) as AuthenticationInfo;
  return c;
}

/** The config with its owner, for delivery. */
export function toStored(row: PushConfigRow): StoredPushConfig {
  return { ...toConfig(row), owner: row.owner };
}
