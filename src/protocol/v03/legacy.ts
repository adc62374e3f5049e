import { isObj, bad, optString, optObject } from "../field-checks";
import type { Message, Part, SendMessageParams, Task } from "../types";
import type { V03TaskState, Metadata } from "./shapes";
import { toV03State } from "./states";

/* The pre-0.2 Hermes record (`tasks/send`, `tasks/get {taskId}`). */

export interface LegacySendParams {
  task: string;
  requester?: string;
  metadata: Metadata;
  /** A caller-chosen id; reused as the message id so that a retried `tasks/send` lands on the same task. */
  taskId?: string;
}

export interface LegacyTaskRecord {
  taskId: string;
  task: string;
  requester: string | null;
  metadata: Metadata;
  artifacts: { text: string }[];
  status: { state: V03TaskState; message: string; timestamp: string };
}

/** Where a `tasks/send` keeps the record's own fields inside the v1.0 task's metadata. */
export const LEGACY_METADATA_KEY = "hermesLegacy";

export function legacySendParams(p: unknown): LegacySendParams {
  if (!isObj(p)) throw bad("params must be an object");
  if (typeof p.task !== "string" || p.task.trim() === "")
    throw bad("params.task is required and must be a non-empty string");
  const out: LegacySendParams = {
    task: p.task.trim(),
    metadata: { ...(optObject(p, "metadata", "params") ?? {}) },
  };
  const requester = optString(p, "requester", "params");
  if (requester) out.requester = requester;
  const taskId = optString(p, "taskId", "params");
  if (taskId) out.taskId = taskId;
  return out;
}

/**
 * The v1.0 SendMessage a `tasks/send` becomes: one user text message, answered as soon as the task is stored.
 * `requester` is whoever the caller says asked (its own words, kept as said); `peer_cn` is the node's: the name
 * the caller's certificate proves, whatever the caller's metadata says it is.
 */
export function legacyToSendParams(p: LegacySendParams, callerName: string, freshId: () => string): SendMessageParams {
  const requester = p.requester ?? callerName;
  const metadata: Metadata = { ...p.metadata, peer_cn: callerName };
  metadata[LEGACY_METADATA_KEY] = { task: p.task, requester };
  return {
    message: { messageId: p.taskId ?? freshId(), role: "ROLE_USER", parts: [{ text: p.task }] },
    configuration: { returnImmediately: true },
    metadata,
  };
}

const LEGACY_STATUS_TEXT: Record<V03TaskState, string> = {
  submitted: "Task submitted",
  working: "Task is running",
  "input-required": "Task needs more input",
  "auth-required": "Task needs authorization",
  completed: "Task completed",
  canceled: "Task canceled",
  failed: "Task failed",
  rejected: "Task rejected",
  unknown: "Task state unknown",
};

const textOf = (parts: Part[] | undefined): string =>
  (parts ?? [])
    .filter((p) => typeof p.text === "string")
    .map((p) => p.text)
    .join("\n");

/**
 * A v1.0 task as the Hermes record: `artifacts` are the artifacts' text parts, one `{text}` each;
 * `status.message` is the status message's text, or a stock sentence for the state. `peer_cn` is the caller's
 * certificate name (only a task's owner reads it), never what a metadata written by a caller says.
 */
export function toLegacyRecord(
  t: Task,
  callerName: string,
  now: () => string = () => new Date().toISOString(),
): LegacyTaskRecord {
  const { [LEGACY_METADATA_KEY]: legacy, ...rest } = t.metadata ?? {};
  const metadata = { ...rest, peer_cn: callerName };
  const saved = isObj(legacy) ? legacy : {};
  const firstUser = (t.history ?? []).find((m) => m.role === "ROLE_USER");
  const state = toV03State(t.status.state);
  const statusText = textOf(t.status.message?.parts);
  return {
    taskId: t.id,
    task: typeof saved.task === "string" ? saved.task : textOf(firstUser?.parts),
    requester: typeof saved.requester === "string" ? saved.requester : callerName,
    metadata,
    artifacts: (t.artifacts ?? []).flatMap((a) =>
      a.parts.filter((p) => typeof p.text === "string").map((p) => ({ text: p.text as string })),
    ),
    status: { state, message: statusText || LEGACY_STATUS_TEXT[state], timestamp: t.status.timestamp || now() },
  };
}

/** An agent may answer a `tasks/send` with a Message instead of a task: report it as a completed record. */
export function legacyRecordFromMessage(
  m: Message,
  p: LegacySendParams,
  callerName: string,
  now: () => string = () => new Date().toISOString(),
): LegacyTaskRecord {
  return {
    taskId: m.taskId || p.taskId || m.messageId,
    task: p.task,
    requester: p.requester ?? callerName,
    metadata: { ...p.metadata, peer_cn: callerName },
    artifacts: m.parts.filter((x) => typeof x.text === "string").map((x) => ({ text: x.text as string })),
    status: { state: "completed", message: LEGACY_STATUS_TEXT.completed, timestamp: now() },
  };
}
