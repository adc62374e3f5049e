import { newId, now } from "../tasks/clock";
import { EXTENSIONS_KEY, notStored, type TaskRunner } from "../tasks/task-runner";
import { ConfigOwnedElsewhere, TooManyPushConfigs, type PushConfigLimits } from "../push/push-config-store";
import { RelayedRefusal, TaskStoreError, TaskStoreRequestError, UnstorableData, type StoredEvent, type TaskStore } from "../tasks/task-store";
import { ArtifactSizes, historyBytes, messageBytes } from "../tasks/artifacts";
import { EventStream } from "../tasks/event-stream";
import type { StorageGuard } from "../tasks/storage-quota";
import { ends, followStored, untilEnded, untilSettled, type StoredFollow } from "../tasks/stored-follow";
import { mapStream } from "./streams";
import type { CallContext } from "./caller";
import { A2AError } from "./errors";
import type {
  AgentCard,
  AgentExtension,
  GetTaskPushNotificationConfigParams,
  ListTaskPushNotificationConfigsParams,
  ListTaskPushNotificationConfigsResult,
  StreamItem,
  SubscribeToTaskParams,
  TaskPushNotificationConfig,
  CancelTaskParams,
  GetTaskParams,
  ListTasksParams,
  Message,
  ListTasksResult,
  SendMessageParams,
  SendMessageResult,
  Task,
} from "./types";
import { isInterrupted, isTerminal } from "./types";

export type { StreamItem } from "./types";

/**
 * The A2A operations, independent of any transport (JSON-RPC today; others could sit beside it). Streaming
 * operations resolve once the request is accepted (so refusals are plain errors), then yield items until the
 * task settles.
 */
export interface A2ARequestHandler {
  sendMessage(params: SendMessageParams, ctx: CallContext): Promise<SendMessageResult>;
  sendStreamingMessage(params: SendMessageParams, ctx: CallContext): Promise<AsyncIterable<StreamItem>>;
  getTask(params: GetTaskParams, ctx: CallContext): Promise<Task>;
  listTasks(params: ListTasksParams, ctx: CallContext): Promise<ListTasksResult>;
  cancelTask(params: CancelTaskParams, ctx: CallContext): Promise<Task>;
  /** `afterSeq`: replay the task's events after this sequence number (a reconnect's Last-Event-ID). */
  subscribeToTask(params: SubscribeToTaskParams, ctx: CallContext, afterSeq?: number): Promise<AsyncIterable<StreamItem>>;
  createTaskPushNotificationConfig(params: TaskPushNotificationConfig, ctx: CallContext): Promise<TaskPushNotificationConfig>;
  getTaskPushNotificationConfig(params: GetTaskPushNotificationConfigParams, ctx: CallContext): Promise<TaskPushNotificationConfig>;
  listTaskPushNotificationConfigs(params: ListTaskPushNotificationConfigsParams, ctx: CallContext): Promise<ListTaskPushNotificationConfigsResult>;
  deleteTaskPushNotificationConfig(params: GetTaskPushNotificationConfigParams, ctx: CallContext): Promise<void>;
  getExtendedAgentCard(ctx: CallContext): Promise<AgentCard>;
}

/** Webhook registrations (see src/push); absent when push notifications are off. */
export interface PushConfigs {
  create(owner: string, config: TaskPushNotificationConfig, limits?: PushConfigLimits): Promise<TaskPushNotificationConfig>;
  /** How many configs `owner` has, on all its tasks (max_push_configs_per_caller). */
  countForOwner(owner: string): Promise<number>;
  get(owner: string, taskId: string, id: string): Promise<TaskPushNotificationConfig | undefined>;
  list(owner: string, taskId: string, pageSize?: number, pageToken?: string): Promise<ListTaskPushNotificationConfigsResult>;
  delete(owner: string, taskId: string, id: string): Promise<boolean>;
}

export interface RequestHandlerOptions {
  /** Webhooks; `limits`: how many one task and one caller may have (max_push_configs_per_task, _per_caller). */
  push?: { configs: PushConfigs; guard: { check(url: string): Promise<void> }; limits?: PushConfigLimits };
  /** Tasks one caller may start in one contextId: two agents delegating back and forth stop here. */
  maxTasksPerContext?: number;
  /**
   * The card for authenticated callers (GetExtendedAgentCard), when one is configured; the public card then
   * says capabilities.extendedAgentCard.
   */
  extendedCard?: () => AgentCard | Promise<AgentCard>;
  /** The A2A extensions the card declares (see activateExtensions). */
  extensions?: AgentExtension[];
  /** Messages one task's history may hold, the last place kept for the task's final message. */
  maxTaskMessages?: number;
  /** Parts one message may have. */
  maxMessageParts?: number;
  /** Bytes one task may hold, messages and artifacts (max_task_bytes); a caller's message past it is refused. */
  maxTaskBytes?: number;
  /** The per-caller storage quotas and the free-space floor, asked before a caller's task or message is recorded. */
  storage?: StorageGuard;
}

