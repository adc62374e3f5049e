import { newId, now } from "../clock";
import { EXTENSIONS_KEY, type TaskRunner } from "./task-runner";
import { notStored } from "./outcome-writer";
import { TooManyPushConfigs, type PushConfigLimits, type PushConfigStore } from "../push/push-config-store";
import { RelayedRefusal, TaskStoreError, UnstorableData, type StoredEvent, type TaskStore } from "./task-store";
import { ArtifactSizes, historyBytes, messageBytes } from "./artifacts";
import { EventStream } from "./event-stream";
import { TaskRefusal } from "./refusal";
import type { StorageGuard } from "./storage-quota";
import { ends, followStored, untilEnded, untilSettled, type StoredFollow } from "./stored-follow";
import type {
  ListTasksParams,
  ListTasksResult,
  Message,
  StreamItem,
  Task,
  TaskPushNotificationConfig,
} from "../protocol/types";
import { isInterrupted, isTerminal } from "../protocol/types";

/**
 * Webhook registrations (see src/push): the part of a PushConfigStore the service calls; absent when push
 * notifications are off.
 */
export type PushConfigs = Pick<PushConfigStore, "create" | "countForOwner" | "get" | "list" | "delete">;

/** Webhooks; `limits`: how many one task and one caller may have (max_push_configs_per_task, _per_caller). */
export interface PushOptions {
  configs: PushConfigs;
  guard: { check(url: string): Promise<void> };
  limits?: PushConfigLimits;
}

export interface TaskServiceOptions {
  push?: PushOptions;
  /** Tasks one caller may start in one contextId: two agents delegating back and forth stop here. */
  maxTasksPerContext?: number;
  /** Messages one task's history may hold, the last place kept for the task's final message. */
  maxTaskMessages?: number;
  /** Parts one message may have. */
  maxMessageParts?: number;
  /** Bytes one task may hold, messages and artifacts (max_task_bytes); a caller's message past it is refused. */
  maxTaskBytes?: number;
  /** The per-caller storage quotas and the free-space floor, asked before a caller's task or message is recorded. */
  storage?: StorageGuard;
  /**
   * The surface's error for a refusal, where its words leave tasks/: relayed to the process that passed an
   * answer on (the store relays the error's code, reason and message), or recorded as why a task did not start.
   * Unset: as raised.
   */
  surfaceError?: (err: unknown) => unknown;
}

/** Who sends: the owner of the tasks it starts. */
export interface TaskCaller {
  name: string;
  /** Every caller of the plain loopback listener shares one identity: its messageIds are not deduplicated. */
  anonymous?: boolean;
  /** Told the task a message concerns once it is known (the audit log's note). */
  noteTask?: (taskId: string) => void;
}

/** A message to take: a new task, a retry of one taken, or the next message of a task waiting for input. */
export interface SendRequest {
  message: Message;
  /** The caller's metadata for a new task. */
  metadata?: Record<string, unknown>;
  /** A webhook to register with a new task before it starts. */
  pushConfig?: Omit<TaskPushNotificationConfig, "taskId"> & { taskId?: string };
  /** The A2A extensions activated for this message, handed to the execution it starts. */
  extensions?: string[];
}

/** What a message came to: the task as the message left it, or the agent's reply where it answered with one. */
export type SendResult = { task: Task; reply?: undefined } | { reply: Message; task?: undefined };

/**
 * A stream of a task's events; `first`, when set, is the task it starts with (the caller trims it, then prepends it).
 */
export interface FollowedStream {
  first?: Task;
  events: AsyncIterable<StreamItem>;
}

interface Accepted {
  task: Task;
  initial?: Task;
  committed: Promise<void>;
  settled?: Promise<Task>;
  lastSeq: number;
}

/**
 * A task's life, from the caller's side: submit (the task is committed before anything answers), continue (the
 * answer to the question it waits on), cancel, follow, and the reads, every one scoped to the calling peer:
 * another peer's task answers exactly like a missing one. The runner executes; this decides what a request may
 * do to a task, and refuses in tasks/'s own words (TaskRefusal).
 */
export class TaskService {
  constructor(
    private readonly store: TaskStore,
    private readonly runner: TaskRunner,
    private readonly options: TaskServiceOptions = {},
  ) {
    // Another process passed on an answer: taken if the task's execution waits here for its caller.
    runner.replicas?.onAnswerRequest(
      (taskId, owner, message) => {
        if (!runner.isWaitingForInput(taskId, owner)) return undefined;
        let answered: ReturnType<TaskRunner["answer"]>;
        try {
          answered = runner.answer(taskId, message);
        } catch (err) {
          throw this.surface(err);
        }
        return answered.committed.then(() => ({ lastSeq: answered.lastSeq }));
      },
      (taskId) => runner.isWaitingForInput(taskId),
    );
  }

