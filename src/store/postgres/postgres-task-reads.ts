import type { SQL } from "bun";

import type { ListTasksParams, ListTasksResult, Message, StreamResponse, Task } from "../../protocol/types";
import type { CallerUsage, StoredEvent, TaskSnapshot, UnfinishedTask } from "../../tasks/task-store";
import { DEFAULT_PAGE_SIZE, listedColumns, type ListedRow, pageOf } from "../list-page";
import { decodePageToken } from "../page-token";
import { assemble, lastMessages, stateOf, type TaskColumns } from "../task-rows";
import type { CountFolding } from "./count-folding";

/**
 * The read side of PostgresTaskStore: each read is one query (or a few) on the shared database, and none of
 * them touches the store's write state (the pending writes, the group commit, the kept rows), so they live here
 * apart from it, taking the `sql` handle; PostgresTaskStore delegates its TaskStore reads to one of these.
 * Reads of task_counts and caller_usage report the rows they summed to `counts`, which decides when to fold
 * them (see CountFolding), so the folding shared with the writes is passed in rather than owned here.
 */
export class PostgresTaskReads {
  constructor(
    private readonly sql: SQL,
    /** Bytes of task JSON one ListTasks page may carry (see list-budget.ts). */
    private readonly maxListBytes: number,
    private readonly counts: CountFolding,
  ) {}

  async get(id: string, owner: string, historyLength?: number): Promise<Task | undefined> {
    const [row] = await this.sql`SELECT * FROM tasks WHERE id = ${id} AND owner = ${owner}`;
    return row ? assemble(row as RawRow, historyLength, true) : undefined;
  }

  async snapshot(id: string, owner: string, historyLength?: number): Promise<TaskSnapshot | undefined> {
    const [row] = await this.sql`SELECT * FROM tasks WHERE id = ${id} AND owner = ${owner}`;
    if (!row) return undefined;
    const r = row as RawRow;
    return { task: assemble(r, historyLength, true), lastSeq: r.last_seq, state: stateOf(r.node_state) };
  }

  async list(owner: string, params: ListTasksParams): Promise<ListTasksResult> {
    const pageSize = params.pageSize ?? DEFAULT_PAGE_SIZE;
    const cursor = params.pageToken ? decodePageToken(params.pageToken) : undefined;
    const where = ["owner = $1"];
    const values: unknown[] = [owner];
    const add = (clause: (n: string) => string, value: unknown) => {
      values.push(value);
      where.push(clause(`$${values.length}`));
    };
    if (params.contextId) add((n) => `context_id = ${n}`, params.contextId);
    if (params.status) add((n) => `state = ${n}`, params.status);
    if (params.statusTimestampAfter)
      add((n) => `status_timestamp > ${n}`, new Date(params.statusTimestampAfter).toISOString());
    // totalSize from task_counts when the filters are owner and state alone (counting the caller's tasks
    // instead cost 330 ms a call at a million); the other filters count the tasks they match, which
    // tasks_owner_recent or tasks_context bound.
    const counted = params.contextId || params.statusTimestampAfter;
    const countQuery = counted
      ? `SELECT count(*)::int AS n, 0 AS summed FROM tasks WHERE ${where.join(" AND ")}`
      : `SELECT coalesce(sum(n), 0)::int AS n, count(*)::int AS summed FROM task_counts WHERE ${where.join(" AND ")}`;
    const countValues = [...values];
    if (cursor) {
      values.push(cursor.timestamp, cursor.id);
      const t = `$${values.length - 1}`;
      where.push(`(status_timestamp, id) < (${t}, $${values.length})`); // a range of tasks_owner_recent
    }
    values.push(pageSize + 1);
    // The page is planned from tasks_owner_recent alone, which holds each task's sizes: a task the page
    // leaves out (or the parts of one it cuts) is never read.
    const [[{ n: totalSize, summed }], candidates] = await Promise.all([
      this.sql.unsafe(countQuery, countValues) as Promise<{ n: number; summed: number }[]>,
      this.sql.unsafe(
        `SELECT id, status_timestamp AS "statusTimestamp", head_bytes AS "headBytes", history_bytes AS "historyBytes", artifacts_bytes AS "artifactsBytes"
         FROM tasks WHERE ${where.join(" AND ")} ORDER BY status_timestamp DESC, id DESC LIMIT $${values.length}`,
        values,
      ),
    ]);
    this.counts.summed(summed);
    const page = await pageOf(candidates, params, this.maxListBytes, async (taskId, parts) => {
      const [row] = await this.sql.unsafe(`SELECT ${listedColumns(parts, "false")} FROM tasks WHERE id = $1`, [taskId]);
      return row as ListedRow;
    });
    return { ...page, totalSize };
  }

