import type { Task, TaskState } from "../protocol/types";

/** How a task came to the runner: a new task, a message continuing one, or a task a restart picked up. */
export type Arrival = "new" | "continued" | "resumed";

/**
 * What happens to tasks, told to whoever watches the runner (the daemon's log and its metrics). Calls carry
 * the task (id, contextId) and the peer, never what the task says; implementations must be cheap, since they
 * run for every task.
 */
export interface TaskLifecycle {
  accepted(task: Task, peer: string, arrival: Arrival): void;
  /** The execution asks a question; the task is INPUT_REQUIRED until an answer comes. */
  waitingForInput(task: Task, peer: string): void;
  /** An answer reached the waiting execution; it runs again. */
  answered(task: Task, peer: string): void;
  /**
   * The task reached its recorded final state. `seconds` since the runner took it; `executorSeconds` the
   * executor's own share of that (queueing and waiting for answers left out).
   */
  finished(task: Task, peer: string, state: TaskState, seconds: number, executorSeconds: number): void;
  /** Stopped at shutdown and left as stored, for the next start to take up (see TaskRunner.shutdown). */
  leftForRestart(task: Task, peer: string): void;
}

/** Several watchers as one. */
export function allOf(...watchers: TaskLifecycle[]): TaskLifecycle {
  return {
    accepted: (t, p, a) => watchers.forEach((w) => w.accepted(t, p, a)),
    waitingForInput: (t, p) => watchers.forEach((w) => w.waitingForInput(t, p)),
    answered: (t, p) => watchers.forEach((w) => w.answered(t, p)),
    finished: (t, p, s, sec, ex) => watchers.forEach((w) => w.finished(t, p, s, sec, ex)),
    leftForRestart: (t, p) => watchers.forEach((w) => w.leftForRestart(t, p)),
  };
}
