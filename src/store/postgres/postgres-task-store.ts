import type { SQL } from "bun";

import { encodeTime } from "ulid";
import type {
  ListTasksParams,
  ListTasksResult,
  Message,
  Task,
  TaskPushNotificationConfig,
  TaskState,
} from "../../protocol/types";
import { isInterrupted, isTerminal } from "../../protocol/types";
import { crashPoint } from "../../crash-point";
import { createLogger, type Logger } from "../../log";
import { newId } from "../../clock";
import {
  DroppedWrite,
  FINAL_STATES,
  HeldElsewhere,
  UnstorableData,
  WriteRefused,
  type CallerUsage,
  type NewTask,
  type QueuedWithEvent,
  type StoredEvent,
  type TaskChange,
  type TaskSnapshot,
  type TaskStore,
  type UnfinishedTask,
} from "../../tasks/task-store";
import { DEFAULT_MAX_LIST_BYTES } from "../list-budget";
import {
  recordChange,
  planWrite,
  toJson,
  type Params,
  type Pending,
  type StoredRow,
  type WritePlan,
} from "../pending-writes";
import type { PostgresDatabase } from "./database";
import { DB_NOW_MS, pgArray, type PostgresLeases } from "./postgres-leases";
import { SerialGroupCommit } from "./serial-commit";
import { CountFolding } from "./count-folding";
import { assemble, pendingOf } from "../task-rows";
import { PostgresTaskReads, type RawRow } from "./postgres-task-reads";
import { deferred, type Deferred } from "../../deferred";
import { EVENTS_CHANNEL } from "./postgres-replica-messages";
import { reasonOf } from "../../reason";

export interface PostgresTaskStoreOptions {
  /** Bytes of task JSON one ListTasks page may carry (see list-budget.ts). */
  maxListBytes?: number;
  log?: Logger;
  /**
   * This replica's leases: a task created here is leased to it in the same transaction, and a write to a task
   * another live replica holds is refused (WriteRefused), so a replica that lost a task cannot write over the
   * one that took it.
   */
  leases?: PostgresLeases;
  /**
   * Queue push deliveries with the events (see TaskStore.onDeliveriesQueued), claimed by this replica for
   * `claimMs` as PostgresDeliveryQueue claims the deliveries it queues. Without it no delivery is queued.
   */
  pushDeliveries?: { replica: string; claimMs: number };
  /**
   * Store the webhook sent with a new task (NewTask.webhook) in push_configs, in the statement that inserts
   * the task (see TaskStore.keepsWebhooks): set when PostgresPushConfigStore on this database holds the webhooks.
   */
  keepWebhooks?: boolean;
}

/** Rows of one multi-row INSERT (Postgres takes at most 65,535 parameters in a statement). */
const CREATE_CHUNK = 500;
/** A NOTIFY payload (lines of "taskId seq") stays under Postgres's 8,000 bytes. */
const NOTIFY_BYTES = 7_000;
interface CreateRequest {
  task: Task;
  owner: string;
  /** null for a caller without an identity of its own: never deduplicated. */
  requestMessageId: string | null;
  executor: string;
  timestamp: string;
  metadataJson: string | null;
  /** The node state it starts with (see TaskChange.state), as JSON. */
  stateJson: string | null;
  historyJson: string;
  /** The webhook stored with it (see NewTask.webhook). */
  webhook?: TaskPushNotificationConfig;
  settle: Deferred<{ task: Task; created: boolean }>;
}

/**
 * TaskStore on Postgres: the store several replicas of one agent share. A task is one row, as in SQLite, and
 * its events are rows of task_events, which every replica replays from.
 *
 * Creates of one turn are inserted together, `ON CONFLICT DO NOTHING` on (owner, messageId): a message two
 * replicas take at the same moment makes one task, and the replica that lost the race answers with the
 * winner's. A create resolves once its row is committed. Other writes gather per task and are committed a
 * group at a time (SerialGroupCommit): the runner's status, artifacts and events of many tasks share one
 * transaction, which also NOTIFYs EVENTS_CHANNEL for the tasks that got events. A group that fails is tried
 * again a task at a time, so that only the tasks that fail again are lost, as in SQLite.
 *
 * This file is the write side (creates, the group commit, change application, discard, deleteFinished): the
 * state those share (pending writes, kept rows, creates in flight) stays in this class. The reads, which need
 * none of it, are PostgresTaskReads (postgres-task-reads.ts), to which the TaskStore reads delegate.
 */
export class PostgresTaskStore implements TaskStore {
  private readonly sql: SQL;
  private readonly pending = new Map<string, Pending>();
  private creates: CreateRequest[] = [];
  /** owner + "\0" + messageId → the create in flight (idempotency must see it). */
  private readonly inFlight = new Map<string, Promise<{ task: Task; created: boolean }>>();
  private readonly group = new SerialGroupCommit<string>(() => this.commitGroup());
  /** The reads (see postgres-task-reads.ts). */
  private readonly reads: PostgresTaskReads;
  private readonly log: Logger;
  private readonly leases: PostgresLeases | undefined;
  private readonly updateTask: string;
  private readonly insertEvents: string;
  /**
   * The rows of tasks this replica runs, as its last commit left them, with the hold (see PostgresLeases.holdOf)
   * they were written under: while the hold is the same nobody else wrote the task, so the next write builds
   * on this copy instead of reading the row back first. Dropped when the task waits for input or ends.
   */
  private readonly rows = new Map<string, { row: StoredRow; hold: number }>();
  private readonly pushDeliveries: PostgresTaskStoreOptions["pushDeliveries"];
  private deliveryListener: ((deliveries: QueuedWithEvent[]) => void) | undefined;
  /** Task writes since task_counts was last folded, and the fold in progress (see compactCounts). */
  private readonly counts: CountFolding;

