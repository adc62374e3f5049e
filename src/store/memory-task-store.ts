import type { ListTasksParams, ListTasksResult, Message, StreamResponse, Task } from "../protocol/types";
import {
  DroppedWrite,
  FINAL_STATES,
  WriteRefused,
  type CallerUsage,
  type NewTask,
  type StoredEvent,
  type TaskChange,
  type TaskSnapshot,
  type TaskStore,
  type UnfinishedTask,
} from "../tasks/task-store";
import { DEFAULT_PAGE_SIZE } from "./list-page";
import { decodePageToken, encodePageToken } from "./page-token";
import { mergeArtifacts, toJson } from "./pending-writes";

interface Entry {
  task: Task;
  owner: string;
  executor: string;
  events: StreamResponse[];
  rowSeq: number;
  /** The node state (see TaskChange.state), never part of `task`. */
  state: Record<string, unknown>;
}

/**
 * TaskStore in memory, for unit tests of what sits above the store, and the plainest reading of the contract
 * (see TaskStore). Writes are applied together at the end of the turn, as a group commit would apply them: reads
 * see only applied ("committed") state. Every value is copied through JSON on the way in and out, so nothing a
 * caller keeps a reference to can change what is stored, and what cannot be serialised is refused as SQLite's
 * store refuses it. Nothing survives the process.
 */
export class MemoryTaskStore implements TaskStore {
  private readonly tasks = new Map<string, Entry>();
  private readonly byRequest = new Map<string, string>();
  /** Creates not yet applied, by owner + "\0" + messageId (idempotency must see them). */
  private readonly pendingRequests = new Map<string, { task: Task; committed: Promise<void> }>();
  private queue: { apply: () => void; resolve: () => void; reject: (err: unknown) => void; taskId?: string }[] = [];

  async create(input: NewTask): Promise<{ task: Task; created: boolean; committed: Promise<void> }> {
    const message = copy<Message>(toJson(input.message, "message"));
    const metadata = input.metadata ? copy<Record<string, unknown>>(toJson(input.metadata, "metadata")) : undefined;
    const state = input.state ? copy<Record<string, unknown>>(toJson(input.state, "node state")) : {};
    const idempotent = input.idempotent !== false;
    const key = `${input.owner}\0${input.message.messageId}`;
    if (idempotent) {
      const pending = this.pendingRequests.get(key);
      if (pending) return { task: pending.task, created: false, committed: pending.committed };
      const existing = this.byRequest.get(key);
      if (existing)
        return { task: this.read(existing, input.owner) as Task, created: false, committed: Promise.resolve() };
    }
    const task: Task = {
      id: input.id,
      contextId: input.contextId,
      status: { state: "TASK_STATE_SUBMITTED", timestamp: input.timestamp },
      history: [message],
    };
    if (metadata) task.metadata = metadata;
    const stored = copy<Task>(JSON.stringify(task));
    const committed = this.enqueue(undefined, () => {
      this.tasks.set(input.id, {
        task: stored,
        owner: input.owner,
        executor: input.executor,
        events: [],
        rowSeq: 0,
        state,
      });
      if (idempotent) this.byRequest.set(key, input.id);
      this.pendingRequests.delete(key);
    });
    if (idempotent) this.pendingRequests.set(key, { task, committed });
    return { task, created: true, committed };
  }

  record(taskId: string, change: TaskChange): Promise<void> {
    let c: TaskChange;
    try {
      // Serialised whole before anything is queued: a change that cannot be stored leaves nothing behind.
      c = copy<TaskChange>(toJson(change, "change"));
    } catch (err) {
      return Promise.reject(err);
    }
    return this.enqueue(taskId, () => {
      const e = this.tasks.get(taskId);
      if (!e) throw new WriteRefused(`task ${taskId} is not stored (its creation was never committed)`);
      const t = e.task;
      if (c.history?.length) t.history = [...(t.history ?? []), ...c.history];
      if (c.status) t.status = c.status;
      if (c.artifacts?.length) t.artifacts = mergeArtifacts(t.artifacts ?? [], c.artifacts);
      if (c.metadata) t.metadata = { ...t.metadata, ...c.metadata };
      if (c.state) e.state = { ...e.state, ...c.state };
      if (c.events?.items.length) e.events.push(...c.events.items);
      if (c.rowSeq !== undefined) e.rowSeq = c.rowSeq;
    });
  }

