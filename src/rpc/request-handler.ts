import { TaskService, type PushOptions, type SendRequest, type TaskCaller } from "../tasks/task-service";
import type { TaskRunner } from "../tasks/task-runner";
import type { TaskStore } from "../tasks/task-store";
import type { StorageGuard } from "../tasks/storage-quota";
import { mapStream } from "./streams";
import type { CallContext } from "./caller";
import { A2AError } from "../protocol/errors";
import { a2aErrorOf, asA2A } from "./refusals";
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
  ListTasksResult,
  SendMessageParams,
  SendMessageResult,
  Task,
} from "../protocol/types";

export type { StreamItem } from "../protocol/types";
export type { PushConfigs } from "../tasks/task-service";

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
  subscribeToTask(
    params: SubscribeToTaskParams,
    ctx: CallContext,
    afterSeq?: number,
  ): Promise<AsyncIterable<StreamItem>>;
  createTaskPushNotificationConfig(
    params: TaskPushNotificationConfig,
    ctx: CallContext,
  ): Promise<TaskPushNotificationConfig>;
  getTaskPushNotificationConfig(
    params: GetTaskPushNotificationConfigParams,
    ctx: CallContext,
  ): Promise<TaskPushNotificationConfig>;
  listTaskPushNotificationConfigs(
    params: ListTaskPushNotificationConfigsParams,
    ctx: CallContext,
  ): Promise<ListTaskPushNotificationConfigsResult>;
  deleteTaskPushNotificationConfig(params: GetTaskPushNotificationConfigParams, ctx: CallContext): Promise<void>;
  getExtendedAgentCard(ctx: CallContext): Promise<AgentCard>;
}

export interface RequestHandlerOptions {
  /** Webhooks; `limits`: how many one task and one caller may have (max_push_configs_per_task, _per_caller). */
  push?: PushOptions;
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
 * The A2A operations over the tasks service: each maps a validated request onto it (the caller named by its
 * certificate), and its result, or its refusal (see refusals.ts), onto the A2A shapes. The push notification
 * configs of a caller's tasks, the extensions a message activates and the extended card are this layer's own.
 */
export class DefaultRequestHandler implements A2ARequestHandler {
  private readonly tasks: TaskService;

  constructor(
    store: TaskStore,
    runner: TaskRunner,
    private readonly options: RequestHandlerOptions = {},
  ) {
    this.tasks = new TaskService(store, runner, { ...options, surfaceError: (err) => a2aErrorOf(err) });
  }

  async sendMessage(params: SendMessageParams, ctx: CallContext): Promise<SendMessageResult> {
    const request = this.sendRequest(params, ctx);
    const blocking = params.configuration?.returnImmediately !== true;
    const result = await asA2A(() => this.tasks.send(request, callerOf(ctx), blocking), ctx.caller.name);
    if (result.reply) return { message: result.reply };
    return { task: trimHistory(result.task, params.configuration?.historyLength) };
  }

  async sendStreamingMessage(params: SendMessageParams, ctx: CallContext): Promise<AsyncIterable<StreamItem>> {
    const request = this.sendRequest(params, ctx);
    const { first, events } = await asA2A(() => this.tasks.sendAndFollow(request, callerOf(ctx)), ctx.caller.name);
    const stream = refusalsMapped(events);
    if (!first) return stream;
    return mapStream(stream, (x) => x, { response: { task: trimHistory(first, params.configuration?.historyLength) } });
  }

  getTask(params: GetTaskParams, ctx: CallContext): Promise<Task> {
    return asA2A(() => this.tasks.get(params.id, ctx.caller.name, params.historyLength));
  }

  listTasks(params: ListTasksParams, ctx: CallContext): Promise<ListTasksResult> {
    return asA2A(() => this.tasks.list(ctx.caller.name, params));
  }

  cancelTask(params: CancelTaskParams, ctx: CallContext): Promise<Task> {
    return asA2A(() => this.tasks.cancel(params.id, ctx.caller.name));
  }