  async eventsAfter(taskId: string, afterSeq: number): Promise<StoredEvent[]> {
    const rows = await this
      .sql`SELECT seq, events FROM task_events WHERE task_id = ${taskId} AND last_seq > ${afterSeq} ORDER BY seq`;
    const out: StoredEvent[] = [];
    for (const row of rows as { seq: number; events: string }[]) {
      const events = JSON.parse(row.events) as StreamResponse[];
      for (let i = 0; i < events.length; i++)
        if (row.seq + i > afterSeq) out.push({ seq: row.seq + i, response: events[i] });
    }
    return out;
  }

  async lastEventSeq(taskId: string): Promise<number> {
    const [row] = await this
      .sql`SELECT coalesce(max(last_seq), 0)::int AS n FROM task_events WHERE task_id = ${taskId}`;
    return (row as { n: number }).n;
  }

  async usage(owner: string): Promise<CallerUsage> {
    // caller_usage holds rows of changes (see schema.ts): summed here, folded by compactCounts.
    const [row] = (await this
      .sql`SELECT coalesce(sum(tasks), 0)::float8 AS tasks, coalesce(sum(bytes), 0)::float8 AS bytes, count(*)::int AS summed
      FROM caller_usage WHERE owner = ${owner}`) as (CallerUsage & { summed: number })[];
    this.counts.summed(row.summed);
    return { tasks: row.tasks, bytes: row.bytes };
  }

  async heaviest(limit: number): Promise<(CallerUsage & { owner: string })[]> {
    return (await this.sql`SELECT owner, sum(tasks)::float8 AS tasks, sum(bytes)::float8 AS bytes FROM caller_usage
      GROUP BY owner HAVING sum(tasks) <> 0 OR sum(bytes) <> 0 ORDER BY sum(bytes) DESC, owner LIMIT ${limit}`) as (CallerUsage & {
      owner: string;
    })[];
  }

  async countInContext(contextId: string, owner: string): Promise<number> {
    const [row] = await this
      .sql`SELECT count(*)::int AS n FROM tasks WHERE context_id = ${contextId} AND owner = ${owner}`;
    return (row as { n: number }).n;
  }

  async unfinished(): Promise<UnfinishedTask[]> {
    const rows = (await this
      .sql`SELECT id, owner, state, executor FROM tasks WHERE state IN ('TASK_STATE_SUBMITTED', 'TASK_STATE_WORKING') ORDER BY id`) as UnfinishedTask[];
    return rows.map(({ id, owner, state, executor }) => ({ id, owner, state, executor }));
  }

  async contextHistory(contextId: string, owner: string, limit: number): Promise<Message[]> {
    if (limit <= 0) return [];
    // Every task holds at least one message: the newest `limit` tasks hold all that can be returned.
    const rows = await this
      .sql`SELECT history FROM tasks WHERE context_id = ${contextId} AND owner = ${owner} ORDER BY id DESC LIMIT ${limit}`;
    return lastMessages(rows as { history: string }[], limit);
  }
}

/** A task's row as `SELECT *` reads it (also read back by PostgresTaskStore when a create lost its race). */
export interface RawRow extends TaskColumns {
  last_seq: number;
  node_state?: string | null;
}
