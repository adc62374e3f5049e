import type { AuthenticationInfo, TaskPushNotificationConfig } from "../protocol/types";
import { newId } from "../clock";
import { redactConfig, type StoredPushConfig } from "../push/push-config-store";

/**
 * The config as a store keeps it: its id (a new one when the caller gave none), task and URL, token and authentication
 * when set.
 */
export function savedConfig(config: TaskPushNotificationConfig): TaskPushNotificationConfig {
  const saved: TaskPushNotificationConfig = { id: config.id || newId(), taskId: config.taskId, url: config.url };
  if (config.token) saved.token = config.token;
  if (config.authentication) saved.authentication = { ...config.authentication };
  return saved;
}

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
