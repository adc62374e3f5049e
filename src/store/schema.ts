import { sql } from "drizzle-orm";
import { index, integer, primaryKey, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";

/**
 * The node's durable state. The SQL migrations under migrations/ are generated from this file by drizzle-kit
 * and then edited by hand in one way drizzle cannot express: every table but `tasks` is WITHOUT ROWID, so a
 * row lives in its primary-key b-tree and each write touches one b-tree fewer. `tasks` holds JSON of any size,
 * and a WITHOUT ROWID b-tree compares whole records while it seeks: finding one task read several neighbouring
 * rows in full (measured: 10-16 ms per lookup among 2 MiB tasks, 1 s for a page of 100). As a rowid table
 * (migration 0005) its lookups compare ids in the primary-key index only, and its small columns come first in
 * each row, before the JSON, so reading them never walks a large row's overflow pages.
 *
 * Columns history/artifacts/metadata/status_message hold protocol objects as JSON text, exactly as they go
 * on the wire (the store encodes them once; reads never rebuild them field by field).
 */
export const tasks = sqliteTable(
  "tasks",
  {
    id: text("id").primaryKey(), // ULID: sorts by creation time
    contextId: text("context_id").notNull(),
    /** Certificate CN of the peer that created the task; every read is scoped by it. */
    owner: text("owner").notNull(),
    state: text("state").notNull(),
    statusTimestamp: text("status_timestamp").notNull(),
    /** Sequence number of the task's latest event (see taskEvents); 0 before the first. */
    lastSeq: integer("last_seq").notNull().default(0),
    /**
     * Set when the task's events 1..last_seq are not stored in task_events because this row implies them:
     * a WORKING status at this time, each artifact once whole (lastChunk), then the row's final status. A
     * task that is created, run and finished within one group commit (any blocking call to a quick executor)
     * has exactly those events, and its row never changes again, so storing them a second time would only
     * double what every such task writes.
     */
    workingAt: text("working_at"),
    /** messageId of the message that created the task, for idempotent retries. */
    requestMessageId: text("request_message_id").notNull(),
    /** Which executor runs it; decides what happens to it after a restart. */
    executor: text("executor").notNull(),
    createdAt: text("created_at").notNull(),
    updatedAt: text("updated_at").notNull(),
    /**
     * Bytes of the row's JSON as a task on the wire carries it: headBytes for id, contextId, status message and
     * metadata; the other two for history and artifacts. ListTasks plans its page from them in the index
     * below (see list-budget.ts), reading no task it leaves out. Written with the row, by the same statement,
     * from the same values (octet_length of the JSON text).
     */
    headBytes: integer("head_bytes").notNull().default(0),
    historyBytes: integer("history_bytes").notNull().default(0),
    artifactsBytes: integer("artifacts_bytes").notNull().default(0),
    /** The TaskStatus.message, if any (JSON). */
    statusMessage: text("status_message"),
    metadata: text("metadata"),
    /**
     * The conversation (Message[]) and the artifacts (Artifact[]) live in the task's own row: a task is then
     * one row in five b-trees, written once per group commit, instead of rows in three tables.
     */
    history: text("history").notNull(),
    artifacts: text("artifacts").notNull(),
    /**
     * What the node and its executor keep about the task (see TaskChange.state), as JSON: a column of its own,
     * apart from `metadata`, which a caller writes, so nothing a caller sends is read back as the node's own.
     * Null for most tasks (migration 0009).
     */
    nodeState: text("node_state"),
  },
  (t) => [
    // ListTasks: the caller's tasks newest first, with what its filters and its byte budget need (state and
    // the sizes) in the index, so planning a page never reads a task's row.
    index("tasks_owner_recent").on(
      t.owner,
      t.statusTimestamp,
      t.id,
      t.state,
      t.headBytes,
      t.historyBytes,
      t.artifactsBytes,
    ),
    // A conversation's first task has the conversation's id (the node names a new context after the task that
    // starts it), so only the tasks that continue one need this index; most tasks start one and skip it.
    index("tasks_context")
      .on(t.contextId, t.id)
      .where(sql`${t.contextId} != ${t.id}`),
    // Only tasks still in flight are indexed by state: a task that starts and ends between two commits
    // never touches this index.
    index("tasks_unfinished")
      .on(t.id)
      .where(sql`${t.state} IN ('TASK_STATE_SUBMITTED', 'TASK_STATE_WORKING')`),
    uniqueIndex("tasks_owner_request_message").on(t.owner, t.requestMessageId),
  ],
);

/**
 * How many tasks each owner has in each state, kept by triggers on `tasks` (migration 0008) in the same
 * transaction as the row written, so it is always exactly `SELECT count(*) FROM tasks GROUP BY owner, state`.
 * ListTasks's totalSize reads it instead of counting the caller's tasks (150 ms a call at a million tasks).
 */
export const taskCounts = sqliteTable(
  "task_counts",
  {
    owner: text("owner").notNull(),
    state: text("state").notNull(),
    n: integer("n").notNull(),
  },
  (t) => [primaryKey({ columns: [t.owner, t.state] })],
);

/**
 * What each owner's stored tasks take: how many, and their bytes as written (each row's JSON, head_bytes +
 * history_bytes + artifacts_bytes, and its events' JSON), kept by triggers on `tasks` and `task_events`
 * (migration 0009) in the same transaction as each write, as task_counts is. The per-caller storage quotas
 * (max_caller_bytes, max_caller_tasks) and the free-space floor's "heaviest caller" read it: one row per caller.
 */
export const callerUsage = sqliteTable("caller_usage", {
  owner: text("owner").primaryKey(),
  tasks: integer("tasks").notNull(),
  bytes: integer("bytes").notNull(),
});

/**
 * Every event of a task (status and artifact updates), numbered per task from 1, so a client that lost its
 * stream can ask for everything after the last number it saw. Events committed together are one row (a JSON
 * array starting at `seq`), which keeps a task that streams thousands of chunks to one row per commit.
 */
export const taskEvents = sqliteTable(
  "task_events",
  {
    taskId: text("task_id").notNull(),
    /** Sequence number of the first event in `events`. */
    seq: integer("seq").notNull(),
    lastSeq: integer("last_seq").notNull(),
    events: text("events").notNull(),
  },
  (t) => [primaryKey({ columns: [t.taskId, t.seq] })],
);

/** Webhooks a caller registered for its tasks (A2A TaskPushNotificationConfig). */
export const pushConfigs = sqliteTable(
  "push_configs",
  {
    taskId: text("task_id").notNull(),
    id: text("id").notNull(),
    owner: text("owner").notNull(),
    url: text("url").notNull(),
    /** Shared secret the receiver verifies (HMAC of the body); returned only to the owner, as the spec does. */
    token: text("token"),
    /** The registered AuthenticationInfo (JSON), sent as the receiver asked. */
    authentication: text("authentication"),
    createdAt: text("created_at").notNull(),
  },
  // By owner: max_push_configs_per_caller counts a caller's configs (a range this limit keeps short).
  (t) => [primaryKey({ columns: [t.taskId, t.id] }), index("push_configs_owner").on(t.owner)],
);

/** Push deliveries not yet acknowledged by their receiver: the queue survives restarts. */
export const pushDeliveries = sqliteTable(
  "push_deliveries",
  {
    id: text("id").primaryKey(), // ULID: delivery order
    taskId: text("task_id").notNull(),
    configId: text("config_id").notNull(),
    body: text("body").notNull(),
    attempts: integer("attempts").notNull().default(0),
    nextAttemptAt: text("next_attempt_at").notNull(),
    lastError: text("last_error"),
  },
  (t) => [index("push_deliveries_due").on(t.nextAttemptAt)],
);

/**
 * Names to URLs, and optionally the pin of each peer: a key pin (spki:sha256:...) or an older certificate fingerprint
 * (AA:BB:...).
 */
export const peers = sqliteTable("peers", {
  name: text("name").primaryKey(),
  url: text("url").notNull(),
  fingerprint: text("fingerprint"),
  addedAt: text("added_at")
    .notNull()
    .default(sql`(strftime('%Y-%m-%dT%H:%M:%fZ','now'))`),
  /**
   * How the server is verified: 'fleet' (mutual TLS, our fleet CA, the CN is the name), 'system' (an agent
   * outside the fleet, checked by host name against the runtime's CA store) or 'ca' (outside, against ca_file).
   */
  trust: text("trust").notNull().default("fleet"),
  caFile: text("ca_file"),
  /**
   * Credentials for an outside peer: 'bearer' (auth_file holds the token) or 'header' (auth_file holds one
   * `Name: value` line). Only the file's path is kept; the secret is read from it at each use, so rotating it
   * needs no re-add, and the database never holds it.
   */
  authKind: text("auth_kind"),
  authFile: text("auth_file"),
  /** Set when the person allowed plain http:// to a host that is not this machine (--insecure-http). */
  insecureHttp: integer("insecure_http", { mode: "boolean" }).notNull().default(false),
});

/**
 * Bearer tokens of callers outside the fleet (the token listener): the caller's name and the SHA-256 of its
 * token, never the token itself. The caller name is what task scoping uses, as the CN is for a certificate.
 */
export const callerTokens = sqliteTable("caller_tokens", {
  name: text("name").primaryKey(),
  tokenHash: text("token_hash").notNull(),
  createdAt: text("created_at").notNull(),
});

/**
 * One row, rewritten by the readiness probe (GET /health/ready) through a connection of its own: a commit that
 * lands proves the database file at its path takes writes now (not full, not locked by another process, not
 * read-only, not deleted from under the node).
 */
export const healthProbe = sqliteTable("health_probe", {
  id: integer("id").primaryKey(),
  checkedAt: text("checked_at").notNull(),
});
