import type { Database, Statement } from "bun:sqlite";
import { and, count, desc, eq, gt, inArray, lt, or, asc } from "drizzle-orm";
import type { Artifact, ListTasksParams, ListTasksResult, Message, StreamResponse, Task, TaskState, TaskStatus } from "../protocol/types";
import { isTerminal } from "../protocol/types";
import { TaskStoreRequestError, type NewTask, type StoredEvent, type TaskStore, type UnfinishedTask } from "../tasks/task-store";
import type { Db, OpenDatabase } from "./database";
import { DEFAULT_MAX_LIST_BYTES, OMITTED_KEY, omissionNote, planPage, type PlannedTask } from "./list-budget";
import { tasks } from "./schema";
import { GroupCommit } from "./write-batch";

type TaskRow = Omit<typeof tasks.$inferSelect, "headBytes" | "historyBytes" | "artifactsBytes">;
/** What a Task is built from. */
type TaskParts = Pick<TaskRow, "id" | "contextId" | "state" | "statusMessage" | "statusTimestamp" | "metadata" | "history" | "artifacts">;

export interface SqliteTaskStoreOptions {
  /** Bytes of task JSON one ListTasks page may carry (see list-budget.ts); default DEFAULT_MAX_LIST_BYTES. */
  maxListBytes?: number;
}

const DEFAULT_PAGE_SIZE = 50;

/** Everything not yet committed about one task; several requests' worth merge into one row write. */
interface Pending {
  insert?: { contextId: string; owner: string; requestMessageId: string; executor: string; createdAt: string; metadata?: Record<string, unknown> };
  status?: TaskStatus;
  messages: Message[];
  artifacts: Artifact[];
  metadata?: Record<string, unknown>;
  /** Events not yet committed, numbered from `firstSeq`. */
  events: StreamResponse[];
  firstSeq: number;
  /** The event number the row's state reflects once this is written (set with status/artifact changes). */
  rowSeq?: number;
}

/**
 * The size columns (see schema.ts), computed by SQLite from the JSON text each statement writes, so they cannot
 * disagree with it. The migration that added them backfills older rows with the same expressions.
 */
const SIZE_COLUMNS = "head_bytes, history_bytes, artifacts_bytes";
/** For insertTask: ?1 id, ?2 context_id, ?5 status_message, ?7 metadata, ?10 history, ?11 artifacts. */
const SIZES_ON_INSERT = "octet_length(?1) + octet_length(?2) + coalesce(octet_length(?5), 0) + coalesce(octet_length(?7), 0), octet_length(?10), octet_length(?11)";
/** For updateTask: ?3 status_message, ?5 metadata, ?6 history, ?7 artifacts (id and context_id never change). */
const SIZES_ON_UPDATE = "octet_length(id) + octet_length(context_id) + coalesce(octet_length(?3), 0) + coalesce(octet_length(?5), 0), octet_length(?6), octet_length(?7)";

/**
 * TaskStore on SQLite. A task is one row (its history and artifacts are JSON columns of it), and writes are
 * collected per task and committed in groups (see GroupCommit): a task created, started and finished between
 * two commits costs one row insert. The group commit's statements are plain prepared bun:sqlite statements,
 * because drizzle's per-call parameter mapping cost more than SQLite's own work on this path (measured: about
 * half of the store's CPU per task); the other queries go through drizzle.
 */
export class SqliteTaskStore implements TaskStore {
  private readonly pending = new Map<string, Pending>();
  /** owner + "\0" + messageId → the task, for creates not yet committed (idempotency must see them). */
  private readonly pendingRequests = new Map<string, Task>();
  private readonly group = new GroupCommit(() => this.flushPending());
  private readonly db: Db;
  private readonly sqlite: Database;
  private readonly maxListBytes: number;
  private readonly w: Record<
    | "insertTask"
    | "updateTask"
    | "selectForUpdate"
    | "selectTask"
    | "selectIdByRequest"
    | "selectContext"
    | "selectContextIds"
    | "insertEvents"
    | "selectEvents"
    | "maxEventSeq"
    | "selectImplied",
    Statement
  >;