  async get(id: string, owner: string, historyLength?: number): Promise<Task | undefined> {
    return this.read(id, owner, historyLength);
  }

  private read(id: string, owner: string, historyLength?: number): Task | undefined {
    const e = this.tasks.get(id);
    return e && e.owner === owner ? view(e.task, historyLength, true) : undefined;
  }

  async list(owner: string, params: ListTasksParams): Promise<ListTasksResult> {
    const pageSize = params.pageSize ?? DEFAULT_PAGE_SIZE;
    const after = params.statusTimestampAfter ? new Date(params.statusTimestampAfter).toISOString() : undefined;
    const matching = [...this.tasks.values()]
      .filter((e) => e.owner === owner)
      .map((e) => e.task)
      .filter(
        (t) =>
          (!params.contextId || t.contextId === params.contextId) &&
          (!params.status || t.status.state === params.status),
      )
      .filter((t) => !after || (t.status.timestamp ?? "") > after)
      .sort((a, b) => compare(b, a));
    let from = 0;
    if (params.pageToken) {
      const cursor = decodePageToken(params.pageToken);
      from = matching.findIndex((t) => compare(t, cursor) < 0);
      if (from === -1) from = matching.length;
    }
    const page = matching.slice(from, from + pageSize);
    const more = from + pageSize < matching.length;
    const last = page[page.length - 1];
    return {
      tasks: page.map((t) => view(t, params.historyLength, params.includeArtifacts ?? false)),
      nextPageToken: more && last ? encodePageToken(last.status.timestamp ?? "", last.id) : "",
      pageSize,
      totalSize: matching.length,
    };
  }

  async eventsAfter(taskId: string, afterSeq: number): Promise<StoredEvent[]> {
    const events = this.tasks.get(taskId)?.events ?? [];
    const out: StoredEvent[] = [];
    for (let i = Math.max(0, afterSeq); i < events.length; i++)
      out.push({ seq: i + 1, response: copy(JSON.stringify(events[i])) });
    return out;
  }

  async lastEventSeq(taskId: string): Promise<number> {
    return this.tasks.get(taskId)?.events.length ?? 0;
  }

  async snapshot(id: string, owner: string, historyLength?: number): Promise<TaskSnapshot | undefined> {
    const e = this.tasks.get(id);
    return e && e.owner === owner
      ? { task: view(e.task, historyLength, true), lastSeq: e.rowSeq, state: copy(JSON.stringify(e.state)) }
      : undefined;
  }

  async countInContext(contextId: string, owner: string): Promise<number> {
    let n = 0;
    for (const e of this.tasks.values()) if (e.owner === owner && e.task.contextId === contextId) n++;
    return n;
  }

  async usage(owner: string): Promise<CallerUsage> {
    const u = { tasks: 0, bytes: 0 };
    for (const e of this.tasks.values()) if (e.owner === owner) addUsage(u, e);
    return u;
  }

  async heaviest(limit: number): Promise<(CallerUsage & { owner: string })[]> {
    const by = new Map<string, CallerUsage>();
    for (const e of this.tasks.values()) {
      let u = by.get(e.owner);
      if (!u) by.set(e.owner, (u = { tasks: 0, bytes: 0 }));
      addUsage(u, e);
    }
    return [...by]
      .map(([owner, u]) => ({ owner, ...u }))
      .sort((a, b) => b.bytes - a.bytes || (a.owner < b.owner ? -1 : 1))
      .slice(0, limit);
  }

