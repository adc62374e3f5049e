import { RemoteError } from "../client/peer-client";
import type { StreamResponse, Task, TaskStatus } from "../protocol/types";
import { isInterrupted, isSettled } from "../protocol/types";
import { isOutsidePeer } from "../peers/peer-registry";
import { accumulate } from "../tasks/artifacts";
import type { ClientSession } from "./client-session";

/** How a wait ended: the task settled (ended, or waits for input), the deadline passed, or Ctrl-C. */
export type FollowReason = "settled" | "timeout" | "interrupted";

export interface FollowOptions {
  /** When to stop waiting (ms since the epoch). */
  deadline: number;
  /** Ctrl-C. */
  interrupt?: AbortSignal;
  /** Each change as it arrives (a status or artifact update, or the whole task from a poll), with the task after it. */
  onItem?(item: StreamResponse, task: Task): void;
  /**
   * A status the wait must not end on: the question (or authorization) a message just answered. A peer may
   * still show it for a moment after taking the answer (older nodes even replied with it), and the task only
   * settles again at a state after it.
   */
  stale?: TaskStatus;
}

/**
 * The status a message to `task` answered, when the peer's reply still shows it: the task waited for input
 * (or an authorization) and the reply is that same state. The wait that follows must not end on it.
 */
export function answeredStatus(reply: Task): TaskStatus | undefined {
  return isInterrupted(reply.status.state) ? reply.status : undefined;
}

/** The same status, as the peer stored it: one state set at one moment, with one message. */
function sameStatus(a: TaskStatus, b: TaskStatus): boolean {
  return a.state === b.state && a.timestamp === b.timestamp && a.message?.messageId === b.message?.messageId;
}

/** The peer went away while we waited; the task (as last seen) was accepted and may well go on. */
export class FollowBroken extends Error {
  constructor(
    readonly task: Task,
    override readonly cause: unknown,
  ) {
    super(`lost the peer while waiting for task ${task.id}`);
    this.name = "FollowBroken";
  }
}

/** Applies one stream item to the task as we know it. */
export function applyItem(task: Task, item: StreamResponse): Task {
  if ("task" in item) return item.task;
  if ("statusUpdate" in item) return { ...task, status: item.statusUpdate.status };
  if ("artifactUpdate" in item) {
    const { artifact, append } = item.artifactUpdate;
    return { ...task, artifacts: accumulate(task.artifacts ?? [], artifact, append === true) };
  }
  return task;
}

/**
 * Waits until a task settles: over SubscribeToTask (events as they happen), and where the peer cannot
 * stream it (the task ended meanwhile, an older peer, a stream cut short) by polling GetTask, fast at first
 * and then once a second. Ends with the settled task fetched whole by GetTask.
 */
export async function followTask(
  session: ClientSession,
  start: Task,
  options: FollowOptions,
): Promise<{ task: Task; reason: FollowReason }> {
  let task = start;
  let timedOut = false;
  // Once the task has been seen in any other status, the stale one is behind it for good.
  let stale = options.stale;
  const settled = (t: Task): boolean => {
    if (stale && sameStatus(t.status, stale)) return false;
    stale = undefined;
    return isSettled(t.status.state);
  };
  const stopped = (): FollowReason | undefined =>
    options.interrupt?.aborted ? "interrupted" : timedOut || Date.now() >= options.deadline ? "timeout" : undefined;
  const see = (item: StreamResponse) => {
    task = applyItem(task, item);
    options.onItem?.(item, task);
  };
  if (settled(task)) return { task, reason: "settled" };

  const abort = new AbortController();
  const timer = setTimeout(
    () => {
      timedOut = true;
      abort.abort();
    },
    Math.max(0, options.deadline - Date.now()),
  );
  const onInterrupt = () => abort.abort();
  // Ctrl-C may have come before this wait began (while the task was being sent).
  if (options.interrupt?.aborted) abort.abort();
  options.interrupt?.addEventListener("abort", onInterrupt, { once: true });
  // A subscription that does not open with the task as it is (Hermes's own A2A server sends only the task's
  // end, and never an INPUT_REQUIRED reached before it) would miss what happened before it began: for a peer
  // outside the fleet the task is read once as soon as the subscription is taken, and if it has settled the
  // subscription is dropped (the poll below then ends the wait).
  const subscription = new AbortController();
  const onAbort = () => subscription.abort();
  // The wait may be over already (Ctrl-C before it began aborted `abort` above).
  if (abort.signal.aborted) subscription.abort();
  else abort.signal.addEventListener("abort", onAbort, { once: true });
  const opened =
    session.target.peer && isOutsidePeer(session.target.peer)
      ? () =>
          void session.client.getTask({ id: task.id }, abort.signal).then(
            (fresh) =>
              isSettled(fresh.status.state) && !(stale && sameStatus(fresh.status, stale)) && subscription.abort(),
            () => undefined, // the subscription or the poll says what is wrong
          )
      : undefined;
  try {
    try {
      for await (const item of session.client.subscribeToTask(task.id, subscription.signal, opened)) {
        see(item);
        if (settled(task)) break;
      }
    } catch {
      const why = stopped();
      if (why) return { task, reason: why };
      // A refusal (the task ended before we subscribed, a peer without streaming) means: ask instead. A cut
      // connection is asked about too: if the peer is really gone, the poll says so.
    }
    for (let delay = 20; ; delay = Math.min(delay * 2, 1000)) {
      const why = stopped();
      if (why) return { task, reason: why };
      try {
        const fresh = await session.client.getTask({ id: task.id }, abort.signal);
        see({ task: fresh });
      } catch (err) {
        const late = stopped();
        if (late) return { task, reason: late };
        // Settled over the stream already: the whole task was only a nicety.
        if (settled(task)) return { task, reason: "settled" };
        if (err instanceof RemoteError) throw err;
        throw new FollowBroken(task, err);
      }
      if (settled(task)) return { task, reason: "settled" };
      await pause(delay, abort.signal);
    }
  } finally {
    clearTimeout(timer);
    abort.signal.removeEventListener("abort", onAbort);
    options.interrupt?.removeEventListener("abort", onInterrupt);
  }
}

function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal.removeEventListener("abort", done);
      resolve();
    }
    signal.addEventListener("abort", done, { once: true });
  });
}
