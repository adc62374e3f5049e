import type { Database, Statement } from "bun:sqlite";
import { and, count, desc, eq, gt, inArray, asc, sql } from "drizzle-orm";
import type {
  Artifact,
  ListTasksParams,
  ListTasksResult,
  Message,
  StreamResponse,
  Task,
  TaskPushNotificationConfig,
  TaskState,
} from "../protocol/types";
import { isInterrupted, isTerminal } from "../protocol/types";
import { encodeTime } from "ulid";
import {
  DroppedWrite,
  FINAL_STATES,
  type CallerUsage,
  type NewTask,
  type QueuedWithEvent,
  type StoredEvent,
  type TaskChange,
  type TaskSnapshot,
  type TaskStore,
  type UnfinishedTask,
} from "../tasks/task-store";
import { crashPoint } from "../crash-point";
import { createLogger, type Logger } from "../log";
import type { Db, OpenDatabase } from "./database";
import { DEFAULT_MAX_LIST_BYTES } from "./list-budget";
import { DEFAULT_PAGE_SIZE, listedColumns, type ListedRow, pageOf } from "./list-page";
import { decodePageToken } from "./page-token";
import { planWrite, recordChange, toJson, type Params, type Pending, type StoredRow } from "./pending-writes";
import { tasks } from "./schema";
import { assemble, lastMessages, pendingOf, stateOf, statusOf } from "./task-rows";
import { commitEach, GroupCommit } from "./group-commit";
import { reasonOf } from "../reason";

export interface SqliteTaskStoreOptions {
  /** Bytes of task JSON one ListTasks page may carry (see list-budget.ts); default DEFAULT_MAX_LIST_BYTES. */
  maxListBytes?: number;
  /** Where a failed commit is reported (which tasks, why); default stderr. */
  log?: Logger;
  /**
   * Queues the push deliveries of a task's events, synchronously, on this store's connection: called inside
   * the commit that stores the events (see TaskStore.onDeliveriesQueued). Without it no delivery is queued.
   */
  outbox?: (taskId: string, events: StreamResponse[]) => QueuedWithEvent[];
  /**
   * Stores a webhook sent with a new task (see NewTask.webhook), synchronously, on this store's connection:
   * called in the commit that inserts the task (and again with it, when a failed group is tried a task at a
   * time). Without it the store does not keep webhooks (keepsWebhooks is false).
   */
  webhooks?: (owner: string, config: TaskPushNotificationConfig) => void;
}

/**
 * The size columns (see schema.ts), computed by SQLite from the JSON text each statement writes, so they cannot
 * disagree with it. The migration that added them backfills older rows with the same expressions.
 */
const SIZE_COLUMNS = "head_bytes, history_bytes, artifacts_bytes";
/** For insertTask: ?1 id, ?2 context_id, ?5 status_message, ?7 metadata, ?10 history, ?11 artifacts. */
const SIZES_ON_INSERT =
  "octet_length(?1) + octet_length(?2) + coalesce(octet_length(?5), 0) + coalesce(octet_length(?7), 0), octet_length(?10), octet_length(?11)";
/** For updateTask: ?3 status_message, ?5 metadata, ?6 history, ?7 artifacts (id and context_id never change). */
const SIZES_ON_UPDATE =
  "octet_length(id) + octet_length(context_id) + coalesce(octet_length(?3), 0) + coalesce(octet_length(?5), 0), octet_length(?6), octet_length(?7)";

/**
 * TaskStore on SQLite. A task is one row (its history and artifacts are JSON columns of it), and writes are
 * collected per task and committed in groups (see GroupCommit): a task created, started and finished between
 * two commits costs one row insert. A task whose writes cannot be stored (its data, or SQLite failing on it)
 * fails alone: its writers' promises reject, the node logs it, and every other task of the commit is
 * committed. The group commit's statements are plain prepared bun:sqlite statements,
 * because drizzle's per-call parameter mapping cost more than SQLite's own work on this path (measured: about
 * half of the store's CPU per task); the other queries go through drizzle.
 */