  readonly keepsWebhooks: boolean;

  constructor(database: PostgresDatabase, options: PostgresTaskStoreOptions = {}) {
    this.sql = database.sql;
    this.keepsWebhooks = options.keepWebhooks ?? false;
    this.log = options.log ?? createLogger((line) => process.stderr.write(line));
    this.counts = new CountFolding(this.sql, this.log);
    this.reads = new PostgresTaskReads(this.sql, options.maxListBytes ?? DEFAULT_MAX_LIST_BYTES, this.counts);
    this.leases = options.leases;
    this.pushDeliveries = options.pushDeliveries;
    const fence = this.leases ? ` AND ${this.leases.fence("$1")}` : "";
    this.updateTask = UPDATE_TASK + fence;
    this.insertEvents = `INSERT INTO task_events (task_id, seq, last_seq, events) SELECT $1::text, $2::int, $3::int, $4::text${fence ? ` WHERE ${this.leases!.fence("$1")}` : ""}`;
  }

  async create(input: NewTask): Promise<{ task: Task; created: boolean; committed: Promise<void> }> {
    const idempotent = input.idempotent !== false;
    const key = `${input.owner}\0${input.message.messageId}`;
    const inFlight = idempotent ? this.inFlight.get(key) : undefined;
    if (inFlight) {
      const first = await inFlight;
      return { task: first.task, created: false, committed: Promise.resolve() };
    }
    // Refused here, before anything is recorded: what the caller sent cannot be stored.
    const historyJson = `[${toJson(input.message, "message")}]`;
    const metadataJson = input.metadata ? toJson(input.metadata, "metadata") : null;
    const stateJson = input.state ? toJson(input.state, "node state") : null;
    for (const [what, value] of [
      ["contextId", input.contextId],
      ["messageId", input.message.messageId],
    ] as const)
      if (value.includes("\0"))
        throw new UnstorableData(what, "it contains a NUL character, which Postgres text cannot hold");
    const task: Task = {
      id: input.id,
      contextId: input.contextId,
      status: { state: "TASK_STATE_SUBMITTED", timestamp: input.timestamp },
      history: [input.message],
    };
    if (input.metadata) task.metadata = input.metadata;
    const settle = deferred<{ task: Task; created: boolean }>();
    this.creates.push({
      task,
      owner: input.owner,
      requestMessageId: idempotent ? input.message.messageId : null,
      executor: input.executor,
      timestamp: input.timestamp,
      metadataJson,
      stateJson,
      historyJson,
      webhook: this.keepsWebhooks ? input.webhook : undefined,
      settle,
    });
    if (idempotent) {
      this.inFlight.set(key, settle.promise);
      void settle.promise.finally(() => this.inFlight.delete(key)).catch(() => {});
    }
    void this.group.commit(`\0create ${input.id}`);
    const result = await settle.promise;
    return { ...result, committed: Promise.resolve() };
  }

  private pendingFor(taskId: string): Pending {
    return pendingOf(this.pending, taskId);
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
    if (!this.pending.delete(taskId)) return;
    this.rows.delete(taskId);
    this.group.drop(taskId, new DroppedWrite(taskId));
  }

  // The reads are PostgresTaskReads's (see postgres-task-reads.ts): none of them touches the write state above.
  get(id: string, owner: string, historyLength?: number): Promise<Task | undefined> {
    return this.reads.get(id, owner, historyLength);
  }

  snapshot(id: string, owner: string, historyLength?: number): Promise<TaskSnapshot | undefined> {
    return this.reads.snapshot(id, owner, historyLength);
  }

  list(owner: string, params: ListTasksParams): Promise<ListTasksResult> {
    return this.reads.list(owner, params);
  }

  eventsAfter(taskId: string, afterSeq: number): Promise<StoredEvent[]> {
    return this.reads.eventsAfter(taskId, afterSeq);
  }

  lastEventSeq(taskId: string): Promise<number> {
    return this.reads.lastEventSeq(taskId);
  }

  usage(owner: string): Promise<CallerUsage> {
    return this.reads.usage(owner);
  }

  heaviest(limit: number): Promise<(CallerUsage & { owner: string })[]> {
    return this.reads.heaviest(limit);
  }

  countInContext(contextId: string, owner: string): Promise<number> {
    return this.reads.countInContext(contextId, owner);
  }

  unfinished(): Promise<UnfinishedTask[]> {
    return this.reads.unfinished();
  }