  constructor(database: OpenDatabase, options: SqliteTaskStoreOptions = {}) {
    this.db = database.db;
    this.sqlite = database.sqlite;
    this.maxListBytes = options.maxListBytes ?? DEFAULT_MAX_LIST_BYTES;
    const prep = (q: string) => database.sqlite.prepare(q);
    this.w = {
      // Both statements also set the size columns (for ListTasks) from the values they write: SIZES_ON_INSERT
      // and SIZES_ON_UPDATE name the same parameters as the statements around them.
      insertTask: prep(
        `INSERT INTO tasks (id, context_id, owner, state, status_message, status_timestamp, metadata, request_message_id,
           executor, history, artifacts, created_at, updated_at, last_seq, working_at, ${SIZE_COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?6, ?13, ?14, ${SIZES_ON_INSERT})`,
      ),
      updateTask: prep(
        `UPDATE tasks SET state = ?2, status_message = ?3, status_timestamp = ?4, updated_at = ?4, metadata = ?5, history = ?6, artifacts = ?7, last_seq = ?8,
           (${SIZE_COLUMNS}) = (${SIZES_ON_UPDATE}) WHERE id = ?1`,
      ),
      selectForUpdate: prep("SELECT state, status_message, status_timestamp, metadata, history, artifacts, last_seq FROM tasks WHERE id = ?1"),
      insertEvents: prep("INSERT INTO task_events (task_id, seq, last_seq, events) VALUES (?1, ?2, ?3, ?4)"),
      maxEventSeq: prep(
        `SELECT max(coalesce((SELECT max(last_seq) FROM task_events WHERE task_id = ?1), 0),
                    coalesce((SELECT last_seq FROM tasks WHERE id = ?1 AND working_at IS NOT NULL), 0)) AS n`,
      ),
      selectImplied: prep("SELECT context_id, state, status_message, status_timestamp, artifacts, last_seq, working_at FROM tasks WHERE id = ?1 AND working_at IS NOT NULL"),
      selectEvents: prep("SELECT seq, events FROM task_events WHERE task_id = ?1 AND last_seq > ?2 ORDER BY seq"),
      selectTask: prep("SELECT * FROM tasks WHERE id = ?1 AND owner = ?2"),
      selectIdByRequest: prep("SELECT id FROM tasks WHERE owner = ?1 AND request_message_id = ?2"),
      selectContext: prep(`${contextTasks("id, history")} ORDER BY id DESC`),
      selectContextIds: prep(contextTasks("id")),
    };
  }

  create(input: NewTask): { task: Task; created: boolean; committed: Promise<void> } {
    const idempotent = input.idempotent !== false;
    const key = `${input.owner}\0${input.message.messageId}`;
    if (idempotent) {
      const inFlight = this.pendingRequests.get(key);
      if (inFlight) return { task: inFlight, created: false, committed: this.group.commit() };
      this.openGroupTransaction();
      const existing = this.w.selectIdByRequest.get(input.owner, input.message.messageId) as { id: string } | null;
      if (existing) return { task: this.get(existing.id, input.owner) as Task, created: false, committed: Promise.resolve() };
    }
    const task: Task = {
      id: input.id,
      contextId: input.contextId,
      status: { state: "TASK_STATE_SUBMITTED", timestamp: input.timestamp },
      history: [input.message],
    };
    if (input.metadata) task.metadata = input.metadata;
    const p = this.pendingFor(input.id);
    p.insert = {
      contextId: input.contextId,
      owner: input.owner,
      // Without deduplication the key is made unique (the task id cannot appear in a messageId's place).
      requestMessageId: idempotent ? input.message.messageId : `${input.message.messageId}\0${input.id}`,
      executor: input.executor,
      createdAt: input.timestamp,
      metadata: input.metadata,
    };
    p.messages.push(input.message);
    if (idempotent) this.pendingRequests.set(key, task);
    return { task, created: true, committed: this.group.commit() };
  }

  get(id: string, owner: string, historyLength?: number): Task | undefined {
    const row = this.w.selectTask.get(id, owner) as RawRow | null;
    return row ? assemble(fromRaw(row), historyLength, true) : undefined;
  }