  /**
   * Takes a message and, when `blocking`, waits for the task's next settled state. Resolves with the task as
   * stored (or as it settled), or the agent's reply where it answered with a message.
   */
  async send(request: SendRequest, caller: TaskCaller, blocking: boolean): Promise<SendResult> {
    const { task, committed, settled } = await this.accept(request, caller);
    if (!blocking || !settled) {
      await whenStored(task.id, committed);
      return { task: snapshot(task) };
    }
    const done = await settled;
    const reply = this.runner.replyOf(done);
    return reply ? { reply } : { task: done };
  }

  /** Takes a message and follows its task: the task as submitted, then its events until it settles. */
  async sendAndFollow(request: SendRequest, caller: TaskCaller): Promise<FollowedStream> {
    const stream = new EventStream(() => this.runner.unsubscribe(task.id, stream));
    const { task, initial, committed, settled, lastSeq } = await this.accept(request, caller, stream);
    await whenStored(task.id, committed);
    const first = initial ?? snapshot(task);
    // A retry of a message already taken: replay what happened since, then follow it if it still runs.
    if (!settled) return { events: await this.follow(task.id, caller.name, first, lastSeq, undefined) };
    return { first, events: stream };
  }

  async get(taskId: string, owner: string, historyLength?: number): Promise<Task> {
    const task = await this.store.get(taskId, owner, historyLength);
    if (!task) throw TaskRefusal.notFound(taskId);
    return task;
  }

  list(owner: string, params: ListTasksParams): Promise<ListTasksResult> {
    return this.store.list(owner, params);
  }

  /** Cancels a task of `owner`'s, wherever it runs; resolves with the task as it ended. */
  async cancel(taskId: string, owner: string): Promise<Task> {
    const task = await this.get(taskId, owner);
    if (isTerminal(task.status.state)) throw TaskRefusal.notCancelable(task.id, task.status.state);
    const reason = `canceled by ${owner}`;
    const settled = this.runner.cancel(task.id, reason);
    if (settled) await settled.catch(() => {});
    else if (!this.runner.replicas) {
      // Interrupted (waiting for input): nothing runs it; the runner records the cancel.
      await whenStored(task.id, this.runner.endIdle(task, "TASK_STATE_CANCELED", reason, owner));
    } else if (await this.runner.hold(task.id)) {
      // A shared store, and no live process holds the task: this one records the cancel.
      try {
        await whenStored(task.id, this.runner.endIdle(task, "TASK_STATE_CANCELED", reason, owner));
      } finally {
        this.runner.letGo(task.id);
      }
    } else {
      // Another process runs it (or waits there for its answer): it is asked to cancel it, and the answer
      // waits for the task's end (a process that holds a task and lives answers within a lease period).
      await this.runner.replicas.requestCancel(task.id, reason);
      await untilEnded(this.store, this.runner.replicas, task.id, 2 * (this.runner.leaseMs ?? 30_000));
    }
    return (await this.store.get(task.id, owner)) as Task;
  }

  /** Follows a task of `owner`'s; `afterSeq`: replay its events after this sequence number (a reconnect). */
  async subscribe(taskId: string, owner: string, afterSeq?: number): Promise<AsyncIterable<StreamItem>> {
    const snap = await this.store.snapshot(taskId, owner);
    if (!snap) throw TaskRefusal.notFound(taskId);
    // A reconnect (Last-Event-ID) may catch up on a task that has ended since; a fresh subscription may not.
    if (afterSeq === undefined && isTerminal(snap.task.status.state))
      throw TaskRefusal.unsupported(`task ${taskId} is ${snap.task.status.state}; read it with GetTask`);
    return this.follow(taskId, owner, snap.task, snap.lastSeq, afterSeq);
  }

