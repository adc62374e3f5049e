import type {
  Artifact,
  ListTasksParams,
  ListTasksResult,
  Message,
  StreamResponse,
  Task,
  TaskPushNotificationConfig,
  TaskStatus,
} from "../protocol/types";

/** What the store needs to create a task; the task starts SUBMITTED with `message` as its first history entry. */
export interface NewTask {
  /** A ULID: its time part is when the task was created (stores may rely on ids sorting by creation time). */
  id: string;
  contextId: string;
  owner: string;
  message: Message;
  executor: string;
  /** The caller's metadata (SendMessage's `metadata`), with what the node shows beside it. */
  metadata?: Record<string, unknown>;
  /** The node's own state of the task from the start (see TaskChange.state). */
  state?: Record<string, unknown>;
  timestamp: string;
  /** Deduplicate by (owner, message.messageId); false for callers without an identity of their own. */
  idempotent?: boolean;
  /**
   * The webhook the caller sent with the message (its id set, its taskId the task's), for a store that keeps
   * webhooks (see TaskStore.keepsWebhooks): stored in the task's own commit, so the task is never stored
   * without it, nor it without the task; a repeat (created: false) stores nothing.
   */
  webhook?: TaskPushNotificationConfig;
}

/**
 * Every error a TaskStore raises on purpose, in the store's own terms; the protocol layer maps each to its own
 * error (see request-handler.ts). Anything else a store throws (disk full, I/O error, a lost connection) is a
 * failure of the store, reported to the callers of the writes it hit as "not stored".
 */
export class TaskStoreError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "TaskStoreError";
  }
}

/**
 * The store refused one task's writes for a reason of that task alone, before any of them was applied: nothing
 * of them is recorded, and no other task's writes are affected. The message names what was refused and why,
 * never the data itself.
 */
export class WriteRefused extends TaskStoreError {
  constructor(message: string) {
    super(message);
    this.name = "WriteRefused";
  }
}

/** A write refused because another process holds the task now (see TaskLeases): that one runs it. */
export class HeldElsewhere extends WriteRefused {
  constructor(taskId: string) {
    super(`task ${taskId} is held by another replica now (this one's lease on it ran out)`);
    this.name = "HeldElsewhere";
  }
}

/** A write dropped before it was committed, because an earlier write of its task failed (see TaskStore.discard). */
export class DroppedWrite extends WriteRefused {
  constructor(taskId: string) {
    super(`not stored: an earlier write of task ${taskId} failed, so what followed it is dropped`);
    this.name = "DroppedWrite";
  }
}

/** Data that cannot be stored as given (it cannot be serialised, e.g. nested too deeply). */
export class UnstorableData extends WriteRefused {
  constructor(
    /** What was refused: "message", "metadata", "artifacts", ... */
    readonly what: string,
    reason: string,
  ) {
    super(`the ${what} cannot be stored: ${reason}`);
    this.name = "UnstorableData";
  }
}

/**
 * Another process refused what this one passed on to it (an answer to a task waiting for input there), with
 * the protocol error it would have given its own caller: its JSON-RPC code, message and reason.
 */
export class RelayedRefusal extends TaskStoreError {
  constructor(
    readonly code: number,
    message: string,
    readonly reason: string,
  ) {
    super(message);
    this.name = "RelayedRefusal";
  }
}

/** What one caller's stored tasks take (see TaskStore.usage). */
export interface CallerUsage {
  tasks: number;
  bytes: number;
}

/** A task that had not reached a terminal state when the node last stopped. */
export interface UnfinishedTask {
  id: string;
  owner: string;
  state: string;
  executor: string;
}

/** A task as stored, for the node itself: its row, where its events stand, and its node state. */
export interface TaskSnapshot {
  task: Task;
  lastSeq: number;
  state: Record<string, unknown>;
}

/**
 * A push delivery a store queued in the commit of the event it carries (see TaskStore.onDeliveriesQueued):
 * what the push dispatcher needs to schedule it (the body waits in the queue).
 */