  list(owner: string, params: ListTasksParams): ListTasksResult {
    const pageSize = params.pageSize ?? DEFAULT_PAGE_SIZE;
    const filters = [eq(tasks.owner, owner)];
    if (params.contextId) {
      const c = params.contextId;
      // The context's tasks by id first (see contextTasks), so the search visits the context's few rows only.
      const ids = (this.w.selectContextIds.all(c, owner) as { id: string }[]).map((r) => r.id);
      filters.push(inArray(tasks.id, ids));
    }
    if (params.status) filters.push(eq(tasks.state, params.status));
    if (params.statusTimestampAfter) filters.push(gt(tasks.statusTimestamp, new Date(params.statusTimestampAfter).toISOString()));
    const where = and(...filters);
    const totalSize = this.db.select({ n: count() }).from(tasks).where(where).get()?.n ?? 0;
    let pageWhere = where;
    if (params.pageToken) {
      const cursor = decodePageToken(params.pageToken);
      pageWhere = and(
        where,
        or(lt(tasks.statusTimestamp, cursor.timestamp), and(eq(tasks.statusTimestamp, cursor.timestamp), lt(tasks.id, cursor.id))),
      );
    }
    // The page is planned from tasks_owner_recent alone, which holds each task's sizes: a task the page
    // leaves out (or the parts of one it cuts) is never read.
    const { id, statusTimestamp, headBytes, historyBytes, artifactsBytes } = tasks;
    const candidates = this.db
      .select({ id, statusTimestamp, headBytes, historyBytes, artifactsBytes })
      .from(tasks)
      .where(pageWhere)
      .orderBy(desc(tasks.statusTimestamp), desc(tasks.id))
      .limit(pageSize + 1)
      .all();
    const withArtifacts = params.includeArtifacts ?? false;
    const plan = planPage(candidates, { pageSize, maxBytes: this.maxListBytes, history: params.historyLength !== 0, artifacts: withArtifacts });
    const last = plan.tasks[plan.tasks.length - 1];
    return {
      tasks: plan.tasks.map((p) => this.listed(p, params.historyLength, withArtifacts)),
      nextPageToken: plan.more && last ? encodePageToken(last.statusTimestamp, last.id) : "",
      pageSize,
      totalSize,
    };
  }

  /** One task of a planned page, reading only the columns of the parts it carries. */
  private listed(p: PlannedTask, historyLength: number | undefined, withArtifacts: boolean): Task {
    const artifacts = withArtifacts && !p.omitted.includes("artifacts");
    const history = historyLength !== 0 && !p.omitted.includes("history");
    const message = !p.omitted.includes("status.message");
    const row = this.sqlite
      .query(
        `SELECT id, context_id AS contextId, state, status_timestamp AS statusTimestamp, metadata,
           ${message ? "status_message" : "NULL"} AS statusMessage, ${message ? "0" : "status_message IS NOT NULL"} AS hadMessage,
           ${history ? "history" : "'[]'"} AS history, ${artifacts ? "artifacts" : "'[]'"} AS artifacts
         FROM tasks WHERE id = ?1`,
      )
      .get(p.id) as TaskParts & { hadMessage: number };
    const task = assemble(row, history ? historyLength : 0, artifacts);
    if (p.omitted.length) {
      const omitted = row.hadMessage ? p.omitted : p.omitted.filter((part) => part !== "status.message");
      task.metadata = { ...task.metadata, [OMITTED_KEY]: omissionNote({ ...p, omitted }, this.maxListBytes) };
    }
    return task;
  }

  appendMessage(taskId: string, message: Message): Promise<void> {
    this.pendingFor(taskId).messages.push(message);
    return this.group.commit();
  }

  setStatus(taskId: string, status: TaskStatus): Promise<void> {
    this.pendingFor(taskId).status = status;
    return this.group.commit();
  }