  /**
   * Takes a message: a new task (committed, then run), a retry of one already taken (its task), or a
   * follow-up to a task waiting for input. `stream` is subscribed before anything can be published.
   */
  private async accept(request: SendRequest, caller: TaskCaller, stream?: EventStream): Promise<Accepted> {
    const { message } = request;
    const extensions = request.extensions ?? [];
    const owner = caller.name;
    const maxParts = this.options.maxMessageParts;
    if (maxParts !== undefined && message.parts.length > maxParts)
      throw TaskRefusal.invalid(
        `params.message has ${message.parts.length} parts, more than this node takes in one message (max_message_parts = ${maxParts}); send fewer parts, or join them`,
      );
    if (message.taskId) return this.continueTask(message, owner, stream, extensions);

    this.runner.check(message);
    this.runner.assertCapacity(owner);
    await this.options.storage?.check(owner, messageBytes(message), true);
    const limit = this.options.maxTasksPerContext;
    if (
      limit !== undefined &&
      message.contextId &&
      (await this.store.countInContext(message.contextId, owner)) >= limit
    )
      throw TaskRefusal.unsupported(
        `context ${message.contextId} already has ${limit} tasks, this node's limit per conversation (it stops agents delegating to each other forever); start a new context`,
      );
    const pushConfig = request.pushConfig;
    if (pushConfig) {
      const push = this.pushOrRefuse();
      await push.guard.check(pushConfig.url);
      // A caller with as many webhooks as it may have is refused before its task is recorded.
      if (push.limits) {
        const held = await push.configs.countForOwner(owner);
        if (held >= push.limits.perCaller) throw new TooManyPushConfigs("perCaller", held, push.limits.perCaller);
      }
    }
    const id = newId();
    // A new conversation is named after the task that starts it: the store then finds its first task by id,
    // and only tasks that continue a conversation go into the context index.
    const contextId = message.contextId || id;
    const stored = { ...message, taskId: id, contextId };
    // A store that keeps webhooks stores it in the task's own commit (one may not be stored without the other).
    const webhook =
      pushConfig && this.store.keepsWebhooks ? { ...pushConfig, taskId: id, id: pushConfig.id || newId() } : undefined;
    const { task, created, committed } = await callersData(() =>
      this.store.create({
        id,
        contextId,
        owner,
        message: stored,
        executor: this.runner.executorKind,
        // The caller's metadata is the caller's: the node keeps its own keys in the task's node state, which
        // nothing a caller sends reaches (shown beside the caller's metadata).
        metadata: extensions.length ? { ...request.metadata, [EXTENSIONS_KEY]: extensions } : request.metadata,
        // Kept with the task so that an execution resumed after a restart has them too.
        state: extensions.length ? { [EXTENSIONS_KEY]: extensions } : undefined,
        timestamp: now(),
        idempotent: !caller.anonymous,
        webhook,
      }),
    );
    caller.noteTask?.(task.id);
    if (!created) {
      // A retry of a message we already took: answer with that task instead of running it again.
      await whenStored(task.id, committed);
      // Waiting for input, the task has settled as far as this message goes: its next settled state needs an
      // answer only this caller can give (Hermes's A2A client sends the same message again after a stream
      // that ends INPUT_REQUIRED). Read with the promise, synchronously, so the two agree.
      const running = this.runner.isWaitingForInput(task.id) ? undefined : this.runner.settledOf(task.id);
      const snap = await this.store.snapshot(task.id, owner);
      return {
        task: snap?.task ?? task,
        committed,
        settled: running && !stream ? running : undefined,
        lastSeq: snap?.lastSeq ?? 0,
      };
    }
    const initial = stream ? snapshot(task) : undefined; // a stream starts with the task as submitted
    // Registered before the task starts, so the webhook hears its first event too.
    if (pushConfig && !webhook) {
      const push = this.pushOrRefuse();
      try {
        await push.configs.create(owner, { ...pushConfig, taskId: id }, push.limits);
      } catch (err) {
        // The task is recorded but will not run without the webhook it was asked with: it ends FAILED (so it
        // does not stay SUBMITTED), and the caller hears why.
        const why = `not started: its push notification config could not be saved (${(this.surface(err) as Error).message})`;
        await whenStored(task.id, committed)
          .then(
            () => this.runner.endIdle(task, "TASK_STATE_FAILED", why, owner),
            () => {},
          )
          .catch(() => {});
        throw err;
      }
    }
    const state = extensions.length ? { [EXTENSIONS_KEY]: extensions } : {};
    const settled = this.runner.start(task, stored, owner, { committed, extensions, state });
    if (stream) this.runner.subscribe(task.id, owner, stream);
    return { task, initial, committed, settled, lastSeq: 0 };
  }

