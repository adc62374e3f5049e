import { sql } from "drizzle-orm";
import { bigint, index, integer, pgTable, primaryKey, text, uniqueIndex } from "drizzle-orm/pg-core";

/**
 * The node's durable state on Postgres, shared by every replica of one agent (see postgres-task-store.ts).
 * The same tables as SQLite's (../schema.ts), for one difference in kind: several processes write here at
 * once. The SQL migrations under postgres/migrations/ are generated from this file by drizzle-kit
 * (`npm run db:generate`) and embedded in the binary (migrations.gen.ts).
 *
 * Columns holding protocol objects are JSON text, exactly as they go on the wire (as in SQLite): the store
 * encodes them once and reads never rebuild them field by field. The generated SQL is edited by hand in one way
 * drizzle cannot express: ids and timestamps are COLLATE "C", so they sort byte by byte (as ULIDs, ISO times
 * and page tokens assume) whatever the database's own collation. Peers stay in each replica's local SQLite
 * file, where the CLI keeps them.
 */
export const tasks = pgTable(
  "tasks",
  {
    id: text("id").primaryKey(), // ULID: sorts by creation time
    contextId: text("context_id").notNull(),
    /** Certificate CN of the peer that created the task; every read is scoped by it. */
    owner: text("owner").notNull(),
    state: text("state").notNull(),
    statusTimestamp: text("status_timestamp").notNull(),
    /** Sequence number of the latest event the row reflects (see taskEvents). */
    lastSeq: integer("last_seq").notNull().default(0),
    /** messageId of the message that created the task, for idempotent retries; null for callers without one. */
    requestMessageId: text("request_message_id"),
    /** Which executor runs it; decides what happens to it after its replica is gone. */
    executor: text("executor").notNull(),
    createdAt: text("created_at").notNull(),
    updatedAt: text("updated_at").notNull(),
    /** Bytes of the row's JSON as a task on the wire carries it (see ../list-budget.ts), written with the row. */
    headBytes: integer("head_bytes").notNull().default(0),
    historyBytes: integer("history_bytes").notNull().default(0),
    artifactsBytes: integer("artifacts_bytes").notNull().default(0),
    statusMessage: text("status_message"),
    metadata: text("metadata"),
    history: text("history").notNull(),
    artifacts: text("artifacts").notNull(),
    /** What the node and its executor keep about the task, apart from the caller's metadata (see ../schema.ts). */
    nodeState: text("node_state"),
  },
  (t) => [
    // ListTasks: the caller's tasks newest first, with what its filters and byte budget need.
    index("tasks_owner_recent").on(
      t.owner,
      t.statusTimestamp,
      t.id,
      t.state,
      t.headBytes,
      t.historyBytes,
      t.artifactsBytes,
    ),
    index("tasks_context").on(t.contextId, t.owner),
    index("tasks_unfinished")
      .on(t.id)
      .where(sql`${t.state} IN ('TASK_STATE_SUBMITTED', 'TASK_STATE_WORKING')`),
    uniqueIndex("tasks_owner_request_message").on(t.owner, t.requestMessageId),
  ],
);

/**
 * How many tasks each owner has in each state, as rows of changes: statement triggers on `tasks` (migration
 * 0003) add one row per (owner, state) a statement changes, in its transaction, so the sum of `n` for an owner
 * and state is always exactly the count of its rows in `tasks`. Rows are only ever added, never updated in
 * place: replicas writing one owner's tasks at once never wait on (or deadlock over) a shared counter row.
 * compactCounts (postgres-task-store.ts) folds the rows into one per (owner, state) now and then.
 * ListTasks's totalSize reads it instead of counting the caller's tasks (330 ms a call at a million tasks).
 */
export const taskCounts = pgTable(
  "task_counts",
  {
    owner: text("owner").notNull(),
    state: text("state").notNull(),
    n: integer("n").notNull(),
  },
  (t) => [index("task_counts_owner_state").on(t.owner, t.state)],
);

/**
 * What each owner's stored tasks take, as rows of changes (like task_counts): triggers on `tasks` and
 * `task_events` (migration 0004) add a row per owner a statement changes, with the tasks and bytes (each row's
 * JSON, head_bytes + history_bytes + artifacts_bytes, and its events' JSON) it added or removed, so the sums
 * per owner are always exactly what its rows hold. Folded with task_counts (compactCounts). The per-caller
 * storage quotas (max_caller_bytes, max_caller_tasks) read it.
 */