  contextHistory(contextId: string, owner: string, limit: number): Promise<Message[]> {
    return this.reads.contextHistory(contextId, owner, limit);
  }

  async deleteFinished(before: string, limit: number): Promise<string[]> {
    const cutoff = Date.parse(before);
    if (Number.isNaN(cutoff)) throw new TypeError(`not a time: ${before}`);
    // Ids are ULIDs (see SqliteTaskStore.deleteFinished): a task that ended before the cut-off was created
    // before it, so the walk is a primary-key range. Rows another replica holds locked are skipped.
    const idBound = `${encodeTime(cutoff, 10)}0000000000000000`;
    const skip = [...this.pending.keys()];
    const finals = FINAL_STATES as readonly string[];
    const rows = await this.sql.begin(async (tx) => {
      const doomed = (await tx`
        SELECT id FROM tasks
        WHERE id < ${idBound} AND status_timestamp < ${new Date(cutoff).toISOString()} AND state IN ${tx(finals)}
          AND NOT (id = ANY(${tx.array(skip, "TEXT")}))
        ORDER BY id LIMIT ${limit} FOR UPDATE SKIP LOCKED`) as { id: string }[];
      if (doomed.length === 0) return [] as string[];
      const ids = doomed.map((r) => r.id);
      await tx`DELETE FROM task_events WHERE task_id IN ${tx(ids)}`;
      await tx`DELETE FROM task_leases WHERE task_id IN ${tx(ids)}`;
      await tx`DELETE FROM task_answers WHERE task_id IN ${tx(ids)}`;
      // The webhooks kept beside the tasks go with them (see keepsWebhooks): a crash before the push store's
      // own forget must not leave them counted against their caller.
      if (this.keepsWebhooks) {
        await tx`DELETE FROM push_deliveries WHERE task_id IN ${tx(ids)}`;
        await tx`DELETE FROM push_configs WHERE task_id IN ${tx(ids)}`;
      }
      await tx`DELETE FROM tasks WHERE id IN ${tx(ids)}`;
      return ids;
    });
    this.counts.wrote(rows.length);
    return rows;
  }

  /** Resolves once everything written so far is committed (call before closing the database). */
  async flush(): Promise<void> {
    await this.group.flush();
    await this.counts.settled();
  }

  /** Folds task_counts and caller_usage now (see CountFolding). */
  compactCounts(): Promise<void> {
    return this.counts.fold();
  }

  /**
   * Commits the creates and the task writes gathered so far in one transaction; if it fails, each create and
   * each task again in one of its own. Returns the keys not committed, with their reasons.
   */
  private async commitGroup(): Promise<Map<string, unknown>> {
    const creates = this.creates;
    this.creates = [];
    const batch = [...this.pending];
    this.pending.clear();
    this.counts.wrote(creates.length + batch.length);
    const failed = new Map<string, unknown>();
    try {
      // Creates alone are one statement (their leases with them), committed without a transaction of its own.
      const ended: string[] = [];
      const alone = batch.length === 0 && creates.length <= CREATE_CHUNK;
      // A group of ordinary size is one statement (no transaction of its own to open and close); a larger one
      // (past what one statement's parameters hold) is a transaction of several.
      const queued: QueuedWithEvent[] = [];
      const inserted = alone
        ? await this.insertAll(this.sql, creates)
        : creates.length <= CREATE_CHUNK && batch.length <= ONE_STATEMENT_TASKS
          ? await this.applyAtOnce(creates, batch, failed, ended, queued)
          : await this.sql.begin((tx) => this.apply(tx, creates, batch, failed, ended, queued));
      this.leases?.forget(ended);
      crashPoint("event-committed", () => batch.some(([id, p]) => p.events.length > 0 && !failed.has(id)));
      this.tellQueued(queued);
      await this.settleCreates(creates, inserted);
      return failed;
    } catch (err) {
      for (const [id] of batch) this.rows.delete(id); // what the database holds now is not known: read it again
      // A connection the server had closed (see connectionLost) ran nothing: the group is sent again.
      if (creates.length + batch.length > 1 || connectionLost(err))
        this.log.warn("a group commit failed; committing its tasks one at a time", {
          tasks: creates.length + batch.length,
          reason: reasonOf(err),
        });
      else return this.reportFailed(creates, batch, failed, err);
    }
    failed.clear();
    for (const c of creates) {
      try {
        await this.settleCreates([c], await onLiveConnection(() => this.insertAll(this.sql, [c])));
      } catch (err) {
        this.reportFailed([c], [], failed, err);
      }
    }
    for (const item of batch) {
      try {
        const ended: string[] = [];
        const queued: QueuedWithEvent[] = [];
        await onLiveConnection(() => {
          ended.length = queued.length = 0;
          failed.delete(item[0]);
          return this.applyAtOnce([], [item], failed, ended, queued);
        });
        this.leases?.forget(ended);
        crashPoint("event-committed", () => item[1].events.length > 0 && !failed.has(item[0]));
        this.tellQueued(queued);
      } catch (err) {
        this.rows.delete(item[0]);
        this.reportFailed([], [item], failed, err);
      }
    }
    return failed;
  }

