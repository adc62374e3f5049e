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
