import type { Artifact, StreamResponse, TaskPushNotificationConfig, TaskStatus } from "../protocol/types";
import { isTerminal } from "../protocol/types";
import { UnstorableData, WriteRefused, type TaskChange } from "../tasks/task-store";
import type { TaskColumns } from "./task-rows";

/**
 * Everything not yet committed about one task; several requests' worth merge into one row write. What a
 * caller sends (messages, metadata) is serialised when it is written, so a request whose data cannot be stored
 * is refused on the spot; the rest is serialised by planWrite, before any of the task's statements run.
 */
export interface Pending {
  insert?: {
    contextId: string;
    owner: string;
    requestMessageId: string;
    executor: string;
    createdAt: string;
    metadata?: Record<string, unknown>;
    /** `metadata` as JSON. */
    metadataJson?: string;
    /** The node state it starts with (see TaskChange.state). */
    state?: Record<string, unknown>;
    /** The webhook stored with it (see NewTask.webhook). */
    webhook?: TaskPushNotificationConfig;
  };
  status?: TaskStatus;
  /** `status.message` as JSON (null: the status has none). */
  statusMessage?: string | null;
  /** Messages to add to the history, as JSON. */
  messages: string[];
  artifacts: Artifact[];
  metadata?: Record<string, unknown>;
  /** Keys to merge into the task's node state (see TaskChange.state). */
  state?: Record<string, unknown>;
  /** Events not yet committed, numbered from `firstSeq`. */
  events: StreamResponse[];
  firstSeq: number;
  /** The event number the row's state reflects once this is written (set with status/artifact changes). */
  rowSeq?: number;
}

export function newPending(): Pending {
  return { messages: [], artifacts: [], events: [], firstSeq: 0 };
}

/**
 * TaskStore.record for the stores that gather writes: the change joins the task's pending writes (see addChange)
 * and the returned promise is their group's commit (`commit`); a change that cannot be stored rejects at once.
 */
export function recordChange(
  pendingFor: () => Pending,
  change: TaskChange,
  commit: () => Promise<void>,
): Promise<void> {
  try {
    addChange(pendingFor, change);
  } catch (err) {
    return Promise.reject(err);
  }
  return commit();
}

/**
 * Adds one TaskChange to a task's pending writes (`pendingFor` gives them, made if new). What the change
 * carries is serialised first: a change that cannot be stored throws UnstorableData and adds nothing.
 */
export function addChange(pendingFor: () => Pending, change: TaskChange): void {
  let history: string[] | undefined;
  let statusMessage: string | null | undefined;
  if (change.status) statusMessage = change.status.message ? toJson(change.status.message, "status message") : null;
  // The agent's final reply is usually the status message too: serialised once.
  if (change.history?.length)
    history = change.history.map((m) =>
      statusMessage && m === change.status?.message ? statusMessage : toJson(m, "message"),
    );
  if (change.metadata) toJson(change.metadata, "metadata");
  if (change.state) toJson(change.state, "node state");
  const p = pendingFor();
  if (history) p.messages.push(...history);
  if (change.status) {
    p.status = change.status;
    p.statusMessage = statusMessage;
  }
  if (change.artifacts?.length) p.artifacts.push(...change.artifacts);
  if (change.metadata) p.metadata = { ...p.metadata, ...change.metadata };
  if (change.state) p.state = { ...p.state, ...change.state };
  if (change.events?.items.length) {
    if (p.events.length === 0) p.firstSeq = change.events.firstSeq;
    p.events.push(...change.events.items);
  }
  if (change.rowSeq !== undefined) p.rowSeq = change.rowSeq;
}

/** The columns of a task's row that an update rewrites (as stored). */
export interface StoredRow extends Omit<TaskColumns, "id" | "context_id"> {
  last_seq: number;
  /** The node state (see TaskChange.state) as JSON; null when it has none. */
  node_state: string | null;
}

/** Statement parameters. */
export type Params = (string | number | null)[];

/** A batch of a task's events: (task id, first seq, last seq, events as JSON). */
export type EventsRow = [string, number, number, string];

/**
 * The statements one task's pending writes come to, with every value already serialised: applying a plan
 * cannot fail on the task's data, only in SQLite.
 */
export type WritePlan =
  { insert: Params; events?: EventsRow } | { update: Params; events?: EventsRow } | { events: EventsRow };

/**
 * Turns a task's pending writes into statements. `stored` reads the task's row (only when it is needed).
 * Undefined when there is nothing to write (a refused write may leave an empty entry). Throws WriteRefused
 * (UnstorableData for data that cannot be serialised) before anything is applied.
 */
