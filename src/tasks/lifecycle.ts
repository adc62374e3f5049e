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
  /**
   * Its writes could not be stored, not even its failure (the database does not take writes): its execution
   * ended, and the task, as stored, is taken up again as after a restart once the database takes writes.
   */
  notStored?(task: Task, peer: string, reason: string): void;
}

/** Several watchers as one (plain loops: this runs for every task). */
export function allOf(...watchers: TaskLifecycle[]): TaskLifecycle {
  return {
    accepted(t, p, a) {
      for (let i = 0; i < watchers.length; i++) watchers[i].accepted(t, p, a);
    },
    waitingForInput(t, p) {
      for (let i = 0; i < watchers.length; i++) watchers[i].waitingForInput(t, p);
    },
    answered(t, p) {
      for (let i = 0; i < watchers.length; i++) watchers[i].answered(t, p);
    },
    finished(t, p, s, sec, ex) {
      for (let i = 0; i < watchers.length; i++) watchers[i].finished(t, p, s, sec, ex);
    },
    leftForRestart(t, p) {
      for (let i = 0; i < watchers.length; i++) watchers[i].leftForRestart(t, p);
    },
    notStored(t, p, r) {
      for (let i = 0; i < watchers.length; i++) watchers[i].notStored?.(t, p, r);
    },
  };
}