export class SqliteTaskStore implements TaskStore {
  private readonly pending = new Map<string, Pending>();
  /** owner + "\0" + messageId → the task, for creates not yet committed (idempotency must see them). */
  private readonly pendingRequests = new Map<string, Task>();
  private readonly group = new GroupCommit<string>(() => this.flushPending());
  /**
   * The row of each task running here as this store last committed it, so the next change of the task is
   * planned without reading the row back (that read was ~8% of the node's CPU per task under load). Only this
   * store writes the tasks table (the home is locked to one process), so the copy holds until the task ends
   * or waits (dropped then: those rows may sit for long, and nothing else needs them soon).
   */
  private readonly rows = new Map<string, StoredRow>();
  /** Rows written by the group being committed: kept in `rows` only for the tasks it did commit. */
  private readonly written = new Map<string, StoredRow>();
  /** Push deliveries queued by the group being committed, by task: told to the listener for the tasks it did commit. */
  private readonly queuedNow = new Map<string, QueuedWithEvent[]>();
  private deliveryListener: ((deliveries: QueuedWithEvent[]) => void) | undefined;
  private readonly outbox: SqliteTaskStoreOptions["outbox"];
  private readonly db: Db;
  private readonly sqlite: Database;
  private readonly maxListBytes: number;
  private readonly log: Logger;
  private readonly w: Record<
    | "insertTask"
    | "deleteHooks"
    | "deleteDeliveries"
    | "updateTask"
    | "selectForUpdate"
    | "selectTask"
    | "selectIdByRequest"
    | "selectContext"
    | "selectContextIds"
    | "insertEvents"
    | "selectEvents"
    | "maxEventSeq"
    | "selectImplied"
    | "selectExpired"
    | "deleteTask"
    | "deleteEvents"
    | "countOwner"
    | "countOwnerState"
    | "usage"
    | "heaviest",
    Statement
  >;

  private readonly webhooks: SqliteTaskStoreOptions["webhooks"];
  readonly keepsWebhooks: boolean;