  /** After a commit: the push deliveries it queued go to the listener (the dispatcher), which schedules them. */
  private tellQueued(queued: QueuedWithEvent[]): void {
    if (queued.length === 0 || !this.deliveryListener) return;
    try {
      this.deliveryListener(queued);
    } catch (err) {
      // They are queued: the dispatcher takes them up from the table (its start, or another replica).
      this.log.error("could not schedule queued push deliveries", { reason: reasonOf(err) });
    }
  }

  /**
   * The data-modifying CTEs (after one named `e (task_id, seq, last_seq, events)` of the events written) that
   * queue one push delivery per event for each webhook of its task, named `pd` (and `hooks`), and the query
   * giving what they queued as JSON, to read with queuedOf. Ids: one new ULID for the statement, then a
   * number in (task, event, webhook) order, so a webhook's deliveries sort in event order. The bodies are the
   * events' own JSON text (json keeps it as written). `guard`: the condition the rest of the statement runs on.
   */
  private queueDeliveriesSql(
    param: (v: unknown, cast: string) => string,
    guard: string,
  ): { ctes: string[]; queued: string } {
    const d = this.pushDeliveries!;
    const ctes = [
      `hooks AS (SELECT task_id, id, owner, url FROM push_configs WHERE task_id IN (SELECT task_id FROM e))`,
      `pd AS (INSERT INTO push_deliveries (id, task_id, config_id, body, attempts, next_attempt_at, claimed_by, claim_expires)
        SELECT ${param(newId(), "text")} || '.' || lpad((row_number() OVER (ORDER BY e.task_id, e.seq, x.n, hooks.id))::text, 10, '0'),
          e.task_id, hooks.id, x.value::text, 0, ${param(new Date().toISOString(), "text")}, ${param(d.replica, "text")}, ${DB_NOW_MS} + ${param(d.claimMs, "bigint")}
        FROM e JOIN hooks ON hooks.task_id = e.task_id, json_array_elements(e.events::json) WITH ORDINALITY AS x(value, n)
        WHERE ${guard} RETURNING id, task_id, config_id, next_attempt_at)`,
    ];
    const queued = `(SELECT coalesce(json_agg(json_build_array(pd.id, pd.task_id, pd.config_id, hooks.owner, hooks.url, pd.next_attempt_at) ORDER BY pd.id), '[]')::text
      FROM pd JOIN hooks ON hooks.task_id = pd.task_id AND hooks.id = pd.config_id)`;
    return { ctes, queued };
  }

  private reportFailed(
    creates: CreateRequest[],
    batch: [string, Pending][],
    failed: Map<string, unknown>,
    err: unknown,
  ): Map<string, unknown> {
    for (const c of creates) {
      c.settle.reject(err);
      this.log.error("could not store a task's writes; its callers get an error", {
        task: c.task.id,
        reason: reasonOf(err),
      });
    }
    for (const [id] of batch) {
      // A write refused on the way (fenced off, see apply) keeps that reason.
      if (!failed.has(id)) failed.set(id, err);
      this.log.error("could not store a task's writes; its callers get an error", {
        task: id,
        reason: reasonOf(failed.get(id)),
      });
    }
    return failed;
  }

  /** The row of a task as this replica last wrote it, if nobody else can have written it since. */
  private cachedRow(id: string): StoredRow | undefined {
    const cached = this.rows.get(id);
    if (!cached) return undefined;
    if (this.leases?.holdOf(id) === cached.hold) return cached.row;
    this.rows.delete(id);
    return undefined;
  }

  /** Keeps a task's row as just committed (see rows), while it runs here under `hold`. */
  private keepRow(id: string, row: StoredRow, hold: number | undefined): void {
    if (
      hold === undefined ||
      hold !== this.leases?.holdOf(id) ||
      isTerminal(row.state as TaskState) ||
      isInterrupted(row.state as TaskState)
    )
      this.rows.delete(id);
    else this.rows.set(id, { row, hold });
  }