  /**
   * A message naming a task: the answer to the question it waits on (given to the execution that asked, if
   * it still waits here, or starting a new one), refused otherwise.
   */
  private async continueTask(
    message: Message,
    owner: string,
    stream: EventStream | undefined,
    extensions: string[],
  ): Promise<Accepted> {
    const taskId = message.taskId as string;
    // Before the reads below: nothing may wait between them and the decision they lead to.
    await this.options.storage?.check(owner, messageBytes(message), false);
    // Both reads before any decision: from here to the start of an execution nothing waits, so two messages
    // for one task cannot both start it.
    const [snap, lastSeq] = await Promise.all([this.store.snapshot(taskId, owner), this.store.lastEventSeq(taskId)]);
    if (!snap) throw TaskRefusal.notFound(taskId);
    const { task } = snap;
    if (message.contextId && message.contextId !== task.contextId)
      throw TaskRefusal.invalid(
        `message.contextId ${message.contextId} does not match task ${taskId}'s context ${task.contextId}`,
      );
    if (isTerminal(task.status.state))
      throw TaskRefusal.unsupported(`task ${taskId} is ${task.status.state} and cannot take more messages`);
    const maxMessages = this.options.maxTaskMessages;
    const held = task.history?.length ?? 0;
    // The last place is the task's final message's: a message that would take it is refused.
    if (maxMessages !== undefined && held + 2 > maxMessages)
      throw TaskRefusal.invalid(
        `task ${taskId} holds ${held} messages; this node keeps at most ${maxMessages} per task (max_task_messages), the last place for the task's final message; start a new task in context ${task.contextId}`,
      );
    const maxBytes = this.options.maxTaskBytes;
    if (maxBytes !== undefined) {
      const holds = historyBytes(task.history) + new ArtifactSizes(task.artifacts).total;
      const adds = messageBytes(message);
      if (holds + adds > maxBytes)
        throw TaskRefusal.invalid(
          `task ${taskId} holds ${holds} bytes; this message (${adds} bytes) would pass this node's limit of ${maxBytes} per task (max_task_bytes); start a new task in context ${task.contextId}`,
        );
    }
    const stored = { ...message, contextId: task.contextId };
    if (this.runner.isWaitingForInput(taskId)) {
      const answered = this.runner.answer(taskId, stored);
      if (stream) this.runner.subscribe(taskId, owner, stream);
      return {
        task: answered.task,
        initial: answered.task,
        committed: answered.committed,
        settled: answered.settled,
        lastSeq: answered.lastSeq,
      };
    }
    // Running here (started by a message the snapshot is older than) is not waiting either.
    if (!isInterrupted(task.status.state) || this.runner.settledOf(taskId)) {
      const withdrawn = this.runner.withdrawnQuestion(taskId);
      throw TaskRefusal.unsupported(
        withdrawn
          ? `task ${taskId} no longer waits for input (${withdrawn}); it is ${task.status.state}, follow it with GetTask or SubscribeToTask`
          : `task ${taskId} is still ${this.runner.settledOf(taskId) ? "TASK_STATE_WORKING" : task.status.state}; wait for it to ask for input`,
      );
    }
    this.runner.check(message, { state: snap.state });
    this.runner.assertCapacity(owner);
    // On a store other processes share, the task must be this one's to run (see TaskLeases); if another
    // process holds it, its execution waits there, and the answer is passed on to it.
    if (!(await this.runner.hold(taskId))) return this.answerElsewhere(task, stored, owner, stream);
    if (this.runner.settledOf(taskId))
      throw TaskRefusal.unsupported(`task ${taskId} is still TASK_STATE_WORKING; wait for it to ask for input`);
    const extensionsChanged = JSON.stringify(snap.state[EXTENSIONS_KEY] ?? []) !== JSON.stringify(extensions);
    const noted = extensionsChanged ? { [EXTENSIONS_KEY]: extensions } : undefined;
    const committed = this.store.record(taskId, {
      history: [stored],
      ...(noted ? { state: noted, metadata: noted } : {}),
    });
    task.history = [...(task.history ?? []), stored];
    if (noted) task.metadata = { ...task.metadata, ...noted };
    const settled = this.runner.start(task, stored, owner, {
      lastSeq,
      committed,
      extensions,
      state: { ...snap.state, ...noted },
    });
    // Taken after the start, which made the task WORKING: the reply is never the question it answered (a caller
    // would take INPUT_REQUIRED for the task's state and stop waiting).
    const initial = snapshot(task);
    if (stream) this.runner.subscribe(task.id, owner, stream);
    return { task: initial, initial, committed, settled, lastSeq };
  }

