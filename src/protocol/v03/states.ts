import { bad } from "../field-checks";
import type { TaskState } from "../types";
import type { V03TaskState } from "./shapes";

/* Task states between v1.0 and v0.3. */

const STATE_TO_V03: Record<TaskState, V03TaskState> = {
  TASK_STATE_SUBMITTED: "submitted",
  TASK_STATE_WORKING: "working",
  TASK_STATE_INPUT_REQUIRED: "input-required",
  TASK_STATE_AUTH_REQUIRED: "auth-required",
  TASK_STATE_COMPLETED: "completed",
  TASK_STATE_CANCELED: "canceled",
  TASK_STATE_FAILED: "failed",
  TASK_STATE_REJECTED: "rejected",
};
const STATE_FROM_V03 = new Map<string, TaskState>(
  Object.entries(STATE_TO_V03).map(([v1, v03]) => [v03, v1 as TaskState]),
);

export function toV03State(state: TaskState): V03TaskState {
  return STATE_TO_V03[state] ?? "unknown";
}

/** v0.3's "unknown" has no v1.0 counterpart here, so it is refused like any other unexpected value. */
export function fromV03State(state: unknown, where = "params.status.state"): TaskState {
  const s = typeof state === "string" ? STATE_FROM_V03.get(state) : undefined;
  if (!s) throw bad(`${where} must be one of ${[...STATE_FROM_V03.keys()].join(", ")}`);
  return s;
}