export interface QueuedWithEvent {
  /** The delivery's id in the queue; a webhook's deliveries are sent in the order of their ids. */
  id: string;
  taskId: string;
  configId: string;
  /** Who registered the webhook, and its URL: the dispatcher's fair share is by them. */
  owner: string;
  url: string;
  /** ISO 8601: when it may first be sent (when it was queued). */
  nextAttemptAt: string;
}

/** A task event as stored: its per-task sequence number and the stream item (statusUpdate/artifactUpdate). */
export interface StoredEvent {
  seq: number;
  response: StreamResponse;
}

/**
 * A question the store cannot answer as asked (a page token it never issued). The store speaks in its own
 * terms; the protocol layer maps this to its invalid-params error.
 */
export class TaskStoreRequestError extends TaskStoreError {
  constructor(message: string) {
    super(message);
    this.name = "TaskStoreRequestError";
  }
}

/**
 * One change to one task: everything in it is applied together or not at all, and in this order: messages are
 * added to the history, the status replaced, artifacts merged (one with the artifactId of a stored one replaces
 * it in place, others are appended), metadata merged key by key, events appended.
 */
export interface TaskChange {
  /** Messages added to the end of the task's history: a follow-up turn, the agent's final reply. */
  history?: Message[];
  /** The task's status from now on (its message is not added to the history unless it is in `history` too). */
  status?: TaskStatus;
  /** Artifacts merged into the task's by artifactId. */
  artifacts?: Artifact[];
  /** Keys merged into the task's metadata. */
  metadata?: Record<string, unknown>;
  /**
   * Keys merged into the task's node state: what the node and its executor keep about the task (a remote run's
   * id, a pending approval, how often it was resumed, the extensions its execution has). Kept apart from the
   * metadata, which a caller writes (SendMessage's `metadata`): nothing a caller sends can reach it, and the
   * node reads these keys from here alone. Never returned by the reads a caller's call makes (get, list).
   */
  state?: Record<string, unknown>;
  /** Events numbered `firstSeq`, `firstSeq + 1`, ...; they continue the task's numbering with no gap. */
  events?: { firstSeq: number; items: StreamResponse[] };
  /**
   * The task's own row (status, artifacts) reflects its events up to this number once the change is applied:
   * where a snapshot's replay starts. Given with the writes that make it so.
   */
  rowSeq?: number;
}

/**
 * Durable home of tasks, their history, artifacts and events. What every implementation guarantees (the
 * contract suite, test/store/task-store-contract.ts, holds each of them to it):
 *
 * - Scoping. Every read is scoped to the owner (the peer identity from the client certificate): another
 *   owner's task is indistinguishable from one that does not exist.
 * - Idempotency. `create` with an (owner, message.messageId) seen before returns the task it made then, also
 *   while that creation is not yet committed.
 * - Atomic changes. A `record` call is applied whole or not at all. Calls for one task apply in call order.
 * - Durability on resolve. Writes return a promise that resolves once they are committed, durably; callers
 *   acknowledge nothing to a client before. Implementations may commit the writes of many tasks together.
 * - Isolation of failures. A write that cannot be committed rejects its own promise (UnstorableData for data
 *   that cannot be stored, WriteRefused for a task the store does not hold, or the store's own error: disk
 *   full, I/O) and no other task's writes.
 * - Events. A task's events are numbered from 1 with no gap; `eventsAfter` returns the committed ones in order,
 *   whether the store keeps them apart or implies them from the task's row; `lastEventSeq` is the highest.
 * - Reads see committed state. Every read returns a promise: a store on a server answers over the network; one
 *   that answers at once (SQLite, memory) returns an already-settled promise.
 * - Pages. `list` returns tasks newest status first (ties by id, descending), `pageSize` (default 50) at most
 *   and possibly fewer (an implementation may bound a page in bytes); `nextPageToken` continues right after
 *   the last task returned, so walking the pages returns every matching task once; "" when none is left. A
 *   token the store did not issue is a TaskStoreRequestError (a rejection). `totalSize` counts every matching task.
 */