/**
 * a2a-node's task lifecycle: receipt first (the task is committed before anything answers), execution by the
 * runner, and every read scoped to the calling peer: another peer's task answers exactly like a missing one.
 */
export class DefaultRequestHandler implements A2ARequestHandler {
  constructor(
    private readonly store: TaskStore,
    private readonly runner: TaskRunner,
    private readonly options: RequestHandlerOptions = {},
  ) {}

  async sendMessage(params: SendMessageParams, ctx: CallContext): Promise<SendMessageResult> {
    const historyLength = params.configuration?.historyLength;
    const blocking = params.configuration?.returnImmediately !== true;
    const { task, committed, settled } = await this.accept(params, ctx, undefined, this.activateExtensions(ctx));
    if (!blocking || !settled) {
      await whenStored(task.id, committed);
      return { task: trimHistory(snapshot(task), historyLength) };
    }
    const done = await settled;
    const reply = this.runner.replyOf(done);
    if (reply) return { message: reply };
    return { task: trimHistory(done, historyLength) };
  }

  async sendStreamingMessage(params: SendMessageParams, ctx: CallContext): Promise<AsyncIterable<StreamItem>> {
    const active = this.activateExtensions(ctx);
    const stream = new EventStream(() => this.runner.unsubscribe(task.id, stream));
    const { task, initial, committed, settled, lastSeq } = await this.accept(params, ctx, stream, active);
    await whenStored(task.id, committed);
    const first = initial ?? snapshot(task);
    if (!settled) {
      // A retry of a message already taken: replay what happened since, then follow it if it still runs.
      return this.follow(task.id, ctx.caller.name, first, lastSeq, undefined);
    }
    return prepend({ response: { task: trimHistory(first, params.configuration?.historyLength) } }, stream);
  }

  async getTask(params: GetTaskParams, ctx: CallContext): Promise<Task> {
    const task = await this.store.get(params.id, ctx.caller.name, params.historyLength);
    if (!task) throw A2AError.taskNotFound(params.id);
    return task;
  }

  async listTasks(params: ListTasksParams, ctx: CallContext): Promise<ListTasksResult> {
    try {
      return await this.store.list(ctx.caller.name, params);
    } catch (err) {
      if (err instanceof TaskStoreRequestError) throw A2AError.invalidParams(err.message);
      throw err;
    }
  }

  async cancelTask(params: CancelTaskParams, ctx: CallContext): Promise<Task> {
    const task = await this.store.get(params.id, ctx.caller.name);
    if (!task) throw A2AError.taskNotFound(params.id);
    if (isTerminal(task.status.state)) throw A2AError.taskNotCancelable(task.id, task.status.state);
    const reason = `canceled by ${ctx.caller.name}`;
    const settled = this.runner.cancel(task.id, reason);
    if (settled) await settled.catch(() => {});
    else if (!this.runner.replicas) {
      // Interrupted (waiting for input): nothing runs it; the runner records the cancel.
      await whenStored(task.id, this.runner.cancelIdle(task, reason, ctx.caller.name));
    } else if (await this.runner.hold(task.id)) {
      // A shared store, and no live process holds the task: this one records the cancel.
      try {
        await whenStored(task.id, this.runner.cancelIdle(task, reason, ctx.caller.name));
      } finally {
        this.runner.letGo(task.id);
      }
    } else {
      // Another process runs it (or waits there for its answer): it is asked to cancel it, and the answer
      // waits for the task's end (a process that holds a task and lives answers within a lease period).
      await this.runner.replicas.requestCancel(task.id, reason);
      await untilEnded(this.store, this.runner.replicas, task.id, 2 * (this.runner.leaseMs ?? 30_000));
    }
    return (await this.store.get(task.id, ctx.caller.name)) as Task;
  }

