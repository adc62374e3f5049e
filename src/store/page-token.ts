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