  constructor(
    private readonly database: OpenDatabase,
    options: SqliteTaskStoreOptions = {},
  ) {
    this.log = options.log ?? createLogger((line) => process.stderr.write(line));
    this.db = database.db;
    this.sqlite = database.sqlite;
    this.maxListBytes = options.maxListBytes ?? DEFAULT_MAX_LIST_BYTES;
    this.outbox = options.outbox;
    this.webhooks = options.webhooks;
    this.keepsWebhooks = options.webhooks !== undefined;
    const prep = (q: string) => database.sqlite.prepare(q);
    this.w = {
      // Both statements also set the size columns (for ListTasks) from the values they write: SIZES_ON_INSERT
      // and SIZES_ON_UPDATE name the same parameters as the statements around them.
      insertTask: prep(
        `INSERT INTO tasks (id, context_id, owner, state, status_message, status_timestamp, metadata, request_message_id,
           executor, history, artifacts, created_at, updated_at, last_seq, working_at, node_state, ${SIZE_COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?6, ?13, ?14, ?15, ${SIZES_ON_INSERT})`,
      ),
      updateTask: prep(
        `UPDATE tasks SET state = ?2, status_message = ?3, status_timestamp = ?4, updated_at = ?4, metadata = ?5, history = ?6, artifacts = ?7, last_seq = ?8, node_state = ?9,
           (${SIZE_COLUMNS}) = (${SIZES_ON_UPDATE}) WHERE id = ?1`,
      ),
      selectForUpdate: prep(
        "SELECT state, status_message, status_timestamp, metadata, history, artifacts, last_seq, node_state FROM tasks WHERE id = ?1",
      ),
      insertEvents: prep("INSERT INTO task_events (task_id, seq, last_seq, events) VALUES (?1, ?2, ?3, ?4)"),
      maxEventSeq: prep(
        `SELECT max(coalesce((SELECT max(last_seq) FROM task_events WHERE task_id = ?1), 0),
                    coalesce((SELECT last_seq FROM tasks WHERE id = ?1 AND working_at IS NOT NULL), 0)) AS n`,
      ),
      selectImplied: prep(
        "SELECT context_id, state, status_message, status_timestamp, artifacts, last_seq, working_at FROM tasks WHERE id = ?1 AND working_at IS NOT NULL",
      ),
      selectEvents: prep("SELECT seq, events FROM task_events WHERE task_id = ?1 AND last_seq > ?2 ORDER BY seq"),
      selectTask: prep("SELECT * FROM tasks WHERE id = ?1 AND owner = ?2"),
      selectIdByRequest: prep("SELECT id FROM tasks WHERE owner = ?1 AND request_message_id = ?2"),
      selectContext: prep(`${contextTasks("id, history")} ORDER BY id DESC`),
      selectContextIds: prep(contextTasks("id")),
      // Ids are ULIDs (creation time first): a task that ended before the cut-off was created before it, so
      // the walk is a primary-key range from the oldest task up to the cut-off's time, not a table scan.
      selectExpired: prep(
        `SELECT id FROM tasks WHERE id < ?1 AND status_timestamp < ?2 AND state IN (${FINAL_STATES.map((s) => `'${s}'`).join(", ")}) ORDER BY id LIMIT ?3`,
      ),
      deleteTask: prep("DELETE FROM tasks WHERE id = ?1"),
      deleteEvents: prep("DELETE FROM task_events WHERE task_id = ?1"),
      deleteHooks: prep("DELETE FROM push_configs WHERE task_id = ?1"),
      deleteDeliveries: prep("DELETE FROM push_deliveries WHERE task_id = ?1"),
      // task_counts is kept by triggers in step with every write to tasks (migration 0008).
      countOwner: prep("SELECT coalesce(sum(n), 0) AS n FROM task_counts WHERE owner = ?1"),
      countOwnerState: prep("SELECT coalesce(sum(n), 0) AS n FROM task_counts WHERE owner = ?1 AND state = ?2"),
      // caller_usage is kept by triggers in step with every write to tasks and task_events (migration 0009).
      usage: prep("SELECT tasks, bytes FROM caller_usage WHERE owner = ?1"),
      heaviest: prep(
        "SELECT owner, tasks, bytes FROM caller_usage WHERE tasks > 0 OR bytes > 0 ORDER BY bytes DESC, owner LIMIT ?1",
      ),
    };
  }

  async create(input: NewTask): Promise<{ task: Task; created: boolean; committed: Promise<void> }> {
    const idempotent = input.idempotent !== false;
    const key = `${input.owner}\0${input.message.messageId}`;
    // Refused here, before anything is recorded: what the caller sent cannot be stored.
    const messageJson = toJson(input.message, "message");
    const metadataJson = input.metadata ? toJson(input.metadata, "metadata") : undefined;
    if (input.state) toJson(input.state, "node state");
    if (idempotent) {
      const inFlight = this.pendingRequests.get(key);
      if (inFlight) return { task: inFlight, created: false, committed: this.group.commit(inFlight.id) };
      this.openGroupTransaction();
      const existing = this.w.selectIdByRequest.get(input.owner, input.message.messageId) as { id: string } | null;
      if (existing)
        return { task: this.read(existing.id, input.owner) as Task, created: false, committed: Promise.resolve() };
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
      metadataJson,
      state: input.state,
      webhook: this.webhooks ? input.webhook : undefined,
    };
    p.messages.push(messageJson);
    if (idempotent) this.pendingRequests.set(key, task);
    return { task, created: true, committed: this.group.commit(input.id) };
  }

  async get(id: string, owner: string, historyLength?: number): Promise<Task | undefined> {
    return this.read(id, owner, historyLength);
  }

  private read(id: string, owner: string, historyLength?: number): Task | undefined {
    const row = this.w.selectTask.get(id, owner) as RawRow | null;
    return row ? assemble(row, historyLength, true) : undefined;
  }