  /**
   * The answer to a task whose execution waits in another process on the shared store: passed on to it (which
   * stores it, or refuses it as it would its own caller's); the task then runs there, and is followed here
   * through the store. A refusal there arrives as the store's RelayedRefusal, in the surface's own terms.
   */
  private async answerElsewhere(task: Task, message: Message, owner: string, stream?: EventStream): Promise<Accepted> {
    const replicas = this.runner.replicas;
    if (!replicas) throw TaskRefusal.unsupported(`task ${task.id} is held by another process; send the answer to it`);
    let lastSeq: number;
    try {
      ({ lastSeq } = await replicas.requestAnswer(task.id, owner, message));
    } catch (err) {
      if (err instanceof TaskStoreError && !(err instanceof RelayedRefusal)) throw TaskRefusal.unsupported(err.message);
      throw err;
    }
    // Taken: the execution runs again (WORKING) with the answer in its history.
    const answered: Task = {
      ...task,
      status: { state: "TASK_STATE_WORKING", timestamp: now() },
      history: [...(task.history ?? []), message],
    };
    const settled = stream
      ? undefined
      : untilSettled(this.store, this.runner.replicas, task.id, lastSeq).then(
          async () => (await this.store.get(task.id, owner)) ?? answered,
        );
    return { task: answered, initial: answered, committed: Promise.resolve(), settled, lastSeq };
  }

  /**
   * The task as stored, every committed event after `afterSeq` (or after what the snapshot reflects), then
   * live events while it runs. The live subscription is made before the stored events are read, and holds
   * what it hears until the replay is in: an event committed meanwhile is in one or both, never in neither,
   * and the stream drops any it sees twice.
   */
  private async follow(
    taskId: string,
    owner: string,
    task: Task,
    lastSeq: number,
    afterSeq: number | undefined,
  ): Promise<AsyncIterable<StreamItem>> {
    let remote: StoredFollow | undefined;
    const stream: EventStream = new EventStream(() => {
      this.runner.unsubscribe(taskId, stream);
      remote?.stop();
    });
    const from = afterSeq ?? lastSeq;
    stream.push({ response: { task } });
    stream.hold(from);
    const live = this.runner.subscribe(taskId, owner, stream);
    const state = task.status.state;
    // Not running here, on a store other processes share: it may run in one of them (or run again there, once
    // answered), so the stream follows it through the store until it settles.
    if (!live && !isTerminal(state) && this.runner.replicas)
      remote = followStored(this.store, this.runner.replicas, taskId, stream, isInterrupted(state), (err) =>
        err === undefined ? stream.end() : stream.fail(err),
      );
    // Not running here, on a store of this process alone: a task waiting for input keeps its subscriber until it
    // runs here again and ends.
    const parked = !live && !remote && isInterrupted(state);
    if (parked) this.runner.park(taskId, stream);
    let replay: StoredEvent[];
    try {
      replay = await this.store.eventsAfter(taskId, from);
    } catch (err) {
      this.runner.unsubscribe(taskId, stream);
      remote?.stop();
      throw err;
    }
    stream.release(replay);
    const untilTerminal = isInterrupted(state);
    if (remote) {
      if (replay.some((e) => ends(e, untilTerminal))) remote.stop();
      else remote.catchUp();
    }
    // Any other task nothing runs here has ended (or ends in what was replayed): its stream closes after it.
    else if (!live && (!parked || endsIn(replay))) {
      this.runner.unsubscribe(taskId, stream);
      stream.end();
    }
    return stream;
  }

  private surface(err: unknown): unknown {
    return this.options.surfaceError ? this.options.surfaceError(err) : err;
  }

  private pushOrRefuse(): PushOptions {
    if (!this.options.push) throw TaskRefusal.pushNotSupported();
    return this.options.push;
  }
}

/** Runs a store write of what the caller sent: data the store refuses as given is the caller's error. */
async function callersData<T>(write: () => Promise<T>): Promise<T> {
  try {
    return await write();
  } catch (err) {
    if (err instanceof UnstorableData) throw TaskRefusal.invalid(err.message);
    throw err;
  }
}

/**
 * Waits for a write the answer depends on: if it is not stored, the caller hears so (invalid for data of its
 * own the store refused, not-stored for the store failing) instead of being told the task was taken.
 */
async function whenStored(taskId: string, committed: Promise<void>): Promise<void> {
  try {
    await committed;
  } catch (err) {
    throw err instanceof UnstorableData ? TaskRefusal.invalid(err.message) : notStored(taskId, err);
  }
}

/** A copy safe to serialize while the runner goes on changing the live task. */
function snapshot(task: Task): Task {
  return {
    ...task,
    status: { ...task.status },
    history: task.history && [...task.history],
    artifacts: task.artifacts && [...task.artifacts],
  };
}

/** Whether replayed events reach a terminal state (the task ended after the snapshot the stream started from). */
function endsIn(events: StoredEvent[]): boolean {
  const last = events[events.length - 1]?.response;
  return last !== undefined && "statusUpdate" in last && isTerminal(last.statusUpdate.status.state);
}
