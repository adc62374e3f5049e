import type { Artifact, Message, Task, TaskState, TaskStatus } from "../protocol/types";
import { newPending, type Pending } from "./pending-writes";

/**
 * What the SQLite and the Postgres task stores share about a task's row: its columns as both schemas name
 * them, and how a Task is built from them. (How writes gather and are planned is pending-writes.ts.)
 */
export interface TaskColumns {
  id: string;
  context_id: string;
  state: string;
  status_message: string | null;
  status_timestamp: string;
  metadata: string | null;
  history: string;
  artifacts: string;
}

/** The Task a row holds, with its last `historyLength` messages (all when undefined) and its artifacts if asked. */
export function assemble(row: TaskColumns, historyLength: number | undefined, withArtifacts: boolean): Task {
  const task: Task = {
    id: row.id,
    contextId: row.context_id,
    status: statusOf(row.state, row.status_timestamp, row.status_message),
  };
  if (withArtifacts && row.artifacts !== "[]") task.artifacts = JSON.parse(row.artifacts) as Artifact[];
  if (historyLength !== 0) {
    let hist = JSON.parse(row.history) as Message[];
    if (historyLength !== undefined && hist.length > historyLength) hist = hist.slice(hist.length - historyLength);
    if (hist.length > 0) task.history = hist;
  }
  if (row.metadata) task.metadata = JSON.parse(row.metadata) as Record<string, unknown>;
  return task;
}

/** A row's TaskStatus (its message is stored as JSON). */
export function statusOf(state: string, timestamp: string, message: string | null): TaskStatus {
  const status: TaskStatus = { state: state as TaskState, timestamp };
  if (message) status.message = JSON.parse(message) as Message;
  return status;
}

/** A row's node state (see TaskChange.state). */
export function stateOf(json: string | null | undefined): Record<string, unknown> {
  return json ? (JSON.parse(json) as Record<string, unknown>) : {};
}

/** The writes of a task not yet committed, made empty the first time (see pending-writes.ts). */
export function pendingOf(pending: Map<string, Pending>, taskId: string): Pending {
  let p = pending.get(taskId);
  if (!p) pending.set(taskId, (p = newPending()));
  return p;
}

/**
 * The last `limit` messages of a context, oldest first, from its tasks' histories read newest task first: rows
 * are read only until enough messages are gathered.
 */
export function lastMessages(newestFirst: Iterable<{ history: string }>, limit: number): Message[] {
  const out: Message[][] = [];
  let n = 0;
  for (const row of newestFirst) {
    const h = JSON.parse(row.history) as Message[];
    out.push(h);
    n += h.length;
    if (n >= limit) break;
  }
  const all = out.reverse().flat();
  return all.length > limit ? all.slice(all.length - limit) : all;
}