  /**
   * The writes of one group as one statement, so one round trip: the creates (with their leases), the row
   * updates, the events, the leases of tasks that end and the NOTIFY, in data-modifying CTEs that all run or
   * none do. Rows this replica wrote last are not read back (see rows); others are read first. If a task is
   * held by another live replica (or its row is gone), nothing is written, the reason is recorded for that
   * task, and FencedOff makes the caller try each task alone (as apply does).
   */
  private async applyAtOnce(
    creates: CreateRequest[],
    batch: [string, Pending][],
    failed: Map<string, unknown>,
    ended: string[],
    queued: QueuedWithEvent[],
  ): Promise<Set<string>> {
    const leases = this.leases;
    const need = batch.filter(([id, p]) => needsRow(p) && !this.cachedRow(id)).map(([id]) => id);
    const read = new Map<string, StoredRow>();
    if (need.length)
      for (const r of (await this
        .sql`SELECT id, state, status_message, status_timestamp, metadata, history, artifacts, last_seq, node_state FROM tasks WHERE id IN ${this.sql(need)}`) as (StoredRow & {
        id: string;
      })[])
        read.set(r.id, r);
    const values: unknown[] = [];
    const param = (v: unknown, cast: string) => {
      values.push(v);
      return `$${values.length}::${cast}`;
    };
    const updates: string[] = [];
    const events: string[] = [];
    const notes: string[] = [];
    const ending: string[] = [];
    const written: { id: string; update: Params; hold: number | undefined }[] = [];
    for (const [id, p] of batch) {
      const hold = leases?.holdOf(id);
      const plan = this.planOrRefuse(id, p, () => this.cachedRow(id) ?? read.get(id) ?? null, failed);
      if (!plan) continue;
      if ("insert" in plan) throw new Error("a Postgres task is created by create(), never by a write");
      if ("update" in plan) {
        const u = plan.update;
        updates.push(
          `(${u
            .slice(0, 7)
            .map((v) => param(v, "text"))
            .join(", ")}, ${param(u[7], "int")}, ${param(u[8], "text")})`,
        );
        written.push({ id, update: u, hold });
      }
      if (plan.events) {
        const [taskId, first, last, json] = plan.events;
        events.push(
          `(${param(taskId, "text")}, ${param(first, "int")}, ${param(last, "int")}, ${param(json, "text")})`,
        );
        notes.push(`${id} ${last}`);
      }
      // A task that ends lets its lease go in the same commit (saving the runner's release a round trip).
      if (leases && p.status && isTerminal(p.status.state)) ending.push(id);
    }
    const tuples = creates.map(
      (c) =>
        `(${[c.task.id, c.task.contextId, c.owner, c.timestamp, c.requestMessageId, c.executor, c.metadataJson, c.historyJson, c.stateJson].map((v) => param(v, "text")).join(", ")})`,
    );
    if (updates.length + events.length + tuples.length === 0) return new Set();

    const me = leases ? param(leases.replica, "text") : "";
    const guard = "NOT EXISTS (SELECT 1 FROM blocked)";
    const ctes: string[] = [];
    if (updates.length)
      ctes.push(
        `v (id, state, status_message, status_timestamp, metadata, history, artifacts, last_seq, node_state) AS (VALUES ${updates.join(", ")})`,
      );
    if (events.length) ctes.push(`e (task_id, seq, last_seq, events) AS (VALUES ${events.join(", ")})`);
    const touched = [updates.length ? "SELECT id FROM v" : "", events.length ? "SELECT task_id FROM e" : ""]
      .filter(Boolean)
      .join(" UNION ");
    const blocked: string[] = [];
    if (leases && touched) {
      // The leases are read locked (FOR SHARE): a claim of one of these tasks by another replica waits for this
      // statement to commit (and then sees its events), or this one waits for the claim and reads the lease as
      // claimed. Read unlocked, a claim committed while this statement ran would let both write the task.
      ctes.push(`lk AS (SELECT task_id, replica, expires_at FROM task_leases WHERE task_id IN (${touched}) FOR SHARE)`);
      blocked.push(`SELECT task_id, 'held' FROM lk WHERE replica <> ${me} AND expires_at > ${DB_NOW_MS}`);
    }
    if (updates.length)
      blocked.push(`SELECT id, 'gone' FROM v WHERE NOT EXISTS (SELECT 1 FROM tasks t WHERE t.id = v.id)`);
    ctes.push(
      `blocked (task_id, why) AS (${blocked.length ? blocked.join(" UNION ALL ") : "SELECT NULL::text, NULL::text WHERE false"})`,
    );
    if (updates.length)
      ctes.push(`u AS (UPDATE tasks t SET state = v.state, status_message = v.status_message, status_timestamp = v.status_timestamp, updated_at = v.status_timestamp,
        metadata = v.metadata, history = v.history, artifacts = v.artifacts, last_seq = v.last_seq, node_state = v.node_state,
        head_bytes = octet_length(t.id) + octet_length(t.context_id) + coalesce(octet_length(v.status_message), 0) + coalesce(octet_length(v.metadata), 0),
        history_bytes = octet_length(v.history), artifacts_bytes = octet_length(v.artifacts)
        FROM v WHERE t.id = v.id AND ${guard} RETURNING t.id)`);
    if (events.length)
      ctes.push(
        `ev AS (INSERT INTO task_events (task_id, seq, last_seq, events) SELECT task_id, seq, last_seq, events FROM e WHERE ${guard} RETURNING task_id)`,
      );
    if (tuples.length) {
      ctes.push(`c (${CREATE_COLUMNS}) AS (VALUES ${tuples.join(", ")})`);
      ctes.push(`ins AS (${insertTasksFrom("c", guard)})`);
      if (leases)
        ctes.push(
          `lease AS (INSERT INTO task_leases (task_id, replica, expires_at) SELECT id, ${me}, ${DB_NOW_MS} + ${param(leases.ttlMs, "bigint")} FROM ins RETURNING task_id)`,
        );
      const hooks = webhooksCte(creates, param, "ins");
      if (hooks) ctes.push(hooks);
    }
    if (ending.length)
      ctes.push(
        `gone AS (DELETE FROM task_leases WHERE task_id = ANY(${param(pgArray(ending), "text[]")}) AND replica = ${me} AND ${guard} RETURNING task_id)`,
      );
    const notify = notes.length
      ? `(SELECT count(pg_notify('${EVENTS_CHANNEL}', p)) FROM unnest(${param(pgArray(chunkLines(notes, NOTIFY_BYTES)), "text[]")}) AS p WHERE ${guard})`
      : "0";
    let deliveries = "'[]'";
    if (events.length && this.pushDeliveries) {
      const q = this.queueDeliveriesSql(param, guard);
      ctes.push(...q.ctes);
      deliveries = q.queued;
    }
    const [result] = (await this.sql.unsafe(
      `WITH ${ctes.join(",\n")}
       SELECT (SELECT coalesce(string_agg(task_id || ' ' || why, ','), '') FROM blocked) AS blocked,
         ${tuples.length ? "(SELECT coalesce(string_agg(id, ','), '') FROM ins)" : "''"} AS inserted, ${notify} AS notified, ${deliveries} AS deliveries`,
      values,
    )) as { blocked: string; inserted: string; deliveries: string }[];
    if (result!.blocked) {
      for (const entry of result!.blocked.split(",")) {
        const [id, why] = entry.split(" ");
        failed.set(
          id!,
          why === "held"
            ? new HeldElsewhere(id)
            : new WriteRefused(`task ${id} is not stored (its creation was never committed)`),
        );
      }
      throw new FencedOff(); // nothing of the statement was written: each task is tried again on its own
    }
    for (const w of written) {
      const [, state, status_message, status_timestamp, metadata, history, artifacts, last_seq, node_state] =
        w.update as [string, string, string | null, string, string | null, string, string, number, string | null];
      this.keepRow(
        w.id,
        { state, status_message, status_timestamp, metadata, history, artifacts, last_seq, node_state },
        w.hold,
      );
    }
    ended.push(...ending);
    queued.push(...queuedOf(result!.deliveries));
    return new Set(result!.inserted ? result!.inserted.split(",") : []);
  }

