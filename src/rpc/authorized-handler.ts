import { allows, skillOf, type A2AMethod, type AccessRule } from "./access-policy";
import type { CallContext } from "./caller";
import { A2AError } from "../protocol/errors";
import type { A2ARequestHandler, StreamItem } from "./request-handler";
import type {
  AgentCard,
  CancelTaskParams,
  GetTaskParams,
  GetTaskPushNotificationConfigParams,
  ListTaskPushNotificationConfigsParams,
  ListTaskPushNotificationConfigsResult,
  ListTasksParams,
  ListTasksResult,
  SendMessageParams,
  SendMessageResult,
  SubscribeToTaskParams,
  Task,
  TaskPushNotificationConfig,
} from "../protocol/types";

/**
 * The authorization policy, in the one place every call passes: both bindings (JSON-RPC v1.0 and v0.3,
 * HTTP+JSON) call the request handler through their method tables, and this wraps it. A refused call is refused
 * before the handler reads or writes anything, so it leaves no task and learns nothing of anyone's tasks.
 *
 * The plain loopback listener's caller (anonymous: the machine itself, opened by the operator's own setting)
 * is not subject to the policy, which names fleet members. `rules` is read on every call, so a reload
 * (SIGHUP) applies to the next one.
 *
 * It also notes the task a call concerns (ctx.note), for the audit log.
 */
export class AuthorizedHandler implements A2ARequestHandler {
  constructor(
    private readonly inner: A2ARequestHandler,
    private readonly rules: () => readonly AccessRule[],
  ) {}

  private check(ctx: CallContext, method: A2AMethod, skill?: string, taskId?: string): void {
    if (ctx.note && taskId !== undefined) ctx.note.taskId = taskId;
    if (ctx.caller.anonymous || allows(this.rules(), ctx.caller.name, method, skill)) return;
    if (ctx.note) ctx.note.denied = true;
    throw A2AError.permissionDenied(ctx.caller.name, method, skill);
  }

  async sendMessage(params: SendMessageParams, ctx: CallContext): Promise<SendMessageResult> {
    this.checkSend(ctx, "SendMessage", params);
    return this.inner.sendMessage(params, ctx);
  }

  async sendStreamingMessage(params: SendMessageParams, ctx: CallContext): Promise<AsyncIterable<StreamItem>> {
    this.checkSend(ctx, "SendStreamingMessage", params);
    return this.inner.sendStreamingMessage(params, ctx);
  }

  /**
   * A message, and whatever else it asks for: a webhook in its configuration (taskPushNotificationConfig, v0.3's
   * pushNotificationConfig) is a CreateTaskPushNotificationConfig too, so a peer the policy withholds that
   * from cannot register one by sending it along with a message.
   */
  private checkSend(ctx: CallContext, method: "SendMessage" | "SendStreamingMessage", params: SendMessageParams): void {
    this.check(ctx, method, skillOf(params.message), params.message.taskId);
    if (params.configuration?.taskPushNotificationConfig)
      this.check(ctx, "CreateTaskPushNotificationConfig", undefined, params.message.taskId);
  }

  async getTask(params: GetTaskParams, ctx: CallContext): Promise<Task> {
    this.check(ctx, "GetTask", undefined, params.id);
    return this.inner.getTask(params, ctx);
  }

  async listTasks(params: ListTasksParams, ctx: CallContext): Promise<ListTasksResult> {
    this.check(ctx, "ListTasks");
    return this.inner.listTasks(params, ctx);
  }

  async cancelTask(params: CancelTaskParams, ctx: CallContext): Promise<Task> {
    this.check(ctx, "CancelTask", undefined, params.id);
    return this.inner.cancelTask(params, ctx);
  }

  async subscribeToTask(
    params: SubscribeToTaskParams,
    ctx: CallContext,
    afterSeq?: number,
  ): Promise<AsyncIterable<StreamItem>> {
    this.check(ctx, "SubscribeToTask", undefined, params.id);
    return this.inner.subscribeToTask(params, ctx, afterSeq);
  }

  async createTaskPushNotificationConfig(
    params: TaskPushNotificationConfig,
    ctx: CallContext,
  ): Promise<TaskPushNotificationConfig> {
    this.check(ctx, "CreateTaskPushNotificationConfig", undefined, params.taskId);
    return this.inner.createTaskPushNotificationConfig(params, ctx);
  }

  async getTaskPushNotificationConfig(
    params: GetTaskPushNotificationConfigParams,
    ctx: CallContext,
  ): Promise<TaskPushNotificationConfig> {
    this.check(ctx, "GetTaskPushNotificationConfig", undefined, params.taskId);
    return this.inner.getTaskPushNotificationConfig(params, ctx);
  }

  async listTaskPushNotificationConfigs(
    params: ListTaskPushNotificationConfigsParams,
    ctx: CallContext,
  ): Promise<ListTaskPushNotificationConfigsResult> {
    this.check(ctx, "ListTaskPushNotificationConfigs", undefined, params.taskId);
    return this.inner.listTaskPushNotificationConfigs(params, ctx);
  }

  async deleteTaskPushNotificationConfig(params: GetTaskPushNotificationConfigParams, ctx: CallContext): Promise<void> {
    this.check(ctx, "DeleteTaskPushNotificationConfig", undefined, params.taskId);
    return this.inner.deleteTaskPushNotificationConfig(params, ctx);
  }

  async getExtendedAgentCard(ctx: CallContext): Promise<AgentCard> {
    this.check(ctx, "GetExtendedAgentCard");
    return this.inner.getExtendedAgentCard(ctx);
  }
}
