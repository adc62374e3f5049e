import type { Artifact, ListTasksParams, ListTasksResult, Message, StreamResponse, Task, TaskStatus } from "../protocol/types";

/** What the store needs to create a task; the task starts SUBMITTED with `message` as its first history entry. */
export interface NewTask {
  id: string;
  contextId: string;
  owner: string;
  message: Message;
  executor: string;
  metadata?: Record<string, unknown>;
  timestamp: string;
  /** Deduplicate by (owner, message.messageId); false for callers without an identity of their own. */
  idempotent?: boolean;
}

/**
 * The store refused one task's writes for a reason of that task alone, before any of them was applied: nothing
 * of them is recorded, and no other task's writes are affected. The message names what was refused and why,
 * never the data itself.
 */
export class WriteRefused extends Error {
  constructor(message: string) {
    super(message);
    this.name = "WriteRefused";
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

/** A task that had not reached a terminal state when the node last stopped. */
export interface UnfinishedTask {
  id: string;
  owner: string;
  state: string;
  executor: string;
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
export class TaskStoreRequestError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "TaskStoreRequestError";
  }
}

/**
 * Durable home of tasks, their history and artifacts. Every read is scoped to the owner (the peer identity
 * from the client certificate): another owner's task is indistinguishable from one that does not exist.
 *
 * Writes return a promise that settles once they are committed, so implementations may group the writes
 * of many tasks into one transaction; callers acknowledge nothing to a client before that promise resolves.
 * A write that cannot be committed rejects its promise (UnstorableData for data that cannot be stored, or the
 * store's own error: disk full, I/O error) and affects no other task's writes. Reads see committed state.
 */
export interface TaskStore {
  /**
   * Records a new SUBMITTED task; `committed` resolves once it is durable. Returns the existing task instead
   * (created: false) when (owner, message.messageId) was seen before. Throws UnstorableData, with nothing
   * recorded, when the message or metadata cannot be stored.
   */
  create(task: NewTask): { task: Task; created: boolean; committed: Promise<void> };
  get(id: string, owner: string, historyLength?: number): Task | undefined;
  list(owner: string, params: ListTasksParams): ListTasksResult;
  /** Adds a message to a task's history (a follow-up turn). */
  appendMessage(taskId: string, message: Message): Promise<void>;
  /** Records a non-final state (WORKING, INPUT_REQUIRED, ...). */
  setStatus(taskId: string, status: TaskStatus): Promise<void>;
  /**
   * Records the outcome in one transaction: final (or interrupted) status, the artifacts, the agent's reply in
   * history, and metadata merged into the task's.
   */
  finish(taskId: string, status: TaskStatus, artifacts: Artifact[], metadata?: Record<string, unknown>): Promise<void>;
  /**
   * Records events `firstSeq`, `firstSeq + 1`, ... of a task. `rowSeq`: the task's own row (state, artifacts)
   * now reflects events up to this number (given with the status/finish writes that make it so).
   */
  appendEvents(taskId: string, firstSeq: number, events: StreamResponse[], rowSeq?: number): Promise<void>;
  /** Committed events of a task with a number above `afterSeq`, in order. (Callers check ownership first.) */
  eventsAfter(taskId: string, afterSeq: number): StoredEvent[];
  /** The number of a task's latest stored event (0 before the first): where its next event continues. */
  lastEventSeq(taskId: string): number;
  /** The task as its row has it, and the number of the last event that row reflects. */
  snapshot(id: string, owner: string, historyLength?: number): { task: Task; lastSeq: number } | undefined;
  /** How many tasks `owner` has started in a context. */
  countInContext(contextId: string, owner: string): number;
  /** Tasks left SUBMITTED/WORKING by a previous run of the node. */
  unfinished(): UnfinishedTask[];
  /** The latest messages of a context, oldest first, for multi-turn executors. */
  contextHistory(contextId: string, owner: string, limit: number): Message[];
}