  /**
   * The statements of a task's pending writes (see planWrite), or undefined: nothing to write, or refused before
   * anything of it ran (the task goes to `failed`, logged; the group's other tasks go on).
   */
  private planOrRefuse(
    id: string,
    p: Pending,
    stored: () => StoredRow | null,
    failed: Map<string, unknown>,
  ): WritePlan | undefined {
    try {
      return planWrite(id, p, stored);
    } catch (err) {
      failed.set(id, err);
      this.log.error("could not store a task's writes; its callers get an error", { task: id, reason: reasonOf(err) });
      return undefined;
    }
  }

  /** The statements of one group, in one transaction; returns the ids the creates inserted. */
  private async apply(
    tx: SQL,
    creates: CreateRequest[],
    batch: [string, Pending][],
    failed: Map<string, unknown>,
    ended: string[],
    queued: QueuedWithEvent[],
  ): Promise<Set<string>> {
    const inserted = await this.insertAll(tx, creates);
    // The leases locked first (see applyAtOnce): the fenced statements below then read them as they stand.
    if (this.leases && batch.length)
      await tx`SELECT task_id FROM task_leases WHERE task_id IN ${tx(batch.map(([id]) => id))} FOR SHARE`;
    // The rows an update rewrites, read (and locked) together.
    const needRows = batch.filter(([, p]) => needsRow(p)).map(([id]) => id);
    const rows = new Map<string, StoredRow>();
    if (needRows.length)
      for (const r of (await tx`SELECT id, state, status_message, status_timestamp, metadata, history, artifacts, last_seq, node_state FROM tasks WHERE id IN ${tx(needRows)} FOR UPDATE`) as (StoredRow & {
        id: string;
      })[])
        rows.set(r.id, r);
    const statements: Promise<unknown>[] = [];
    const fenced: [string, Promise<{ count: number }>][] = [];
    const notes: string[] = [];
    /** The (task, first seq) of each batch of events written. */
    const written: [string, number][] = [];
    for (const [id, p] of batch) {
      const plan = this.planOrRefuse(id, p, () => rows.get(id) ?? null, failed);
      if (!plan) continue;
      if ("update" in plan) fenced.push([id, tx.unsafe(this.updateTask, plan.update)]);
      if (plan.events) {
        fenced.push([id, tx.unsafe(this.insertEvents, plan.events)]);
        notes.push(`${id} ${plan.events[2]}`);
        written.push([plan.events[0], plan.events[1]]);
      }
      // A task that ends lets its lease go in the same commit (saving the runner's release a round trip).
      if (this.leases && p.status && isTerminal(p.status.state)) {
        statements.push(tx`DELETE FROM task_leases WHERE task_id = ${id} AND replica = ${this.leases.replica}`);
        ended.push(id);
      }
    }
    for (const payload of chunkLines(notes, NOTIFY_BYTES))
      statements.push(tx`SELECT pg_notify(${EVENTS_CHANNEL}, ${payload})`);
    let deliveries: Promise<{ deliveries: string }[]> | undefined;
    if (written.length && this.pushDeliveries) {
      // The events just written, read back by key in this transaction (a fenced-off one makes it roll back).
      const values: unknown[] = [];
      const param = (v: unknown, cast: string) => (values.push(v), `$${values.length}::${cast}`);
      const keys = written.map(([taskId, seq]) => `(${param(taskId, "text")}, ${param(seq, "int")})`);
      const q = this.queueDeliveriesSql(param, "true");
      deliveries = tx.unsafe(
        `WITH k (task_id, seq) AS (VALUES ${keys.join(", ")}), e AS (SELECT t.task_id, t.seq, t.last_seq, t.events FROM task_events t JOIN k USING (task_id, seq)), ${q.ctes.join(",\n")}
         SELECT ${q.queued} AS deliveries`,
        values,
      ) as Promise<{ deliveries: string }[]>;
    }
    const [results] = await Promise.all([Promise.all(fenced.map(([, q]) => q)), Promise.all(statements)]);
    // A write that changed nothing was fenced off: another live replica holds the task (see PostgresLeases).
    const refused = new Set(fenced.filter((_, i) => results[i]!.count === 0).map(([id]) => id));
    if (refused.size) {
      for (const id of refused) failed.set(id, new HeldElsewhere(id));
      throw new FencedOff(); // nothing of this transaction may stand: each task is tried again on its own
    }
    if (deliveries) queued.push(...queuedOf((await deliveries)[0]!.deliveries)); // committed with the transaction
    return inserted;
  }