  async subscribeToTask(params: SubscribeToTaskParams, ctx: CallContext, afterSeq?: number): Promise<AsyncIterable<StreamItem>> {
    const snap = await this.store.snapshot(params.id, ctx.caller.name);
    if (!snap) throw A2AError.taskNotFound(params.id);
    // A reconnect (Last-Event-ID) may catch up on a task that has ended since; a fresh subscription may not.
    if (afterSeq === undefined && isTerminal(snap.task.status.state))
      throw A2AError.unsupportedOperation(`task ${params.id} is ${snap.task.status.state}; read it with GetTask`);
    return this.follow(params.id, ctx.caller.name, snap.task, snap.lastSeq, afterSeq);
  }

  async createTaskPushNotificationConfig(params: TaskPushNotificationConfig, ctx: CallContext): Promise<TaskPushNotificationConfig> {
    const push = this.pushOrThrow();
    await this.ownTask(params.taskId, ctx);
    await push.guard.check(params.url);
    return configsCall(() => push.configs.create(ctx.caller.name, params, push.limits), ctx.caller.name);
  }

  async getTaskPushNotificationConfig(params: GetTaskPushNotificationConfigParams, ctx: CallContext): Promise<TaskPushNotificationConfig> {
    const push = this.pushOrThrow();
    await this.ownTask(params.taskId, ctx);
    const config = await push.configs.get(ctx.caller.name, params.taskId, params.id);
    if (!config) throw A2AError.taskNotFound(`${params.taskId} (push notification config ${params.id})`);
    return config;
  }

  async listTaskPushNotificationConfigs(params: ListTaskPushNotificationConfigsParams, ctx: CallContext): Promise<ListTaskPushNotificationConfigsResult> {
    const push = this.pushOrThrow();
    await this.ownTask(params.taskId, ctx);
    return configsCall(() => push.configs.list(ctx.caller.name, params.taskId, params.pageSize, params.pageToken));
  }

  async deleteTaskPushNotificationConfig(params: GetTaskPushNotificationConfigParams, ctx: CallContext): Promise<void> {
    const push = this.pushOrThrow();
    await this.ownTask(params.taskId, ctx);
    // Deleting is idempotent (the spec): a config already gone is not an error.
    await push.configs.delete(ctx.caller.name, params.taskId, params.id);
  }

  /**
   * The extended card, for callers whose identity a certificate proved. Where the card says
   * capabilities.extendedAgentCard is false (none configured, or the plain loopback listener, whose callers
   * are anonymous and whose card says so) the spec's answer is UnsupportedOperationError.
   */
  async getExtendedAgentCard(ctx: CallContext): Promise<AgentCard> {
    if (!this.options.extendedCard)
      throw A2AError.unsupportedOperation("this agent has no extended agent card (its card says capabilities.extendedAgentCard: false)");
    if (ctx.caller.anonymous)
      throw A2AError.unsupportedOperation(
        "the extended agent card is for fleet members: ask for it over mutual TLS with a fleet certificate (callers of this plain loopback listener have no identity)",
      );
    if (ctx.caller.outsideFleet)
      throw A2AError.unsupportedOperation("the extended agent card is for fleet members: ask for it over mutual TLS with a fleet certificate (a token caller is outside the fleet)");
    return await this.options.extendedCard();
  }

  /**
   * The A2A extensions of a message (A2A v1.0, "Extensions"): refused (-32008) when the card marks one
   * required that the request did not name in A2A-Extensions; otherwise the requested ones the card declares
   * are activated (recorded on the context, which the transport echoes), and the rest ignored. Messages only:
   * they are what an executor acts on; the other operations do nothing an extension changes.
   */
  private activateExtensions(ctx: CallContext): string[] {
    const declared = this.options.extensions ?? [];
    const requested = new Set(ctx.extensions?.requested ?? []);
    const missing = declared.filter((e) => e.required && !requested.has(e.uri)).map((e) => e.uri);
    if (missing.length) throw A2AError.extensionSupportRequired(missing);
    const active = declared.filter((e) => requested.has(e.uri)).map((e) => e.uri);
    if (ctx.extensions && active.length) ctx.extensions.activated = active;
    return active;
  }

