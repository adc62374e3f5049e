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
      log.info(
        arrival === "new" ? "task accepted" : arrival === "resumed" ? "task resumed after a restart" : "task continued",
        {
          task_id: task.id,
          context_id: task.contextId,
          peer,
        },
      ),
    waitingForInput: (task, peer) =>
      log.info("task waits for input", { task_id: task.id, context_id: task.contextId, peer }),
    answered: (task, peer) => log.info("task answered", { task_id: task.id, context_id: task.contextId, peer }),
    finished: (task, peer, state, seconds, executorSeconds) => {
      log.info("task finished", {
        task_id: task.id,
        context_id: task.contextId,
        peer,
        state: state.replace("TASK_STATE_", "").toLowerCase(),
        duration_ms: Math.round(seconds * 1000),
        executor_ms: Math.round(executorSeconds * 1000),
      });
      // The fix is the operator's (a key), so they hear of it: the reason is the executor's own words about
      // its backend (see src/tasks/auth-retry.ts), not anything the task says.
      if (state === "TASK_STATE_AUTH_REQUIRED")
        log.warn("task waits for an authorization: the executor's backend refused this node's credentials", {
          task_id: task.id,
          context_id: task.contextId,
          peer,
          reason: task.status.message?.parts.map((p) => p.text ?? "").join(" "),
        });
    },
    notStored: (task, peer, reason) =>
      log.error(
        "could not store a task's outcome; it is taken up again as after a restart once the database takes writes",
        {
          task_id: task.id,
          context_id: task.contextId,
          peer,
          reason,
        },
      ),
    leftForRestart: (task, peer) =>
      log.info("task left for the next start", {
        task_id: task.id,
        context_id: task.contextId,
        peer,
        state: task.status.state.replace("TASK_STATE_", "").toLowerCase(),
      }),
  };
}
