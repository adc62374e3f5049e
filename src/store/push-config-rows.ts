import type { AuthenticationInfo, TaskPushNotificationConfig } from "../protocol/types";
import { redactConfig, type StoredPushConfig } from "../push/push-config-store";

/** A push_configs row, as both the SQLite and the Postgres stores keep it. */
export interface PushConfigRow {
  task_id: string;
  id: string;
  owner: string;
  url: string;
  token: string | null;
  authentication: string | null;
}

/** The config as Get/List return it: as its owner set it, but `authentication.credentials` left out (redactConfig). */
export function toConfig(row: PushConfigRow): TaskPushNotificationConfig {
  return redactConfig(toFullConfig(row));
}

/** The config as its owner set it, secrets included. */
function toFullConfig(row: PushConfigRow): TaskPushNotificationConfig {
  const c: TaskPushNotificationConfig = { id: row.id, taskId: row.task_id, url: row.url };
  if (row.token) c.token = row.token;
  if (row.authentication) c.authentication = JSON.parse(row.authentication) as AuthenticationInfo;
  return c;
}

/** The config with its owner, for delivery. */
export function toStored(row: PushConfigRow): StoredPushConfig {
  return { ...toFullConfig(row), owner: row.owner };
}
