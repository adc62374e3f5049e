import type { AgentExecutor } from "../executors/executor";
import type { Message, Task, TaskStatus } from "../protocol/types";
import { agentMessage } from "./artifacts";
import { now } from "./clock";
import type { TaskStore, UnfinishedTask } from "./task-store";
import type { StartOptions } from "./task-runner";

/** The task's node state (shown in its metadata too): how many times it was resumed after a restart. */
export const RESTARTS_KEY = "a2a-node/restarts";

/** How many times a task is resumed after the node stopped mid-way before it is given up. */
const MAX_RESTARTS = 2;

/**
 * Tasks a previous run of the node left SUBMITTED or WORKING: each is run again, re-attached, or ended
 * FAILED as interrupted, as its executor's `onRestart` says, so that every accepted task gets a recorded
 * end. A task that was already resumed twice is not tried again (it may be what brings the node down).
 * Tasks that wait for input stay as they are: their answer starts them again.
 */
export async function recoverUnfinished(
  store: TaskStore,
  executor: AgentExecutor,
  start: (task: Task, message: Message, owner: string, options: StartOptions) => void,
  /** The tasks to recover (default: every unfinished task of the store). */
  tasks?: UnfinishedTask[],
  /** Told of each task ended here (FAILED), which nothing runs any more. */
  ended?: (taskId: string) => void,
): Promise<{ resumed: number; failed: number }> {
  let resumed = 0;
  let failed = 0;
  const writes: Promise<void>[] = [];
  for (const t of tasks ?? (await store.unfinished())) {
    const [snap, lastSeq] = await Promise.all([store.snapshot(t.id, t.owner), store.lastEventSeq(t.id)]);
    if (!snap) continue;
    const { task } = snap;
    const policy = t.executor === executor.kind ? (executor.onRestart ?? "fail") : "fail";
    // From the node state, never the metadata a caller wrote (a caller could have sent any count there).
    const restarts = Number(snap.state[RESTARTS_KEY] ?? 0);
    const message = [...(task.history ?? [])].reverse().find((m) => m.role === "ROLE_USER");
    if (policy !== "fail" && restarts < MAX_RESTARTS && message) {
      const noted = { [RESTARTS_KEY]: restarts + 1 };
      task.metadata = { ...task.metadata, ...noted };
      void store.record(t.id, { state: noted, metadata: noted });
      start(task, message, t.owner, { lastSeq, resumed: policy === "reattach", state: { ...snap.state, ...noted } });
      resumed++;
      continue;
    }
    const why =
      policy === "fail"
        ? "interrupted: the node stopped before this task finished; send it again"
        : "interrupted: the node stopped while running this task, more than twice; not trying it again";
    const status: TaskStatus = { state: "TASK_STATE_FAILED", timestamp: now(), message: agentMessage(t.id, task.contextId, why) };
    failed++;
    const endedEvent = { statusUpdate: { taskId: t.id, contextId: task.contextId, status } };
    writes.push(store.record(t.id, { status, history: [status.message!], events: { firstSeq: lastSeq + 1, items: [endedEvent] }, rowSeq: lastSeq + 1 }).then(() => ended?.(t.id)));
  }
  await Promise.all(writes);
  return { resumed, failed };
}