  /** Inserts the creates (and their leases); returns the ids inserted (not those whose messageId was taken). */
  private async insertAll(q: SQL, creates: CreateRequest[]): Promise<Set<string>> {
    const inserted = new Set<string>();
    for (let i = 0; i < creates.length; i += CREATE_CHUNK)
      for (const r of await insertTasks(q, creates.slice(i, i + CREATE_CHUNK), this.leases)) inserted.add(r.id);
    return inserted;
  }

  /** After the commit: each create learns whether it made its task, or another create (elsewhere) did. */
  private async settleCreates(creates: CreateRequest[], inserted: Set<string>): Promise<void> {
    this.leases?.adopt(inserted);
    for (const c of creates) {
      if (inserted.has(c.task.id)) {
        const row = {
          state: "TASK_STATE_SUBMITTED",
          status_message: null,
          status_timestamp: c.timestamp,
          metadata: c.metadataJson,
          history: c.historyJson,
          artifacts: "[]",
          last_seq: 0,
          node_state: c.stateJson,
        };
        this.keepRow(c.task.id, row, this.leases?.holdOf(c.task.id));
        c.settle.resolve({ task: c.task, created: true });
        continue;
      }
      try {
        const [row] = (await this
          .sql`SELECT * FROM tasks WHERE id = ${c.task.id} OR (owner = ${c.owner} AND request_message_id = ${c.requestMessageId})
          ORDER BY id = ${c.task.id} DESC LIMIT 1`) as RawRow[];
        // Its own id: an earlier try of this create committed it (and its lease), and the answer was lost with
        // its connection (see onLiveConnection).
        const own = row?.id === c.task.id;
        if (own) this.leases?.adopt([c.task.id]);
        if (row) c.settle.resolve({ task: assemble(row, undefined, true), created: own });
        else c.settle.reject(new Error(`task ${c.task.id} was neither inserted nor found by its messageId`));
      } catch (err) {
        c.settle.reject(err);
      }
    }
  }
}

const UPDATE_TASK = `UPDATE tasks SET state = $2, status_message = $3, status_timestamp = $4, updated_at = $4, metadata = $5, history = $6, artifacts = $7, last_seq = $8, node_state = $9,
  head_bytes = octet_length(id) + octet_length(context_id) + coalesce(octet_length($3), 0) + coalesce(octet_length($5), 0),
  history_bytes = octet_length($6), artifacts_bytes = octet_length($7) WHERE id = $1`;

/** The columns of the rows insertTasksFrom reads, in the order creates give them. */
const CREATE_COLUMNS = "id, context_id, owner, ts, rmid, executor, metadata, history, node_state";

/**
 * The INSERT of new SUBMITTED tasks from `source` (named c, with CREATE_COLUMNS), where `guard` holds, skipping
 * those whose (owner, messageId) or id is taken; returns the ids inserted. The one statement that creates tasks,
 * alone (insertTasks) or in a group's statement (applyAtOnce).
 */
function insertTasksFrom(source: string, guard = "true"): string {
  return `INSERT INTO tasks (id, context_id, owner, state, status_timestamp, request_message_id, executor, created_at, updated_at, metadata, history, artifacts,
      node_state, last_seq, head_bytes, history_bytes, artifacts_bytes)
    SELECT c.id, c.context_id, c.owner, 'TASK_STATE_SUBMITTED', c.ts, c.rmid, c.executor, c.ts, c.ts, c.metadata, c.history, '[]',
      c.node_state, 0, octet_length(c.id) + octet_length(c.context_id) + coalesce(octet_length(c.metadata), 0), octet_length(c.history), 2
    FROM ${source} WHERE ${guard} ON CONFLICT DO NOTHING RETURNING id`;
}

/**
 * Inserts new SUBMITTED tasks, skipping those whose (owner, messageId) or id is taken (an earlier try of the same
 * create committed), and leases those it inserted to this replica, in one statement; returns the ids inserted.
 */