  /**
   * Takes a message: a new task (committed, then run), a retry of one already taken (its task), or a
   * follow-up to a task waiting for input. `stream` is subscribed before anything can be published.
   * `extensions`: the ones activated for this request, handed to the execution it starts.
   */
  private async accept(
    params: SendMessageParams,
    ctx: CallContext,
    stream?: EventStream,
    extensions: string[] = [],
  ): Promise<{ task: Task; initial?: Task; committed: Promise<void>; settled?: Promise<Task>; lastSeq: number }> {
    const { message } = params;
    const owner = ctx.caller.name;
    const maxParts = this.options.maxMessageParts;
    if (maxParts !== undefined && message.parts.length > maxParts)
      throw A2AError.invalidParams(
        `params.message has ${message.parts.length} parts, more than this node takes in one message (max_message_parts = ${maxParts}); send fewer parts, or join them`,
      );
    if (message.taskId) return this.continueTask(params, owner, stream, extensions);

    this.runner.check(message);
    this.runner.assertCapacity(owner);
    await this.options.storage?.check(owner, messageBytes(message), true);
    const limit = this.options.maxTasksPerContext;
    if (limit !== undefined && message.contextId && (await this.store.countInContext(message.contextId, owner)) >= limit)
      throw A2AError.unsupportedOperation(
        `context ${message.contextId} already has ${limit} tasks, this node's limit per conversation (it stops agents delegating to each other forever); start a new context`,
      );
    const pushConfig = params.configuration?.taskPushNotificationConfig;
    if (pushConfig) {
      const push = this.pushOrThrow();
      await push.guard.check(pushConfig.url);
      // A caller with as many webhooks as it may have is refused before its task is recorded.
      if (push.limits) {
        const held = await push.configs.countForOwner(owner);
        if (held >= push.limits.perCaller) await configsCall(() => Promise.reject(new TooManyPushConfigs("perCaller", held, push.limits!.perCaller)), owner);
      }
    }
    const id = newId();
    // A new conversation is named after the task that starts it: the store then finds its first task by id,
    // and only tasks that continue a conversation go into the context index.
    const contextId = message.contextId || id;
    const stored = { ...message, taskId: id, contextId };
    // A store that keeps webhooks stores it in the task's own commit (one may not be stored without the other).
    const webhook = pushConfig && this.store.keepsWebhooks ? { ...pushConfig, taskId: id, id: pushConfig.id || newId() } : undefined;
    const { task, created, committed } = await callersData(() =>
      this.store.create({
        id,
        contextId,
        owner,
        message: stored,
        executor: this.runner.executorKind,
        // The caller's metadata is the caller's: the node keeps its own keys in the task's node state, which
        // nothing a caller sends reaches (shown beside the caller's metadata).
        metadata: extensions.length ? { ...params.metadata, [EXTENSIONS_KEY]: extensions } : params.metadata,
        // Kept with the task so that an execution resumed after a restart has them too.
        state: extensions.length ? { [EXTENSIONS_KEY]: extensions } : undefined,
        timestamp: now(),
        idempotent: !ctx.caller.anonymous,
        webhook,
      }),
    );
    if (ctx.note) ctx.note.taskId = task.id;
    if (!created) {
      // A retry of a message we already took: answer with that task instead of running it again.
      await whenStored(task.id, committed);
      // Waiting for input, the task has settled as far as this message goes: its next settled state needs an
      // answer only this caller can give (Hermes's A2A client sends the same message again after a stream
      // that ends INPUT_REQUIRED). Read with the promise, synchronously, so the two agree.
      const running = this.runner.isWaitingForInput(task.id) ? undefined : this.runner.settledOf(task.id);
      const snap = await this.store.snapshot(task.id, owner);
      return { task: snap?.task ?? task, committed, settled: running && !stream ? running : undefined, lastSeq: snap?.lastSeq ?? 0 };
    }
    const initial = stream ? snapshot(task) : undefined; // a stream starts with the task as submitted
    // Registered before the task starts, so the webhook hears its first event too.
    if (pushConfig && !webhook) {
      const push = this.pushOrThrow();
      try {
        await configsCall(() => push.configs.create(owner, { ...pushConfig, taskId: id }, push.limits), owner);
      } catch (err) {
        // The task is recorded but will not run without the webhook it was asked with: it ends FAILED (so it
        // does not stay SUBMITTED), and the caller hears why.
        await whenStored(task.id, committed).then(
          () => this.runner.endIdle(task, "TASK_STATE_FAILED", `not started: its push notification config could not be saved (${(err as Error).message})`, owner),
          () => {},
        ).catch(() => {});
        throw err;
      }
    }
    const settled = this.runner.start(task, stored, owner, { committed, extensions, state: extensions.length ? { [EXTENSIONS_KEY]: extensions } : {} });
    if (stream) this.runner.subscribe(task.id, owner, stream);
    return { task, initial, committed, settled, lastSeq: 0 };
  }

