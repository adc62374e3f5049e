import type { Artifact, TaskStatus } from "../../src/protocol/types";
import type { TaskStore } from "../../src/tasks/task-store";

/**
 * The write the runner makes when a task ends (see TaskRunner.writeOutcome): its status, the status message
 * added to the history as the agent's reply, the artifacts and metadata, in one change.
 */
export function finishTask(
  store: TaskStore,
  taskId: string,
  status: TaskStatus,
  artifacts: Artifact[] = [],
  metadata?: Record<string, unknown>,
): Promise<void> {
  return store.record(taskId, { status, history: status.message ? [status.message] : undefined, artifacts, metadata });
}