export function planWrite(id: string, p: Pending, stored: () => StoredRow | null): WritePlan | undefined {
  if (p.insert) {
    const { insert, status } = p;
    const workingAt = impliedBy(id, p);
    const metadata = p.metadata
      ? toJson({ ...insert.metadata, ...p.metadata }, "metadata")
      : (insert.metadataJson ?? null);
    const state = insert.state || p.state ? toJson({ ...insert.state, ...p.state }, "node state") : null;
    const row: Params = [
      id,
      insert.contextId,
      insert.owner,
      status?.state ?? "TASK_STATE_SUBMITTED",
      p.statusMessage ?? null,
      status?.timestamp ?? insert.createdAt,
      metadata,
      insert.requestMessageId,
      insert.executor,
      `[${p.messages.join(",")}]`,
      toJson(p.artifacts, "artifacts"),
      insert.createdAt,
      p.rowSeq ?? 0,
      workingAt ?? null,
      state,
    ];
    // Events the row implies are not stored apart (see tasks.working_at).
    return workingAt === undefined ? { insert: row, events: eventsRow(id, p) } : { insert: row };
  }
  const events = eventsRow(id, p);
  // Streamed chunks of a running task touch only its events: no need to read (or rewrite) the task's row.
  if (
    !p.status &&
    !p.metadata &&
    !p.state &&
    p.messages.length === 0 &&
    p.artifacts.length === 0 &&
    p.rowSeq === undefined
  ) {
    return events && { events };
  }
  const row = stored();
  if (!row) throw new WriteRefused(`task ${id} is not stored (its creation was never committed)`);
  let metadata = row.metadata;
  if (p.metadata)
    metadata = toJson(
      { ...(metadata ? (JSON.parse(metadata) as Record<string, unknown>) : {}), ...p.metadata },
      "metadata",
    );
  let state = row.node_state;
  if (p.state)
    state = toJson({ ...(state ? (JSON.parse(state) as Record<string, unknown>) : {}), ...p.state }, "node state");
  let artifacts = row.artifacts;
  if (p.artifacts.length)
    artifacts = toJson(mergeArtifacts(JSON.parse(artifacts) as Artifact[], p.artifacts), "artifacts");
  const { status } = p;
  const update: Params = [
    id,
    status ? status.state : row.state,
    status ? (p.statusMessage ?? null) : row.status_message,
    status ? (status.timestamp ?? new Date().toISOString()) : row.status_timestamp,
    metadata,
    appendToJsonArray(row.history, p.messages),
    artifacts,
    p.rowSeq ?? row.last_seq,
    state,
  ];
  return events ? { update, events } : { update };
}

/**
 * JSON.stringify, refusing with UnstorableData what cannot be serialised (nested too deeply for the stack,
 * cyclic, a BigInt): the reason names the problem, never the data.
 */
export function toJson(value: unknown, what: string): string {
  try {
    return JSON.stringify(value);
  } catch (err) {
    throw new UnstorableData(
      what,
      err instanceof RangeError ? "it is nested too deeply to serialise" : (err as Error).message,
    );
  }
}

function eventsRow(id: string, p: Pending): EventsRow | undefined {
  if (p.events.length === 0) return undefined;
  return [id, p.firstSeq, p.firstSeq + p.events.length - 1, toJson(p.events, "events")];
}

/** A JSON array (as this store writes them: no whitespace) with more JSON items added at its end. */
function appendToJsonArray(array: string, items: string[]): string {
  if (items.length === 0) return array;
  return array === "[]" ? `[${items.join(",")}]` : `${array.slice(0, -1)},${items.join(",")}]`;
}

/** A re-sent artifact (same artifactId) replaces the old one in place; new ones are appended. */
export function mergeArtifacts(existing: Artifact[], added: Artifact[]): Artifact[] {
  const out = [...existing];
  for (const a of added) {
    const i = out.findIndex((x) => x.artifactId === a.artifactId);
    if (i === -1) out.push(a);
    else out[i] = a;
  }
  return out;
}

/**
 * The WORKING timestamp when a task being inserted has exactly the events its row implies (see
 * `tasks.working_at`): its first events, a WORKING status, each of its artifacts once whole, and its final
 * status, with nothing else in them. Anything else (progress, streamed chunks, metadata, a task that is not
 * over) is stored as it is. Key counts make the check refuse any field this code does not know about.
 */
function impliedBy(taskId: string, p: Pending): string | undefined {
  const { events, artifacts, status } = p;
  if (
    p.firstSeq !== 1 ||
    !status ||
    !isTerminal(status.state) ||
    typeof status.timestamp !== "string" ||
    events.length !== artifacts.length + 2 ||
    p.rowSeq !== events.length
  )
    return undefined;
  const contextId = p.insert?.contextId;
  const first = events[0];
  if (!("statusUpdate" in first)) return undefined;
  const w = first.statusUpdate;
  if (w.taskId !== taskId || w.contextId !== contextId || keys(w) !== 3) return undefined;
  if (w.status.state !== "TASK_STATE_WORKING" || typeof w.status.timestamp !== "string" || keys(w.status) !== 2)
    return undefined;
  for (let i = 0; i < artifacts.length; i++) {
    const e = events[i + 1];
    if (!("artifactUpdate" in e)) return undefined;
    const u = e.artifactUpdate;
    if (u.taskId !== taskId || u.contextId !== contextId || u.lastChunk !== true || keys(u) !== 4) return undefined;
    if (!sameArtifact(u.artifact, artifacts[i])) return undefined;
  }
  const last = events[events.length - 1];
  if (!("statusUpdate" in last)) return undefined;
  const f = last.statusUpdate;
  if (f.taskId !== taskId || f.contextId !== contextId || f.status !== status || keys(f) !== 3) return undefined;
  return w.status.timestamp;
}

function keys(o: object): number {
  let n = 0;
  for (const k in o) if ((o as Record<string, unknown>)[k] !== undefined) n++;
  return n;
}

/** The artifact as the runner stored it: a copy of the event's one with the same parts (see accumulate). */
function sameArtifact(a: Artifact, b: Artifact): boolean {
  if (a === b) return true;
  if (a.artifactId !== b.artifactId || a.name !== b.name || a.description !== b.description) return false;
  if (a.metadata !== b.metadata || a.extensions !== b.extensions || keys(a) !== keys(b)) return false;
  if (a.parts.length !== b.parts.length) return false;
  for (let i = 0; i < a.parts.length; i++) if (a.parts[i] !== b.parts[i]) return false;
  return true;
}
