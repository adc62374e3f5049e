import { and, asc, desc, eq, gt, inArray, lt, or, sql, count } from "drizzle-orm";
import { A2AError } from "../protocol/errors";
import type { Artifact, ListTasksParams, ListTasksResult, Message, Task, TaskState, TaskStatus } from "../protocol/types";
import type { NewTask, TaskStore, UnfinishedTask } from "../tasks/task-store";
import type { Db } from "./database";
import { artifacts, messages, tasks } from "./schema";

type TaskRow = typeof tasks.$inferSelect;

const ph = sql.placeholder;
const DEFAULT_PAGE_SIZE = 50;

/**
 * TaskStore on SQLite through drizzle. The statements on the per-task hot path are prepared once; protocol
 * objects are stored as JSON text and parsed only when read.
 */
export class SqliteTaskStore implements TaskStore {
  private readonly insertTask;
  private readonly insertMessage;
  private readonly insertArtifact;
  private readonly updateStatus;
  private readonly selectTask;
  private readonly selectByRequest;
  private readonly selectMessages;
  private readonly selectArtifacts;
  private readonly maxPosition;
  private readonly maxArtifactPosition;

  constructor(private readonly db: Db) {
    this.insertTask = db
      .insert(tasks)
      .values({
        id: ph("id"),
        contextId: ph("contextId"),
        owner: ph("owner"),
        state: ph("state"),
        statusMessage: ph("statusMessage"),
        statusTimestamp: ph("ts"),
        metadata: ph("metadata"),
        requestMessageId: ph("requestMessageId"),
        executor: ph("executor"),
        createdAt: ph("ts"),
        updatedAt: ph("ts"),
      })
      .prepare();
    this.insertMessage = db
      .insert(messages)
      .values({
        taskId: ph("taskId"),
        position: ph("position"),
        messageId: ph("messageId"),
        role: ph("role"),
        body: ph("body"),
        createdAt: ph("ts"),
      })
      .prepare();
    this.insertArtifact = db
      .insert(artifacts)
      .values({ taskId: ph("taskId"), position: ph("position"), artifactId: ph("artifactId"), body: ph("body") })
      .onConflictDoUpdate({ target: [artifacts.taskId, artifacts.artifactId], set: { body: sql`excluded.body` } })
      .prepare();
    this.updateStatus = db
      .update(tasks)
      .set({ state: ph("state") as never, statusMessage: ph("statusMessage") as never, statusTimestamp: ph("ts") as never, updatedAt: ph("ts") as never })
      .where(eq(tasks.id, ph("id")))
      .prepare();
    this.selectTask = db
      .select()
      .from(tasks)
      .where(and(eq(tasks.id, ph("id")), eq(tasks.owner, ph("owner"))))
      .prepare();
    this.selectByRequest = db
      .select()
      .from(tasks)
      .where(and(eq(tasks.owner, ph("owner")), eq(tasks.requestMessageId, ph("messageId"))))
      .prepare();
    this.selectMessages = db
      .select({ body: messages.body })
      .from(messages)
      .where(eq(messages.taskId, ph("taskId")))
      .orderBy(asc(messages.position))
      .prepare();
    this.selectArtifacts = db
      .select({ body: artifacts.body })
      .from(artifacts)
      .where(eq(artifacts.taskId, ph("taskId")))
      .orderBy(asc(artifacts.position))
      .prepare();
    this.maxPosition = db
      .select({ n: sql<number>`coalesce(max(${messages.position}), -1)` })
      .from(messages)
      .where(eq(messages.taskId, ph("taskId")))
      .prepare();
    this.maxArtifactPosition = db
      .select({ n: sql<number>`coalesce(max(${artifacts.position}), -1)` })
      .from(artifacts)
      .where(eq(artifacts.taskId, ph("taskId")))
      .prepare();
  }

  create(input: NewTask): { task: Task; created: boolean } {
    return this.db.transaction(() => {
      const existing = this.selectByRequest.get({ owner: input.owner, messageId: input.message.messageId });
      if (existing) return { task: this.assemble(existing, undefined, true), created: false };
      this.insertTask.run({
        id: input.id,
        contextId: input.contextId,
        owner: input.owner,
        state: "TASK_STATE_SUBMITTED",
        statusMessage: null,
        ts: input.timestamp,
        metadata: input.metadata ? JSON.stringify(input.metadata) : null,
        requestMessageId: input.message.messageId,
        executor: input.executor,
      });
      this.writeMessage(input.id, 0, input.message, input.timestamp);
      const task: Task = {
        id: input.id,
        contextId: input.contextId,
        status: { state: "TASK_STATE_SUBMITTED", timestamp: input.timestamp },
        history: [input.message],
      };
      if (input.metadata) task.metadata = input.metadata;
      return { task, created: true };
    });
  }

  get(id: string, owner: string, historyLength?: number): Task | undefined {
    const row = this.selectTask.get({ id, owner });
    return row ? this.assemble(row, historyLength, true) : undefined;
  }