  async unfinished(): Promise<UnfinishedTask[]> {
    return [...this.tasks.values()]
      .filter((e) => e.task.status.state === "TASK_STATE_SUBMITTED" || e.task.status.state === "TASK_STATE_WORKING")
      .sort((a, b) => (a.task.id < b.task.id ? -1 : a.task.id > b.task.id ? 1 : 0))
      .map((e) => ({ id: e.task.id, owner: e.owner, state: e.task.status.state, executor: e.executor }));
  }

  async contextHistory(contextId: string, owner: string, limit: number): Promise<Message[]> {
    const all = [...this.tasks.values()]
      .filter((e) => e.owner === owner && e.task.contextId === contextId)
      .sort((a, b) => (a.task.id < b.task.id ? -1 : 1))
      .flatMap((e) => e.task.history ?? []);
    return copy(JSON.stringify(all.length > limit ? all.slice(all.length - limit) : all));
  }

  deleteFinished(before: string, limit: number): Promise<string[]> {
    const cutoff = new Date(before).toISOString();
    const final = new Set<string>(FINAL_STATES);
    const ids = [...this.tasks.values()]
      .filter((e) => final.has(e.task.status.state) && (e.task.status.timestamp ?? "") < cutoff)
      .map((e) => e.task.id)
      .sort()
      .slice(0, limit);
    for (const id of ids) this.tasks.delete(id);
    for (const [key, id] of this.byRequest) if (!this.tasks.has(id)) this.byRequest.delete(key);
    return Promise.resolve(ids);
  }

  /** Applies what is queued now (a group commit would at its next turn). */
  flush(): void {
    const batch = this.queue;
    this.queue = [];
    for (const w of batch) {
      try {
        w.apply();
        w.resolve();
      } catch (err) {
        w.reject(err);
      }
    }
  }

  discard(taskId: string): void {
    const dropped = this.queue.filter((q) => q.taskId === taskId);
    if (dropped.length === 0) return;
    this.queue = this.queue.filter((q) => q.taskId !== taskId);
    for (const q of dropped) q.reject(new DroppedWrite(taskId));
  }

  /** `taskId`: the task a change is for (a creation has none: discard never drops it). */
  private enqueue(taskId: string | undefined, apply: () => void): Promise<void> {
    return new Promise((resolve, reject) => {
      // Applied at the end of this turn of the event loop, as SQLite's group commit is.
      if (this.queue.push({ apply, resolve, reject, taskId }) === 1) setImmediate(() => this.flush());
    });
  }
}

/** A task's bytes as this store counts them: the task's JSON and each event's. */
function addUsage(u: CallerUsage, e: Entry): void {
  u.tasks++;
  u.bytes += Buffer.byteLength(JSON.stringify(e.task));
  for (const ev of e.events) u.bytes += Buffer.byteLength(JSON.stringify(ev));
}

function copy<T>(json: string): T {
  return JSON.parse(json) as T;
}

/** A copy of the task as a read returns it: history cut to `historyLength`, empty lists left out. */
function view(task: Task, historyLength: number | undefined, withArtifacts: boolean): Task {
  const t = copy<Task>(JSON.stringify(task));
  if (!withArtifacts || !t.artifacts?.length) delete t.artifacts;
  let history = t.history ?? [];
  if (historyLength === 0) history = [];
  else if (historyLength !== undefined && history.length > historyLength)
    history = history.slice(history.length - historyLength);
  if (history.length) t.history = history;
  else delete t.history;
  return t;
}

/** Newest status first, then id: the order of every store's pages. */
function compare(
  a: { status?: { timestamp?: string }; id: string } | { timestamp: string; id: string },
  b: { status?: { timestamp?: string }; id: string } | { timestamp: string; id: string },
): number {
  const ta = "timestamp" in a ? a.timestamp : (a.status?.timestamp ?? "");
  const tb = "timestamp" in b ? b.timestamp : (b.status?.timestamp ?? "");
  if (ta !== tb) return ta < tb ? -1 : 1;
  return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}