  /**
   * A message naming a task: the answer to the question it waits on (given to the execution that asked, if
   * it still waits here, or starting a new one), refused otherwise.
   */
  private async continueTask(params: SendMessageParams, owner: string, stream?: EventStream, extensions: string[] = []) {
    const { message } = params;
    const taskId = message.taskId as string;
    // Before the reads below: nothing may wait between them and the decision they lead to.
    await this.options.storage?.check(owner, messageBytes(message), false);
    // Both reads before any decision: from here to the start of an execution nothing waits, so two messages
    // for one task cannot both start it.
    const [snap, lastSeq] = await Promise.all([this.store.snapshot(taskId, owner), this.store.lastEventSeq(taskId)]);
    if (!snap) throw A2AError.taskNotFound(taskId);
    const { task } = snap;
    if (message.contextId && message.contextId !== task.contextId)
      throw A2AError.invalidParams(`message.contextId ${message.contextId} does not match task ${taskId}'s context ${task.contextId}`);
    if (isTerminal(task.status.state))
      throw A2AError.unsupportedOperation(`task ${taskId} is ${task.status.state} and cannot take more messages`);
    const maxMessages = this.options.maxTaskMessages;
    const held = task.history?.length ?? 0;
    // The last place is the task's final message's: a message that would take it is refused.
    if (maxMessages !== undefined && held + 2 > maxMessages)
      throw A2AError.invalidParams(
        `task ${taskId} holds ${held} messages; this node keeps at most ${maxMessages} per task (max_task_messages), the last place for the task's final message; start a new task in context ${task.contextId}`,
      );
    const maxBytes = this.options.maxTaskBytes;
    if (maxBytes !== undefined) {
      const holds = historyBytes(task.history) + new ArtifactSizes(task.artifacts).total;
      const adds = messageBytes(message);
      if (holds + adds > maxBytes)
        throw A2AError.invalidParams(
          `task ${taskId} holds ${holds} bytes; this message (${adds} bytes) would pass this node's limit of ${maxBytes} per task (max_task_bytes); start a new task in context ${task.contextId}`,
        );
    }
    const stored = { ...message, contextId: task.contextId };
    if (this.runner.isWaitingForInput(taskId)) {
      const answered = this.runner.answer(taskId, stored);
      if (stream) this.runner.subscribe(taskId, owner, stream);
      return { task: answered.task, initial: answered.task, committed: answered.committed, settled: answered.settled, lastSeq: answered.lastSeq };
    }
    // Running here (started by a message the snapshot is older than) is not waiting either.
    if (!isInterrupted(task.status.state) || this.runner.settledOf(taskId)) {
      const withdrawn = this.runner.withdrawnQuestion(taskId);
      throw A2AError.unsupportedOperation(
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
    if (this.runner.settledOf(taskId)) throw A2AError.unsupportedOperation(`task ${taskId} is still TASK_STATE_WORKING; wait for it to ask for input`);
    const extensionsChanged = JSON.stringify(snap.state[EXTENSIONS_KEY] ?? []) !== JSON.stringify(extensions);
    const noted = extensionsChanged ? { [EXTENSIONS_KEY]: extensions } : undefined;
    const committed = this.store.record(taskId, { history: [stored], ...(noted ? { state: noted, metadata: noted } : {}) });
    task.history = [...(task.history ?? []), stored];
    if (noted) task.metadata = { ...task.metadata, ...noted };
    const settled = this.runner.start(task, stored, owner, { lastSeq, committed, extensions, state: { ...snap.state, ...noted } });
    // Taken after the start, which made the task WORKING: the reply is never the question it answered (a caller
    // would take INPUT_REQUIRED for the task's state and stop waiting).
    const initial = snapshot(task);
    if (stream) this.runner.subscribe(task.id, owner, stream);
    return { task: initial, initial, committed, settled, lastSeq };
  }

  /**
   * The answer to a task whose execution waits in another process on the shared store: passed on to it (which
   * stores it, or refuses it as it would its own caller's); the task then runs there, and is followed here
   * through the store.
   */
  private async answerElsewhere(task: Task, message: Message, owner: string, stream?: EventStream) {
    const replicas = this.runner.replicas;
    if (!replicas) throw A2AError.unsupportedOperation(`task ${task.id} is held by another process; send the answer to it`);
    let lastSeq: number;
    try {
      ({ lastSeq } = await replicas.requestAnswer(task.id, owner, message));
    } catch (err) {
      if (err instanceof RelayedRefusal) throw new A2AError(err.code, err.message, err.reason);
      if (err instanceof TaskStoreError) throw A2AError.unsupportedOperation(err.message);
      throw err;
    }
    // Taken: the execution runs again (WORKING) with the answer in its history.
    const answered: Task = { ...task, status: { state: "TASK_STATE_WORKING", timestamp: now() }, history: [...(task.history ?? []), message] };
    const settled = stream ? undefined : untilSettled(this.store, this.runner.replicas, task.id, lastSeq).then(async () => (await this.store.get(task.id, owner)) ?? answered);
    return { task: answered, initial: answered, committed: Promise.resolve(), settled, lastSeq };
  }

  /**
   * The task as stored, every committed event after `afterSeq` (or after what the snapshot reflects), then
   * live events while it runs. The live subscription is made before the stored events are read, and holds
   * what it hears until the replay is in: an event committed meanwhile is in one or both, never in neither,
   * and the stream drops any it sees twice.
   */
  private async follow(taskId: string, owner: string, task: Task, lastSeq: number, afterSeq: number | undefined): Promise<AsyncIterable<StreamItem>> {
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
      remote = followStored(this.store, this.runner.replicas, taskId, stream, isInterrupted(state), (err) => (err === undefined ? stream.end() : stream.fail(err)));
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

  private async ownTask(taskId: string, ctx: CallContext): Promise<void> {
    if (!(await this.store.get(taskId, ctx.caller.name, 0))) throw A2AError.taskNotFound(taskId);
  }

  private pushOrThrow() {
    if (!this.options.push) throw A2AError.pushNotSupported();
    return this.options.push;
  }
}

/**
 * A push config store's own errors as A2A errors: another owner's config is "not found", a bad token bad
 * params, a task with as many configs as it may have bad params, a caller with as many as it may have a quota
 * reached (RESOURCE_EXHAUSTED), each naming the limit.
 */
async function configsCall<T>(call: () => Promise<T>, caller?: string): Promise<T> {
  try {
    return await call();
  } catch (err) {
    if (err instanceof ConfigOwnedElsewhere) throw A2AError.taskNotFound(err.taskId);
    if (err instanceof TooManyPushConfigs) {
      if (err.limit === "perTask")
        throw A2AError.invalidParams(
          `the task already has ${err.held} push notification configs, this node's limit per task (max_push_configs_per_task = ${err.max}); delete one (DeleteTaskPushNotificationConfig) or replace one by its id`,
        );
      throw A2AError.quota(
        `${caller ?? "this caller"} already has ${err.held} push notification configs on this node, its limit (max_push_configs_per_caller = ${err.max}); delete some, or wait until retention removes those of finished tasks`,
        "max_push_configs_per_caller",
      );
    }
    if (err instanceof TaskStoreRequestError) throw A2AError.invalidParams(err.message);
    throw err;
  }
}

/** Runs a store write of what the caller sent: data the store refuses as given is the caller's error. */
async function callersData<T>(write: () => Promise<T>): Promise<T> {
  try {
    return await write();
  } catch (err) {
    if (err instanceof UnstorableData) throw A2AError.invalidParams(err.message);
    throw err;
  }
}

/**
 * Waits for a write the answer depends on: if it is not stored, the caller hears so (-32602 for data of
 * its own the store refused, -32603 for the store failing) instead of being told the task was taken.
 */
async function whenStored(taskId: string, committed: Promise<void>): Promise<void> {
  try {
    await committed;
  } catch (err) {
    throw err instanceof UnstorableData ? A2AError.invalidParams(err.message) : notStored(taskId, err);
  }
}

/** A copy safe to serialize while the runner goes on changing the live task. */
function snapshot(task: Task): Task {
  return { ...task, status: { ...task.status }, history: task.history && [...task.history], artifacts: task.artifacts && [...task.artifacts] };
}

function trimHistory(task: Task, historyLength: number | undefined): Task {
  if (historyLength === undefined || !task.history) return task;
  if (historyLength === 0) {
    const { history: _drop, ...rest } = task;
    return rest;
  }
  return task.history.length > historyLength ? { ...task, history: task.history.slice(-historyLength) } : task;
}

/** Whether replayed events reach a terminal state (the task ended after the snapshot the stream started from). */
function endsIn(events: StoredEvent[]): boolean {
  const last = events[events.length - 1]?.response;
  return last !== undefined && "statusUpdate" in last && isTerminal(last.statusUpdate.status.state);
}

function prepend(first: StreamItem, rest: AsyncIterable<StreamItem>): AsyncIterable<StreamItem> {
  return mapStream(rest, (x) => x, first);
}
