import type { ListTaskPushNotificationConfigsResult, TaskPushNotificationConfig } from "../protocol/types";
import { PUSH_CONFIG_PAGE } from "../push/push-config-store";
import { TaskStoreRequestError } from "../tasks/task-store";

/**
 * A ListTasks page token: where the last page ended, in the order every store pages in (status timestamp, then
 * id, both descending). Opaque to clients; a store resumes right after that task.
 */
export function encodePageToken(timestamp: string, id: string): string {
  return Buffer.from(`${timestamp}|${id}`).toString("base64url");
}

export function decodePageToken(token: string): { timestamp: string; id: string } {
  const text = Buffer.from(token, "base64url").toString("utf8");
  const bar = text.indexOf("|");
  if (bar <= 0 || bar === text.length - 1) throw new TaskStoreRequestError("pageToken is not one this node issued");
  return { timestamp: text.slice(0, bar), id: text.slice(bar + 1) };
}

// Push config page tokens carry a prefix, so a token from elsewhere (e.g. ListTasks) is refused clearly.
const CONFIG_TOKEN_PREFIX = "pc1|";

/** A push config page token: the id of the last config returned. */
export function encodeConfigPageToken(lastId: string): string {
  return Buffer.from(CONFIG_TOKEN_PREFIX + lastId).toString("base64url");
}

export function decodeConfigPageToken(token: string): string {
  const text = Buffer.from(token, "base64url").toString("utf8");
  if (!text.startsWith(CONFIG_TOKEN_PREFIX) || text.length === CONFIG_TOKEN_PREFIX.length) {
    throw new TaskStoreRequestError("pageToken is not one this node issued for push notification configs");
  }
  return text.slice(CONFIG_TOKEN_PREFIX.length);
}

/** The configs on a page asked for with `pageSize`: PUSH_CONFIG_PAGE's default, held between 1 and its most. */
export function configPageSize(pageSize: number | undefined): number {
  return Math.min(Math.max(Math.trunc(pageSize ?? PUSH_CONFIG_PAGE.default), 1), PUSH_CONFIG_PAGE.max);
}

/**
 * A page of push configs from `rows` (ordered by id, after the token's config): the first `size`, as `shown`
 * makes them, and the next page's token when there are more rows (a store reads one row past the page, so
 * that one tells whether another page follows without a count).
 */
export function configPage<Row extends { id: string }>(
  rows: Row[],
  size: number,
  shown: (row: Row) => TaskPushNotificationConfig,
): ListTaskPushNotificationConfigsResult {
  const page = rows.slice(0, size);
  const last = page[page.length - 1];
  return {
    configs: page.map(shown),
    nextPageToken: rows.length > size && last ? encodeConfigPageToken(last.id) : "",
  };
}