  async subscribeToTask(
    params: SubscribeToTaskParams,
    ctx: CallContext,
    afterSeq?: number,
  ): Promise<AsyncIterable<StreamItem>> {
    return refusalsMapped(await asA2A(() => this.tasks.subscribe(params.id, ctx.caller.name, afterSeq)));
  }

  async createTaskPushNotificationConfig(
    params: TaskPushNotificationConfig,
    ctx: CallContext,
  ): Promise<TaskPushNotificationConfig> {
    const push = this.pushOrThrow();
    await this.ownTask(params.taskId, ctx);
    await push.guard.check(params.url);
    return asA2A(() => push.configs.create(ctx.caller.name, params, push.limits), ctx.caller.name);
  }

  async getTaskPushNotificationConfig(
    params: GetTaskPushNotificationConfigParams,
    ctx: CallContext,
  ): Promise<TaskPushNotificationConfig> {
    const push = this.pushOrThrow();
    await this.ownTask(params.taskId, ctx);
    const config = await push.configs.get(ctx.caller.name, params.taskId, params.id);
    if (!config) throw A2AError.taskNotFound(`${params.taskId} (push notification config ${params.id})`);
    return config;
  }

  async listTaskPushNotificationConfigs(
    params: ListTaskPushNotificationConfigsParams,
    ctx: CallContext,
  ): Promise<ListTaskPushNotificationConfigsResult> {
    const push = this.pushOrThrow();
    await this.ownTask(params.taskId, ctx);
    return asA2A(() => push.configs.list(ctx.caller.name, params.taskId, params.pageSize, params.pageToken));
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
      throw A2AError.unsupportedOperation(
        "this agent has no extended agent card (its card says capabilities.extendedAgentCard: false)",
      );
    if (ctx.caller.anonymous)
      throw A2AError.unsupportedOperation(
        "the extended agent card is for fleet members: ask for it over mutual TLS with a fleet certificate (callers of this plain loopback listener have no identity)",
      );
    if (ctx.caller.outsideFleet)
      throw A2AError.unsupportedOperation(
        "the extended agent card is for fleet members: ask for it over mutual TLS with a fleet certificate (a token caller is outside the fleet)",
      );
    return await this.options.extendedCard();
  }

  /** A SendMessage as the tasks service takes it, with the extensions it activates. */
  private sendRequest(params: SendMessageParams, ctx: CallContext): SendRequest {
    const extensions = this.activateExtensions(ctx);
    return {
      message: params.message,
      metadata: params.metadata,
      pushConfig: params.configuration?.taskPushNotificationConfig,
      extensions,
    };
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

  private async ownTask(taskId: string, ctx: CallContext): Promise<void> {
    await asA2A(() => this.tasks.get(taskId, ctx.caller.name, 0));
  }

  private pushOrThrow() {
    if (!this.options.push) throw A2AError.pushNotSupported();
    return this.options.push;
  }
}

/** The caller as the tasks service knows it; the task a call concerns is noted for the audit log. */
function callerOf(ctx: CallContext): TaskCaller {
  const { note } = ctx;
  return {
    name: ctx.caller.name,
    anonymous: ctx.caller.anonymous,
    noteTask: note && ((taskId) => (note.taskId = taskId)),
  };
}

/** A task's events, a refusal that ends them as the A2A error it is (see refusals.ts). */
function refusalsMapped(events: AsyncIterable<StreamItem>): AsyncIterable<StreamItem> {
  return {
    [Symbol.asyncIterator]() {
      const it = events[Symbol.asyncIterator]();
      return {
        async next() {
          try {
            return await it.next();
          } catch (err) {
            throw a2aErrorOf(err);
          }
        },
        async return() {
          await it.return?.();
          return { value: undefined, done: true };
        },
      };
    },
  };
}

function trimHistory(task: Task, historyLength: number | undefined): Task {
  if (historyLength === undefined || !task.history) return task;
  if (historyLength === 0) {
    const { history: _drop, ...rest } = task;
    return rest;
  }
  return task.history.length > historyLength ? { ...task, history: task.history.slice(-historyLength) } : task;
}