export interface TaskStore {
  /**
   * Records a new SUBMITTED task; `committed` resolves once it is durable. Returns the existing task instead
   * (created: false) when (owner, message.messageId) was seen before. Rejects with UnstorableData, with nothing
   * recorded, when the message or metadata cannot be stored. Resolves once the task is known new or a repeat
   * (which may take a read); `committed` then resolves once it is durable.
   */
  create(task: NewTask): Promise<{ task: Task; created: boolean; committed: Promise<void> }>;
  /** Applies one change to a created task (see TaskChange); resolves once it is committed. */
  record(taskId: string, change: TaskChange): Promise<void>;
  /**
   * Drops the task's writes not yet committed (nor being committed): their promises reject, nothing of them is
   * stored. After a write of a task failed, what its writer wrote next must not be stored after the gap (its
   * events would skip a number); the writer continues from what is stored (lastEventSeq).
   */
  discard(taskId: string): void;
  get(id: string, owner: string, historyLength?: number): Promise<Task | undefined>;
  list(owner: string, params: ListTasksParams): Promise<ListTasksResult>;
  /** Committed events of a task with a number above `afterSeq`, in order. (Callers check ownership first.) */
  eventsAfter(taskId: string, afterSeq: number): Promise<StoredEvent[]>;
  /** The number of a task's latest stored event (0 before the first): where its next event continues. */
  lastEventSeq(taskId: string): Promise<number>;
  /**
   * The task as its row has it, the number of the last event that row reflects, and its node state (see
   * TaskChange.state; {} when it has none).
   */
  snapshot(id: string, owner: string, historyLength?: number): Promise<TaskSnapshot | undefined>;
  /** How many tasks `owner` has started in a context. */
  countInContext(contextId: string, owner: string): Promise<number>;
  /**
   * What `owner`'s stored tasks take (the per-caller storage quotas): how many, and their bytes as the store
   * writes them (rows and events). Committed writes only; exact, and cheap (the stores keep the sums).
   */
  usage(owner: string): Promise<CallerUsage>;
  /**
   * The owners whose stored tasks take the most bytes, most first, at most `limit` (owners holding nothing left out).
   */
  heaviest(limit: number): Promise<(CallerUsage & { owner: string })[]>;
  /** Tasks left SUBMITTED/WORKING by a previous run of the node. */
  unfinished(): Promise<UnfinishedTask[]>;
  /** The latest messages of a context, oldest first, for multi-turn executors. */
  contextHistory(contextId: string, owner: string, limit: number): Promise<Message[]>;
  /**
   * Retention: deletes up to `limit` tasks that ended (COMPLETED, FAILED, CANCELED, REJECTED) with a status
   * timestamp before `before` (ISO 8601), with their events; returns their ids. Tasks still in flight, waiting
   * for input, or with writes not yet committed are kept. A walk through `list` pages meanwhile still returns
   * every task that remains exactly once.
   */
  deleteFinished(before: string, limit: number): Promise<string[]>;
  /**
   * For a store that keeps the webhooks beside the tasks (SQLite and Postgres, when given their delivery
   * queue): every commit that stores events of a task also queues, in the same transaction, one push delivery
   * per event for each webhook the task has then. An event on disk therefore never lacks its deliveries,
   * whatever happens after the commit (a crash, a lost connection). `listener` hears of each commit's
   * deliveries once it is committed, to schedule them; deliveries of commits before it is set wait in the
   * queue for the dispatcher's start.
   */
  onDeliveriesQueued?(listener: (deliveries: QueuedWithEvent[]) => void): void;
  /**
   * True when `create` stores NewTask.webhook with the task (in the same transaction); otherwise the caller
   * saves the webhook with its PushConfigStore once the task is created.
   */
  readonly keepsWebhooks?: boolean;
}

/** The states a task never leaves: retention may delete tasks in them. */
export const FINAL_STATES = [
  "TASK_STATE_COMPLETED",
  "TASK_STATE_FAILED",
  "TASK_STATE_CANCELED",
  "TASK_STATE_REJECTED",
] as const;