  list(owner: string, params: ListTasksParams): ListTasksResult {
    const pageSize = params.pageSize ?? DEFAULT_PAGE_SIZE;
    const filters = [eq(tasks.owner, owner)];
    if (params.contextId) filters.push(eq(tasks.contextId, params.contextId));
    if (params.status) filters.push(eq(tasks.state, params.status));
    if (params.statusTimestampAfter)
      filters.push(gt(tasks.statusTimestamp, new Date(params.statusTimestampAfter).toISOString()));
    const where = and(...filters);
    const totalSize = this.db.select({ n: count() }).from(tasks).where(where).get()?.n ?? 0;
    let pageWhere = where;
    if (params.pageToken) {
      const cursor = decodePageToken(params.pageToken);
      pageWhere = and(
        where,
        or(
          lt(tasks.statusTimestamp, cursor.timestamp),
          and(eq(tasks.statusTimestamp, cursor.timestamp), lt(tasks.id, cursor.id)),
        ),
      );
    }
    const rows = this.db
      .select()
      .from(tasks)
      .where(pageWhere)
      .orderBy(desc(tasks.statusTimestamp), desc(tasks.id))
      .limit(pageSize + 1)
      .all();
    const page = rows.slice(0, pageSize);
    const more = rows.length > pageSize;
    const last = page[page.length - 1];
    return {
      tasks: page.map((r) => this.assemble(r, params.historyLength, params.includeArtifacts ?? false)),
      nextPageToken: more && last ? encodePageToken(last.statusTimestamp, last.id) : "",
      pageSize,
      totalSize,
    };
  }

  appendMessage(taskId: string, message: Message, timestamp: string): void {
    this.db.transaction(() => {
      const n = (this.maxPosition.get({ taskId })?.n ?? -1) + 1;
      this.writeMessage(taskId, n, message, timestamp);
    });
  }

  setStatus(taskId: string, status: TaskStatus): void {
    this.updateStatus.run(statusParams(taskId, status));
  }

  finish(taskId: string, status: TaskStatus, produced: Artifact[], metadata?: Record<string, unknown>): void {
    const ts = status.timestamp ?? new Date().toISOString();
    this.db.transaction(() => {
      this.updateStatus.run(statusParams(taskId, status));
      if (metadata) {
        const row = this.db.select({ m: tasks.metadata }).from(tasks).where(eq(tasks.id, taskId)).get();
        const merged = { ...(row?.m ? (JSON.parse(row.m) as Record<string, unknown>) : {}), ...metadata };
        this.db.update(tasks).set({ metadata: JSON.stringify(merged) }).where(eq(tasks.id, taskId)).run();
      }
      if (produced.length > 0) {
        let pos = (this.maxArtifactPosition.get({ taskId })?.n ?? -1) + 1;
        for (const a of produced)
          this.insertArtifact.run({ taskId, position: pos++, artifactId: a.artifactId, body: JSON.stringify(a) });
      }
      if (status.message) {
        const n = (this.maxPosition.get({ taskId })?.n ?? -1) + 1;
        this.writeMessage(taskId, n, status.message, ts);
      }
    });
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
    const rows = this.db
      .select({ body: messages.body })
      .from(messages)
      .innerJoin(tasks, eq(messages.taskId, tasks.id))
      .where(and(eq(tasks.contextId, contextId), eq(tasks.owner, owner)))
      .orderBy(desc(messages.createdAt), desc(messages.taskId), desc(messages.position))
      .limit(limit)
      .all();
    return rows.reverse().map((r) => JSON.parse(r.body) as Message);
  }

  private writeMessage(taskId: string, position: number, m: Message, ts: string) {
    this.insertMessage.run({ taskId, position, messageId: m.messageId, role: m.role, body: JSON.stringify(m), ts });
  }

  private assemble(row: TaskRow, historyLength: number | undefined, withArtifacts: boolean): Task {
    const status: TaskStatus = { state: row.state as TaskState, timestamp: row.statusTimestamp };
    if (row.statusMessage) status.message = JSON.parse(row.statusMessage) as Message;
    const task: Task = { id: row.id, contextId: row.contextId, status };
    if (withArtifacts) {
      const arts = this.selectArtifacts.all({ taskId: row.id });
      if (arts.length > 0) task.artifacts = arts.map((a) => JSON.parse(a.body) as Artifact);
    }
    if (historyLength !== 0) {
      let hist = this.selectMessages.all({ taskId: row.id });
      if (historyLength !== undefined && hist.length > historyLength) hist = hist.slice(hist.length - historyLength);
      if (hist.length > 0) task.history = hist.map((h) => JSON.parse(h.body) as Message);
    }
    if (row.metadata) task.metadata = JSON.parse(row.metadata) as Record<string, unknown>;
    return task;
  }
}

function statusParams(id: string, status: TaskStatus) {
  return {
    id,
    state: status.state,
    statusMessage: status.message ? JSON.stringify(status.message) : null,
    ts: status.timestamp ?? new Date().toISOString(),
  };
}

function encodePageToken(timestamp: string, id: string): string {
  return Buffer.from(`${timestamp}|${id}`).toString("base64url");
}

function decodePageToken(token: string): { timestamp: string; id: string } {
  const text = Buffer.from(token, "base64url").toString("utf8");
  const bar = text.indexOf("|");
  if (bar <= 0 || bar === text.length - 1) throw A2AError.invalidParams("pageToken is not one this node issued");
  return { timestamp: text.slice(0, bar), id: text.slice(bar + 1) };
}
