import { newId, now } from "../tasks/clock";
import type { TaskRunner } from "../tasks/task-runner";
import type { TaskStore } from "../tasks/task-store";
import type { CallContext } from "./caller";
import { A2AError } from "./errors";
import type {
  CancelTaskParams,
  GetTaskParams,
  ListTasksParams,
  ListTasksResult,
  SendMessageParams,
  SendMessageResult,
  Task,
} from "./types";
import { isInterrupted, isTerminal } from "./types";

/** The A2A operations, independent of any transport (JSON-RPC today; others could sit beside it). */
export interface A2ARequestHandler {
  sendMessage(params: SendMessageParams, ctx: CallContext): Promise<SendMessageResult>;
  getTask(params: GetTaskParams, ctx: CallContext): Promise<Task>;
  listTasks(params: ListTasksParams, ctx: CallContext): Promise<ListTasksResult>;
  cancelTask(params: CancelTaskParams, ctx: CallContext): Promise<Task>;
}

/**
 * a2a-node's task lifecycle: receipt first (the task is committed before anything answers), execution by the
 * runner, and every read scoped to the calling peer.
 */
export class DefaultRequestHandler implements A2ARequestHandler {
  constructor(
    private readonly store: TaskStore,
    private readonly runner: TaskRunner,
  ) {}

  async sendMessage(params: SendMessageParams, ctx: CallContext): Promise<SendMessageResult> {
    const { message } = params;
    const owner = ctx.caller.name;
    const historyLength = params.configuration?.historyLength;
    const blocking = params.configuration?.returnImmediately !== true;

    if (message.taskId) return { task: await this.continueTask(params, owner, blocking) };

    this.runner.assertCapacity();
    const contextId = message.contextId || newId();
    const id = newId();
    const stored = { ...message, taskId: id, contextId };
    const { task, created, committed } = this.store.create({
      id,
      contextId,
      owner,
      message: stored,
      executor: this.runner.executorKind,
      metadata: params.metadata,
      timestamp: now(),
    });
    if (!created) {
      // A retry of a message we already took: answer with that task instead of running it twice.
      await committed;
      const running = this.runner.settledOf(task.id);
      const current = blocking && running ? await running : task;
      return { task: trimHistory(current, historyLength) };
    }
    const settled = this.runner.start(task, stored, owner);
    if (blocking) return { task: trimHistory(await settled, historyLength) };
    // Receipt first: answer only once the task is durable.
    await committed;
    return { task: trimHistory(snapshot(task), historyLength) };
  }

  async getTask(params: GetTaskParams, ctx: CallContext): Promise<Task> {
    const task = this.store.get(params.id, ctx.caller.name, params.historyLength);
    if (!task) throw A2AError.taskNotFound(params.id);
    return task;
  }

  async listTasks(params: ListTasksParams, ctx: CallContext): Promise<ListTasksResult> {
    return this.store.list(ctx.caller.name, params);
  }

  async cancelTask(params: CancelTaskParams, ctx: CallContext): Promise<Task> {
    const task = this.store.get(params.id, ctx.caller.name);
    if (!task) throw A2AError.taskNotFound(params.id);
    if (isTerminal(task.status.state)) throw A2AError.taskNotCancelable(task.id, task.status.state);
    const settled = this.runner.cancel(task.id, `canceled by ${ctx.caller.name}`);
    if (settled) await settled;
    else {
      // Interrupted (waiting for input) or left over: nothing runs it, so record the cancel directly.
      await this.store.finish(task.id, { state: "TASK_STATE_CANCELED", timestamp: now() }, []);
    }
    return this.store.get(task.id, ctx.caller.name) as Task;
  }

  /** A message naming a task: continue it if it waits for input, refuse otherwise. */
  private async continueTask(params: SendMessageParams, owner: string, blocking: boolean): Promise<Task> {
    const { message } = params;
    const taskId = message.taskId as string;
    const task = this.store.get(taskId, owner);
    if (!task) throw A2AError.taskNotFound(taskId);
    if (message.contextId && message.contextId !== task.contextId)
      throw A2AError.invalidParams(`message.contextId ${message.contextId} does not match task ${taskId}'s context ${task.contextId}`);
    if (isTerminal(task.status.state))
      throw A2AError.unsupportedOperation(`task ${taskId} is ${task.status.state} and cannot take more messages`);
    if (!isInterrupted(task.status.state))
      throw A2AError.unsupportedOperation(`task ${taskId} is still ${task.status.state}; wait for it to ask for input`);
    this.runner.assertCapacity();
    const stored = { ...message, contextId: task.contextId };
    const committed = this.store.appendMessage(taskId, stored);
    task.history = [...(task.history ?? []), stored];
    const settled = this.runner.start(task, stored, owner);
    if (!blocking) await committed;
    return trimHistory(blocking ? await settled : snapshot(task), params.configuration?.historyLength);
  }
}

/** A copy safe to serialize while the runner goes on changing the live task. */
function snapshot(task: Task): Task {
  return { ...task, status: { ...task.status }, history: task.history && [...task.history] };
}

function trimHistory(task: Task, historyLength: number | undefined): Task {
  if (historyLength === undefined || !task.history) return task;
  if (historyLength === 0) {
    const { history: _drop, ...rest } = task;
    return rest;
  }
  return task.history.length > historyLength ? { ...task, history: task.history.slice(-historyLength) } : task;
}
