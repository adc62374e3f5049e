import type { ExecutionOutcome } from "../executors/executor";
import type { Message, Task } from "../protocol/types";

/**
 * The task's node state (shown in its metadata too): the message whose execution ended AUTH_REQUIRED,
 * `{messageId}`; null once the task has gone on past it. Kept with the task, so the retry works across a
 * restart of the node.
 */
export const AUTH_RETRY_KEY = "a2a-node/auth-required";

/**
 * In-task authorization (A2A v1.0 §7.6), as this node does it. An executor that finds its backend refusing
 * the node's credentials (a model endpoint answering 401) ends the execution TASK_STATE_AUTH_REQUIRED, with a
 * status message saying what is refused and who can fix it. The credential is the node operator's, supplied
 * out of band (the key file, then a restart or reload); the task stays AUTH_REQUIRED (an interrupted state:
 * it survives a restart and is not swept by retention) until either:
 * - a message is sent to the task: the execution is tried again with the message that was refused, not the new
 *   one (which is kept in the task's history: it is the client's word on the authorization, e.g. "retry"), and
 *   the messages about the authorization stay out of the history the executor sees; or
 * - the task is canceled.
 */
export interface AuthRetry {
  /** The message the refused execution ran, to run again. */
  message: Message;
  /** Messages of the task after it (the AUTH_REQUIRED status, the client's follow-ups), left out of the history. */
  skip: Set<string>;
}

/** The retry a task's next execution is, if its last execution ended AUTH_REQUIRED (`state`: the task's node state). */
export function authRetryOf(task: Task, state: Record<string, unknown>): AuthRetry | undefined {
  const noted = state[AUTH_RETRY_KEY] as { messageId?: unknown } | null | undefined;
  if (!noted || typeof noted.messageId !== "string") return undefined;
  const history = task.history ?? [];
  const at = history.findIndex((m) => m.messageId === noted.messageId);
  if (at === -1) return undefined;
  return { message: history[at], skip: new Set(history.slice(at + 1).map((m) => m.messageId)) };
}

/**
 * The node state an outcome leaves: the note that makes the next message a retry of `ran`, or the clearing of
 * an old one (`state`: the task's node state so far); undefined when there is nothing to note.
 */
export function authNote(
  outcome: ExecutionOutcome,
  state: Record<string, unknown>,
  ran: Message,
): Record<string, unknown> | undefined {
  if (outcome.state === "TASK_STATE_AUTH_REQUIRED") return { [AUTH_RETRY_KEY]: { messageId: ran.messageId } };
  if (state[AUTH_RETRY_KEY]) return { [AUTH_RETRY_KEY]: null };
  return undefined;
}