  finish(taskId: string, status: TaskStatus, produced: Artifact[], metadata?: Record<string, unknown>): Promise<void> {
    const p = this.pendingFor(taskId);
    p.status = status;
    if (produced.length) p.artifacts.push(...produced);
    if (status.message) p.messages.push(status.message);
    if (metadata) p.metadata = { ...p.metadata, ...metadata };
    return this.group.commit();
  }

  appendEvents(taskId: string, firstSeq: number, events: StreamResponse[], rowSeq?: number): Promise<void> {
    const p = this.pendingFor(taskId);
    if (p.events.length === 0) p.firstSeq = firstSeq;
    p.events.push(...events);
    if (rowSeq !== undefined) p.rowSeq = rowSeq;
    return this.group.commit();
  }

  eventsAfter(taskId: string, afterSeq: number): StoredEvent[] {
    const out: StoredEvent[] = [];
    const implied = this.w.selectImplied.get(taskId) as ImpliedRow | null;
    if (implied && implied.last_seq > afterSeq) {
      const events = impliedEvents(taskId, implied);
      for (let i = afterSeq; i < events.length; i++) out.push({ seq: i + 1, response: events[i] });
    }
    for (const row of this.w.selectEvents.iterate(taskId, afterSeq) as IterableIterator<{ seq: number; events: string }>) {
      const events = JSON.parse(row.events) as StreamResponse[];
      for (let i = 0; i < events.length; i++) if (row.seq + i > afterSeq) out.push({ seq: row.seq + i, response: events[i] });
    }
    return out;
  }

  lastEventSeq(taskId: string): number {
    return (this.w.maxEventSeq.get(taskId) as { n: number }).n;
  }

  snapshot(id: string, owner: string, historyLength?: number): { task: Task; lastSeq: number } | undefined {
    const row = this.w.selectTask.get(id, owner) as RawRow | null;
    return row ? { task: assemble(fromRaw(row), historyLength, true), lastSeq: row.last_seq } : undefined;
  }

  countInContext(contextId: string, owner: string): number {
    return this.w.selectContextIds.all(contextId, owner).length;
  }

  unfinished(): UnfinishedTask[] {
    return this.db
      .select({ id: tasks.id, owner: tasks.owner, state: tasks.state, executor: tasks.executor })
      .from(tasks)
      .where(inArray(tasks.state, ["TASK_STATE_SUBMITTED", "TASK_STATE_WORKING"]))
      .orderBy(asc(tasks.id))
      .all();
  }

  contextHistory(contextId: string, owner: string, limit: number): Message[] {
    // Newest tasks first, until enough messages are gathered; then oldest first.
    const out: Message[][] = [];
    let n = 0;
    for (const row of this.w.selectContext.iterate(contextId, owner) as IterableIterator<{ history: string }>) {
      const h = JSON.parse(row.history) as Message[];
      out.push(h);
      n += h.length;
      if (n >= limit) break;
    }
    const all = out.reverse().flat();
    return all.length > limit ? all.slice(all.length - limit) : all;
  }

  /** Commits whatever is pending now; call before closing the database. */
  flush(): void {
    this.group.flush();
  }

  private pendingFor(taskId: string): Pending {
    let p = this.pending.get(taskId);
    if (!p) {
      p = { messages: [], artifacts: [], events: [], firstSeq: 0 };
      this.pending.set(taskId, p);
    }
    return p;
  }

  /**
   * The idempotency look-ups of one turn and that turn's writes share one transaction: it begins at the first
   * look-up and commits with the group. Each SQLite transaction costs file-lock system calls in WAL mode, which
   * measured more than the look-up itself.
   */
  private openGroupTransaction(): void {
    if (this.sqlite.inTransaction) return;
    this.sqlite.exec("BEGIN");
    void this.group.commit();
  }

  /** Applies every pending task's writes in one transaction. */
  private flushPending(): void {
    const batch = [...this.pending];
    this.pending.clear();
    this.pendingRequests.clear();
    const open = this.sqlite.inTransaction;
    if (batch.length === 0 && !open) return;
    if (!open) this.sqlite.exec("BEGIN");
    try {
      for (const [id, p] of batch) this.writeTask(id, p);
      this.sqlite.exec("COMMIT");
    } catch (err) {
      if (this.sqlite.inTransaction) this.sqlite.exec("ROLLBACK");
      throw err;
    }
  }

