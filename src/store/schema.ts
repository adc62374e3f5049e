import { sql } from "drizzle-orm";
import { index, integer, primaryKey, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";

/**
 * The node's durable state. Columns named body/metadata/status_message hold protocol objects as JSON text,
 * exactly as they go on the wire (the store encodes them once; reads never rebuild them field by field).
 */
export const tasks = sqliteTable(
  "tasks",
  {
    id: text("id").primaryKey(), // ULID: sorts by creation time
    contextId: text("context_id").notNull(),
    /** Certificate CN of the peer that created the task; every read is scoped by it. */
    owner: text("owner").notNull(),
    state: text("state").notNull(),
    /** The TaskStatus.message, if any (JSON). */
    statusMessage: text("status_message"),
    statusTimestamp: text("status_timestamp").notNull(),
    metadata: text("metadata"),
    /** messageId of the message that created the task, for idempotent retries. */
    requestMessageId: text("request_message_id").notNull(),
    /** Which executor runs it; decides what happens to it after a restart. */
    executor: text("executor").notNull(),
    createdAt: text("created_at").notNull(),
    updatedAt: text("updated_at").notNull(),
  },
  (t) => [
    index("tasks_owner_recent").on(t.owner, t.statusTimestamp, t.id),
    index("tasks_context").on(t.contextId, t.id),
    index("tasks_state").on(t.state),
    uniqueIndex("tasks_owner_request_message").on(t.owner, t.requestMessageId),
  ],
);

/** The conversation of a task, in order (user messages and agent replies). */
export const messages = sqliteTable(
  "messages",
  {
    taskId: text("task_id")
      .notNull()
      .references(() => tasks.id, { onDelete: "cascade" }),
    position: integer("position").notNull(),
    messageId: text("message_id").notNull(),
    role: text("role").notNull(),
    body: text("body").notNull(),
    createdAt: text("created_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.taskId, t.position] })],
);

export const artifacts = sqliteTable(
  "artifacts",
  {
    taskId: text("task_id")
      .notNull()
      .references(() => tasks.id, { onDelete: "cascade" }),
    position: integer("position").notNull(),
    artifactId: text("artifact_id").notNull(),
    body: text("body").notNull(),
  },
  (t) => [primaryKey({ columns: [t.taskId, t.position] }), uniqueIndex("artifacts_task_artifact").on(t.taskId, t.artifactId)],
);

/** Names to URLs, and optionally the pinned certificate fingerprint of each peer. */
export const peers = sqliteTable("peers", {
  name: text("name").primaryKey(),
  url: text("url").notNull(),
  fingerprint: text("fingerprint"),
  addedAt: text("added_at")
    .notNull()
    .default(sql`(strftime('%Y-%m-%dT%H:%M:%fZ','now'))`),
});