export const callerUsage = pgTable(
  "caller_usage",
  {
    owner: text("owner").notNull(),
    tasks: integer("tasks").notNull(),
    bytes: bigint("bytes", { mode: "number" }).notNull(),
  },
  (t) => [index("caller_usage_owner").on(t.owner)],
);

/**
 * Every event of a task, numbered per task from 1; events committed together are one row (a JSON array
 * starting at `seq`). The table is the truth a subscriber on any replica replays from.
 */
export const taskEvents = pgTable(
  "task_events",
  {
    taskId: text("task_id").notNull(),
    seq: integer("seq").notNull(),
    lastSeq: integer("last_seq").notNull(),
    events: text("events").notNull(),
  },
  (t) => [primaryKey({ columns: [t.taskId, t.seq] })],
);

/** Webhooks a caller registered for its tasks (A2A TaskPushNotificationConfig). */
export const pushConfigs = pgTable(
  "push_configs",
  {
    taskId: text("task_id").notNull(),
    id: text("id").notNull(),
    owner: text("owner").notNull(),
    url: text("url").notNull(),
    token: text("token"),
    authentication: text("authentication"),
    createdAt: text("created_at").notNull(),
  },
  // By owner: max_push_configs_per_caller counts a caller's configs.
  (t) => [primaryKey({ columns: [t.taskId, t.id] }), index("push_configs_owner").on(t.owner)],
);

/** Push deliveries not yet acknowledged by their receiver, each claimed by one replica at a time. */
export const pushDeliveries = pgTable(
  "push_deliveries",
  {
    id: text("id").primaryKey(), // ULID: delivery order
    taskId: text("task_id").notNull(),
    configId: text("config_id").notNull(),
    body: text("body").notNull(),
    attempts: integer("attempts").notNull().default(0),
    nextAttemptAt: text("next_attempt_at").notNull(),
    lastError: text("last_error"),
    /** The replica that sends it (the one that queued it, or one that took it up after that one died)... */
    claimedBy: text("claimed_by"),
    /** ...until then (epoch ms, database clock), unless it renews its claims. */
    claimExpires: bigint("claim_expires", { mode: "number" }),
  },
  (t) => [
    index("push_deliveries_due").on(t.nextAttemptAt),
    index("push_deliveries_task").on(t.taskId, t.configId),
    index("push_deliveries_claim").on(t.claimedBy),
  ],
);

/**
 * Which replica runs a task, until when (epoch ms): the replica renews its leases while it runs them, and
 * another takes a task over once its lease has run out (its replica is gone).
 */
export const taskLeases = pgTable("task_leases", {
  taskId: text("task_id").primaryKey(),
  replica: text("replica").notNull(),
  expiresAt: bigint("expires_at", { mode: "number" }).notNull(),
  /**
   * A cancel asked of the task's holder (see PostgresTaskStore.requestCancel): the NOTIFY is only the fast
   * path, the holder also reads this at each renewal, so a request survives a missed notice and a takeover.
   * It goes with the lease (the task ended or was let go).
   */
  cancelReason: text("cancel_reason"),
});

/**
 * Answers one replica passes on to another (see PostgresTaskStore.requestAnswer): the row holds the message,
 * the NOTIFY only its id, so an answer of any size the node takes (max_body) gets through NOTIFY's 8,000-byte
 * payload. The replica that takes it deletes it; the sender deletes one nobody took.
 */
export const taskAnswers = pgTable("task_answers", {
  id: text("id").primaryKey(),
  taskId: text("task_id").notNull(),
  owner: text("owner").notNull(),
  message: text("message").notNull(),
});

/**
 * One row the readiness check writes (GET /health/ready, see postgres-probe.ts): a write that commits proves
 * the database takes this replica's writes (not read-only, not a standby, not out of space or connections).
 */
export const healthProbe = pgTable("health_probe", {
  id: integer("id").primaryKey(),
  checkedAt: text("checked_at").notNull(),
  replica: text("replica").notNull(),
});