function insertTasks(tx: SQL, creates: CreateRequest[], leases: PostgresLeases | undefined): Promise<{ id: string }[]> {
  const values: unknown[] = leases ? [leases.replica, leases.ttlMs] : [];
  const tuples = creates.map((c) => {
    const at = values.length;
    values.push(
      c.task.id,
      c.task.contextId,
      c.owner,
      c.timestamp,
      c.requestMessageId,
      c.executor,
      c.metadataJson,
      c.historyJson,
      c.stateJson,
    );
    return `(${Array.from({ length: 9 }, (_, i) => `$${at + i + 1}::text`).join(", ")})`;
  });
  const insert = insertTasksFrom(`(VALUES ${tuples.join(", ")}) AS c (${CREATE_COLUMNS})`);
  const hooks = webhooksCte(creates, (v, cast) => (values.push(v), `$${values.length}::${cast}`), "inserted");
  if (!leases && !hooks) return tx.unsafe(insert, values);
  const ctes = [`inserted AS (${insert})`];
  if (leases)
    ctes.push(
      `lease AS (INSERT INTO task_leases (task_id, replica, expires_at) SELECT id, $1::text, ${DB_NOW_MS} + $2::bigint FROM inserted RETURNING task_id)`,
    );
  if (hooks) ctes.push(hooks);
  return tx.unsafe(`WITH ${ctes.join(", ")} SELECT id FROM inserted`, values);
}

/**
 * The data-modifying CTE that stores the webhooks sent with the creates (see NewTask.webhook) for the tasks
 * the CTE named `inserted` inserted: in the task's own statement, so neither is stored without the other.
 */
function webhooksCte(
  creates: CreateRequest[],
  param: (v: unknown, cast: string) => string,
  inserted: string,
): string | undefined {
  const tuples = creates
    .filter((c) => c.webhook)
    .map((c) => {
      const w = c.webhook!;
      const auth = w.authentication ? JSON.stringify(w.authentication) : null;
      return `(${[c.task.id, w.id, c.owner, w.url, w.token ?? null, auth, c.timestamp].map((v) => param(v, "text")).join(", ")})`;
    });
  if (tuples.length === 0) return undefined;
  return `hooks AS (INSERT INTO push_configs (task_id, id, owner, url, token, authentication, created_at)
    SELECT w.* FROM (VALUES ${tuples.join(", ")}) AS w (task_id, id, owner, url, token, authentication, created_at) JOIN ${inserted} ON ${inserted}.id = w.task_id)`;
}

/** Tasks of a group written by one statement (each takes at most 13 of a statement's 65,535 parameters). */
const ONE_STATEMENT_TASKS = 2_000;

/** A group whose writes were partly fenced off (see apply): rolled back, then tried task by task. */
class FencedOff extends Error {
  constructor() {
    super("some of the group's tasks are held by another replica");
  }
}

/** The deliveries a statement queued (see queueDeliveriesSql), from its JSON. */
function queuedOf(json: string): QueuedWithEvent[] {
  return (JSON.parse(json) as [string, string, string, string, string, string][]).map(
    ([id, taskId, configId, owner, url, nextAttemptAt]) => ({ id, taskId, configId, owner, url, nextAttemptAt }),
  );
}

/** Whether planWrite will read the task's row (anything beyond events alone). */
function needsRow(p: Pending): boolean {
  return (
    !p.insert &&
    (p.status !== undefined ||
      p.metadata !== undefined ||
      p.state !== undefined ||
      p.messages.length > 0 ||
      p.artifacts.length > 0 ||
      p.rowSeq !== undefined)
  );
}

/** Lines joined by "\n" into payloads of at most `max` bytes. */
function chunkLines(lines: string[], max: number): string[] {
  const out: string[] = [];
  let current = "";
  for (const line of lines) {
    if (current && current.length + 1 + line.length > max) {
      out.push(current);
      current = "";
    }
    current = current ? `${current}\n${line}` : line;
  }
  if (current) out.push(current);
  return out;
}

/** Tries of one write whose connection turned out closed by the server (see connectionLost). */
const LIVE_CONNECTION_TRIES = 3;

/**
 * Whether `err` says the connection was closed by the server (pg_terminate_backend, a restart, a failover):
 * the statement ended with it (a statement the server ends is rolled back; one sent on a connection closed
 * while idle in the pool never ran), so it can be sent again on a live one. Bun drops such a connection from
 * its pool once it sees it closed; a statement sent before that meets the closed socket.
 */
export function connectionLost(err: unknown): boolean {
  const e = err as { errno?: unknown; code?: unknown } | undefined;
  const state = typeof e?.errno === "string" ? e.errno : "";
  return state.startsWith("57P0") || state.startsWith("08") || e?.code === "ERR_POSTGRES_CONNECTION_CLOSED";
}

/** Runs `write`, again (up to LIVE_CONNECTION_TRIES in all) while it fails on a connection the server closed. */
async function onLiveConnection<T>(write: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await write();
    } catch (err) {
      if (attempt >= LIVE_CONNECTION_TRIES || !connectionLost(err)) throw err;
    }
  }
}
