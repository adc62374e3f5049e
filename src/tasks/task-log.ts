import type { Logger } from "../log";
import type { TaskLifecycle } from "./lifecycle";

/**
 * The daemon's lines about tasks: one when a task is taken, one when it ends (state, duration, peer), and
 * one each time it waits for an answer or gets one. Each line carries task_id, context_id and peer, so
 * `journalctl -u a2a-node | grep TASK_ID` follows one task; none carries what the task or its answer says.
 */
export function taskLog(log: Logger): TaskLifecycle {
  return {
    accepted: (task, peer, arrival) =>
      log.info(arrival === "new" ? "task accepted" : arrival === "resumed" ? "task resumed after a restart" : "task continued", {
        task_id: task.id,
        context_id: task.contextId,
        peer,
      }),
    waitingForInput: (task, peer) => log.info("task waits for input", { task_id: task.id, context_id: task.contextId, peer }),
    answered: (task, peer) => log.info("task answered", { task_id: task.id, context_id: task.contextId, peer }),
    finished: (task, peer, state, seconds, executorSeconds) =>
      log.info("task finished", {
        task_id: task.id,
        context_id: task.contextId,
        peer,
        state: state.replace("TASK_STATE_", "").toLowerCase(),
        duration_ms: Math.round(seconds * 1000),
        executor_ms: Math.round(executorSeconds * 1000),
      }),
    leftForRestart: (task, peer) =>
      log.info("task left for the next start", { task_id: task.id, context_id: task.contextId, peer, state: task.status.state.replace("TASK_STATE_", "").toLowerCase() }),
  };
}