  async list(owner: string, params: ListTasksParams): Promise<ListTasksResult> {
    const pageSize = params.pageSize ?? DEFAULT_PAGE_SIZE;
    const filters = [eq(tasks.owner, owner)];
    if (params.contextId) {
      const c = params.contextId;
      // The context's tasks by id first (see contextTasks), so the search visits the context's few rows only.
      const ids = (this.w.selectContextIds.all(c, owner) as { id: string }[]).map((r) => r.id);
      filters.push(inArray(tasks.id, ids));
    }
    if (params.status) filters.push(eq(tasks.state, params.status));
    if (params.statusTimestampAfter)
      filters.push(gt(tasks.statusTimestamp, new Date(params.statusTimestampAfter).toISOString()));
    const where = and(...filters);
    // totalSize from task_counts when the filters are owner and state alone (counting the caller's tasks
    // instead cost 150 ms a call at a million, on the event loop); the other filters count the tasks they
    // match, which tasks_owner_recent or the context's ids bound.
    const counted = params.contextId || params.statusTimestampAfter;
    const totalSize = counted
      ? (this.db.select({ n: count() }).from(tasks).where(where).get()?.n ?? 0)
      : params.status
        ? (this.w.countOwnerState.get(owner, params.status) as { n: number }).n
        : (this.w.countOwner.get(owner) as { n: number }).n;
    let pageWhere = where;
    if (params.pageToken) {
      const cursor = decodePageToken(params.pageToken);
      // A row-value comparison, which SQLite turns into a range of tasks_owner_recent: the equivalent OR of
      // two comparisons made it walk the index from the newest task (measured: 150 ms for a page 100,000 deep).
      pageWhere = and(where, sql`(${tasks.statusTimestamp}, ${tasks.id}) < (${cursor.timestamp}, ${cursor.id})`);
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
    const page = await pageOf(
      candidates,
      params,
      this.maxListBytes,
      (taskId, parts) =>
        this.sqlite.query(`SELECT ${listedColumns(parts, "0")} FROM tasks WHERE id = ?1`).get(taskId) as ListedRow,
    );
    return { ...page, totalSize };
  }

  record(taskId: string, change: TaskChange): Promise<void> {
    return recordChange(
      () => this.pendingFor(taskId),
      change,
      () => this.group.commit(taskId),
    );
  }

  onDeliveriesQueued(listener: (deliveries: QueuedWithEvent[]) => void): void {
    this.deliveryListener = listener;
  }

  discard(taskId: string): void {
    // A creation not yet committed has no earlier write to have failed: it stays.
    if (!this.pending.get(taskId) || this.pending.get(taskId)!.insert) return;
    this.pending.delete(taskId);
    this.group.drop(taskId, new DroppedWrite(taskId));
  }

  async eventsAfter(taskId: string, afterSeq: number): Promise<StoredEvent[]> {
    const out: StoredEvent[] = [];
    const implied = this.w.selectImplied.get(taskId) as ImpliedRow | null;
    if (implied && implied.last_seq > afterSeq) {
      const events = impliedEvents(taskId, implied);
      for (let i = afterSeq; i < events.length; i++) out.push({ seq: i + 1, response: events[i] });
    }
    for (const row of this.w.selectEvents.iterate(taskId, afterSeq) as IterableIterator<{
      seq: number;
      events: string;
    }>) {
      const events = JSON.parse(row.events) as StreamResponse[];
      for (let i = 0; i < events.length; i++)
        if (row.seq + i > afterSeq) out.push({ seq: row.seq + i, response: events[i] });
    }
    return out;
  }

  async lastEventSeq(taskId: string): Promise<number> {
    return (this.w.maxEventSeq.get(taskId) as { n: number }).n;
  }

  async snapshot(id: string, owner: string, historyLength?: number): Promise<TaskSnapshot | undefined> {
    const row = this.w.selectTask.get(id, owner) as RawRow | null;
    return row
      ? { task: assemble(row, historyLength, true), lastSeq: row.last_seq, state: stateOf(row.node_state) }
      : undefined;
  }

  async usage(owner: string): Promise<CallerUsage> {
    return (this.w.usage.get(owner) as CallerUsage | null) ?? { tasks: 0, bytes: 0 };
  }

  async heaviest(limit: number): Promise<(CallerUsage & { owner: string })[]> {
    return this.w.heaviest.all(limit) as (CallerUsage & { owner: string })[];
  }

  async countInContext(contextId: string, owner: string): Promise<number> {
    return this.w.selectContextIds.all(contextId, owner).length;
  }

  async unfinished(): Promise<UnfinishedTask[]> {
    return this.db
      .select({ id: tasks.id, owner: tasks.owner, state: tasks.state, executor: tasks.executor })
      .from(tasks)
      .where(inArray(tasks.state, ["TASK_STATE_SUBMITTED", "TASK_STATE_WORKING"]))
      .orderBy(asc(tasks.id))
      .all();
  }

  async contextHistory(contextId: string, owner: string, limit: number): Promise<Message[]> {
    if (limit <= 0) return [];
    return lastMessages(this.w.selectContext.iterate(contextId, owner) as IterableIterator<{ history: string }>, limit);
  }

  deleteFinished(before: string, limit: number): Promise<string[]> {
    const cutoff = Date.parse(before);
    if (Number.isNaN(cutoff)) return Promise.reject(new TypeError(`not a time: ${before}`));
    // The smallest id of the cut-off's millisecond: every task created earlier sorts below it.
    const idBound = `${encodeTime(cutoff, 10)}0000000000000000`;
    const ids = (this.w.selectExpired.all(idBound, new Date(cutoff).toISOString(), limit) as { id: string }[])
      .map((r) => r.id)
      .filter((id) => !this.pending.has(id));
    // One transaction (a savepoint inside a group commit's open one), so a crash leaves a task whole or gone.
    // Events first: caller_usage's trigger finds an event's owner through its task's row.
    // With the webhooks kept here (see keepsWebhooks), the task's webhooks and queued deliveries go in the same
    // transaction: a crash before the push store's own forget must not leave them counted against their caller.
    const hooks = this.keepsWebhooks ? [this.w.deleteHooks, this.w.deleteDeliveries] : undefined;
    this.sqlite.transaction(() => {
      for (const id of ids) {
        this.w.deleteEvents.run(id);
        this.w.deleteTask.run(id);
        if (hooks) for (const statement of hooks) statement.run(id);
      }
    })();
    return Promise.resolve(ids);
  }

  /** Commits whatever is pending now; call before closing the database. */
  flush(): void {
    this.group.flush();
  }

  private pendingFor(taskId: string): Pending {
    return pendingOf(this.pending, taskId);
  }

  /**
   * The idempotency look-ups of one turn and that turn's writes share one transaction: it begins at the first
   * look-up and commits with the group. Each SQLite transaction costs file-lock system calls in WAL mode, which
   * measured more than the look-up itself. It takes the write lock as it begins (IMMEDIATE): a transaction that
   * has read and then writes while another connection (the readiness probe, a sqlite3 shell) holds the lock
   * gets SQLITE_BUSY at once, busy_timeout or not, and every write of the turn on this connection (push
   * deliveries too) would fail with "database is locked" instead of waiting.
   */
  private openGroupTransaction(): void {
    if (this.sqlite.inTransaction) return;
    this.sqlite.exec("BEGIN IMMEDIATE");
    this.group.schedule();
  }

  /**
   * Applies every pending task's writes in one transaction; a task that cannot be stored is left out (see
   * commitEach), logged, and reported to GroupCommit, which rejects its writers' promises alone.
   */
  private flushPending(): Map<string, unknown> {
    const batch = [...this.pending];
    this.pending.clear();
    this.pendingRequests.clear();
    let failed: Map<string, unknown> | undefined;
    try {
      failed = commitEach(
        this.sqlite,
        batch,
        (id, p) => this.write(id, p),
        (err) =>
          this.log.warn("a group commit failed; committing its tasks one at a time", {
            tasks: batch.length,
            reason: reasonOf(err),
          }),
      );
    } finally {
      this.keepWritten(batch, failed);
    }
    // Task ids and reasons only: what the tasks hold stays out of the log.
    for (const [id, err] of failed)
      this.log.error("could not store a task's writes; its callers get an error", {
        task_id: id,
        reason: reasonOf(err),
      });
    this.database.afterCommit();
    crashPoint("event-committed", () => batch.some(([id, p]) => p.events.length > 0 && !failed.has(id)));
    this.tellQueued(failed);
    return failed;
  }

  /** One task's pending writes: every value is serialised (or the task refused) before a statement runs. */
  private write(id: string, p: Pending): void {
    this.queuedNow.delete(id); // tried again alone after a failed group: what that queued was rolled back
    const plan = planWrite(id, p, () => this.rows.get(id) ?? (this.w.selectForUpdate.get(id) as StoredRow | null));
    if (!plan) return;
    if ("insert" in plan) {
      this.w.insertTask.run(...plan.insert);
      // The webhook sent with the task, in its commit: before its events, whose deliveries go to it.
      if (p.insert?.webhook) this.webhooks!(p.insert.owner, p.insert.webhook);
      this.written.set(id, rowOfInsert(plan.insert));
    } else if ("update" in plan) {
      this.w.updateTask.run(...plan.update);
      this.written.set(id, rowOfUpdate(plan.update));
    }
    if (plan.events) this.w.insertEvents.run(...plan.events);
    // The events' push deliveries, in the same transaction (implied events too: p.events holds them all).
    if (this.outbox && p.events.length) {
      const queued = this.outbox(id, p.events);
      if (queued.length) this.queuedNow.set(id, queued);
    }
  }

  /** After a group: the deliveries it queued for the tasks it committed go to the listener (the dispatcher). */
  private tellQueued(failed: Map<string, unknown>): void {
    if (this.queuedNow.size === 0) return;
    const committed: QueuedWithEvent[] = [];
    for (const [id, queued] of this.queuedNow) if (!failed.has(id)) committed.push(...queued);
    this.queuedNow.clear();
    if (committed.length === 0 || !this.deliveryListener) return;
    try {
      this.deliveryListener(committed);
    } catch (err) {
      // They are queued: the dispatcher's next start sends them.
      this.log.error("could not schedule queued push deliveries", { reason: reasonOf(err) });
    }
  }

  /**
   * After a group: the rows it committed become the known rows of their tasks, unless the task ended or waits.
   * A task whose writes failed (or all of them, when `failed` is unknown because the commit threw) is read
   * back next time: its statements may have been rolled back.
   */
  private keepWritten(batch: [string, Pending][], failed: Map<string, unknown> | undefined): void {
    for (const [id] of batch) {
      const row = this.written.get(id);
      if (!failed || failed.has(id)) this.rows.delete(id);
      else if (!row)
        continue; // only events were written: the row is as it was
      else if (isTerminal(row.state as TaskState) || isInterrupted(row.state as TaskState)) this.rows.delete(id);
      else this.rows.set(id, row);
    }
    this.written.clear();
  }
}

/** The row an insert wrote, as selectForUpdate would read it (see planWrite for the parameter order). */
function rowOfInsert(p: Params): StoredRow {
  return {
    state: p[3] as string,
    status_message: p[4] as string | null,
    status_timestamp: p[5] as string,
    metadata: p[6] as string | null,
    history: p[9] as string,
    artifacts: p[10] as string,
    last_seq: p[12] as number,
    node_state: p[14] as string | null,
  };
}

/** The row an update wrote, as selectForUpdate would read it. */
function rowOfUpdate(p: Params): StoredRow {
  return {
    state: p[1] as string,
    status_message: p[2] as string | null,
    status_timestamp: p[3] as string,
    metadata: p[4] as string | null,
    history: p[5] as string,
    artifacts: p[6] as string,
    last_seq: p[7] as number,
    node_state: p[8] as string | null,
  };
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
  const events: StreamResponse[] = [
    { statusUpdate: { taskId, contextId, status: { state: "TASK_STATE_WORKING", timestamp: row.working_at } } },
  ];
  for (const artifact of JSON.parse(row.artifacts) as Artifact[])
    events.push({ artifactUpdate: { taskId, contextId, artifact, lastChunk: true } });
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
  node_state: string | null;
}