  private writeTask(id: string, p: Pending): void {
    if (p.insert) {
      const status = p.status;
      const workingAt = impliedBy(id, p);
      const metadata = p.insert.metadata || p.metadata ? { ...p.insert.metadata, ...p.metadata } : undefined;
      this.w.insertTask.run(
        id,
        p.insert.contextId,
        p.insert.owner,
        status?.state ?? "TASK_STATE_SUBMITTED",
        status?.message ? JSON.stringify(status.message) : null,
        status?.timestamp ?? p.insert.createdAt,
        metadata ? JSON.stringify(metadata) : null,
        p.insert.requestMessageId,
        p.insert.executor,
        JSON.stringify(p.messages),
        JSON.stringify(p.artifacts),
        p.insert.createdAt,
        p.rowSeq ?? 0,
        workingAt ?? null,
      );
      if (workingAt === undefined) this.writeEvents(id, p);
      return;
    }
    // Streamed chunks of a running task touch only its events: no need to read (or rewrite) the task's row.
    if (!p.status && !p.metadata && p.messages.length === 0 && p.artifacts.length === 0 && p.rowSeq === undefined) {
      this.writeEvents(id, p);
      return;
    }
    const row = this.w.selectForUpdate.get(id) as Pick<RawRow, "state" | "status_message" | "status_timestamp" | "metadata" | "history" | "artifacts" | "last_seq"> | null;
    if (!row) return; // a write for a task that never committed (its create failed); nothing to attach it to
    this.writeEvents(id, p);
    let metadata = row.metadata;
    if (p.metadata) metadata = JSON.stringify({ ...(metadata ? (JSON.parse(metadata) as Record<string, unknown>) : {}), ...p.metadata });
    let history = row.history;
    if (p.messages.length) history = JSON.stringify([...(JSON.parse(history) as Message[]), ...p.messages]);
    let artifacts = row.artifacts;
    if (p.artifacts.length) artifacts = JSON.stringify(mergeArtifacts(JSON.parse(artifacts) as Artifact[], p.artifacts));
    const status = p.status;
    this.w.updateTask.run(
      id,
      status ? status.state : row.state,
      status ? (status.message ? JSON.stringify(status.message) : null) : row.status_message,
      status ? (status.timestamp ?? new Date().toISOString()) : row.status_timestamp,
      metadata,
      history,
      artifacts,
      p.rowSeq ?? row.last_seq,
    );
  }

  private writeEvents(id: string, p: Pending): void {
    if (p.events.length) this.w.insertEvents.run(id, p.firstSeq, p.firstSeq + p.events.length - 1, JSON.stringify(p.events));
  }
}

/**
 * The WORKING timestamp when a task being inserted has exactly the events its row implies (see
 * `tasks.working_at`): its first events, a WORKING status, each of its artifacts once whole, and its final
 * status, with nothing else in them. Anything else (progress, streamed chunks, metadata, a task that is not
 * over) is stored as it is. Key counts make the check refuse any field this code does not know about.
 */
function impliedBy(taskId: string, p: Pending): string | undefined {
  const { events, artifacts, status } = p;
  if (p.firstSeq !== 1 || !status || !isTerminal(status.state) || typeof status.timestamp !== "string" || events.length !== artifacts.length + 2 || p.rowSeq !== events.length) return undefined;
  const contextId = p.insert?.contextId;
  const first = events[0];
  if (!("statusUpdate" in first)) return undefined;
  const w = first.statusUpdate;
  if (w.taskId !== taskId || w.contextId !== contextId || keys(w) !== 3) return undefined;
  if (w.status.state !== "TASK_STATE_WORKING" || typeof w.status.timestamp !== "string" || keys(w.status) !== 2) return undefined;
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

interface ImpliedRow {
  context_id: string;
  state: string;
  status_message: string | null;
  status_timestamp: string;
  artifacts: string;
  last_seq: number;
  working_at: string;
}

/** The events a row with `working_at` stands for (the inverse of impliedBy). */
function impliedEvents(taskId: string, row: ImpliedRow): StreamResponse[] {
  const contextId = row.context_id;
  const status = statusOf(row.state, row.status_timestamp, row.status_message);
  const events: StreamResponse[] = [{ statusUpdate: { taskId, contextId, status: { state: "TASK_STATE_WORKING", timestamp: row.working_at } } }];
  for (const artifact of JSON.parse(row.artifacts) as Artifact[]) events.push({ artifactUpdate: { taskId, contextId, artifact, lastChunk: true } });
  events.push({ statusUpdate: { taskId, contextId, status } });
  return events;
}

/**
 * SELECT `columns` of a context's tasks (parameters: ?1 the context id, ?2 the owner): the task named like the
 * context (its first, when the node named it) by primary key, the rest through the partial index
 * tasks_context (context_id != id). Both halves must be spelled this way for SQLite to use those indexes.
 */
function contextTasks(columns: string): string {
  return `SELECT ${columns} FROM tasks WHERE context_id = ?1 AND context_id != id AND owner = ?2
          UNION ALL SELECT ${columns} FROM tasks WHERE id = ?1 AND context_id = ?1 AND owner = ?2`;
}

/** A re-sent artifact (same artifactId) replaces the old one in place; new ones are appended. */
function mergeArtifacts(existing: Artifact[], added: Artifact[]): Artifact[] {
  const out = [...existing];
  for (const a of added) {
    const i = out.findIndex((x) => x.artifactId === a.artifactId);
    if (i === -1) out.push(a);
    else out[i] = a;
  }
  return out;
}

interface RawRow {
  id: string;
  context_id: string;
  owner: string;
  state: string;
  status_message: string | null;
  status_timestamp: string;
  metadata: string | null;
  request_message_id: string;
  executor: string;
  history: string;
  artifacts: string;
  created_at: string;
  updated_at: string;
  last_seq: number;
  working_at: string | null;
}

function fromRaw(r: RawRow): TaskRow {
  return {
    id: r.id,
    contextId: r.context_id,
    owner: r.owner,
    state: r.state,
    statusMessage: r.status_message,
    statusTimestamp: r.status_timestamp,
    metadata: r.metadata,
    requestMessageId: r.request_message_id,
    executor: r.executor,
    history: r.history,
    artifacts: r.artifacts,
    createdAt: r.created_at,
    updatedAt: r.updated_at,
    lastSeq: r.last_seq,
    workingAt: r.working_at,
  };
}

/** A row's TaskStatus (its message is stored as JSON). */
function statusOf(state: string, timestamp: string, message: string | null): TaskStatus {
  const status: TaskStatus = { state: state as TaskState, timestamp };
  if (message) status.message = JSON.parse(message) as Message;
  return status;
}

function assemble(row: TaskParts, historyLength: number | undefined, withArtifacts: boolean): Task {
  const task: Task = { id: row.id, contextId: row.contextId, status: statusOf(row.state, row.statusTimestamp, row.statusMessage) };
  if (withArtifacts && row.artifacts !== "[]") task.artifacts = JSON.parse(row.artifacts) as Artifact[];
  if (historyLength !== 0) {
    let hist = JSON.parse(row.history) as Message[];
    if (historyLength !== undefined && hist.length > historyLength) hist = hist.slice(hist.length - historyLength);
    if (hist.length > 0) task.history = hist;
  }
  if (row.metadata) task.metadata = JSON.parse(row.metadata) as Record<string, unknown>;
  return task;
}

function encodePageToken(timestamp: string, id: string): string {
  return Buffer.from(`${timestamp}|${id}`).toString("base64url");
}

function decodePageToken(token: string): { timestamp: string; id: string } {
  const text = Buffer.from(token, "base64url").toString("utf8");
  const bar = text.indexOf("|");
  if (bar <= 0 || bar === text.length - 1) throw new TaskStoreRequestError("pageToken is not one this node issued");
  return { timestamp: text.slice(0, bar), id: text.slice(bar + 1) };
}
