import { isSettled, isTerminal, type StreamItem } from "../protocol/types";
import type { EventStream } from "./event-stream";
import type { ReplicaMessages } from "./replica-messages";
import type { TaskStore } from "./task-store";

/** A stream following a task through the store (see followStored). */
export interface StoredFollow {
  /** Reads what was committed since the stream's position: call once the replay is in. */
  catchUp(): void;
  stop(): void;
}

/**
 * Follows a task that runs in another process (another replica on the same database) through the store alone:
 * each time the replicas' messages say the task's events may have grown (`watch`), the stream gets the committed events
 * after the last one it has, in order. The watch is made before the caller reads its replay, so an event is in
 * the replay, or read after a notice, or both (the stream drops what it already has), never in neither. The
 * stream ends at the task's next settled state, or at its end when `untilTerminal` (it was waiting for input);
 * `onEnd` hears when following stops by itself (an error: the stream should fail with it).
 */
export function followStored(
  store: TaskStore,
  replicas: ReplicaMessages | undefined,
  taskId: string,
  stream: EventStream,
  untilTerminal: boolean,
  onEnd: (err?: unknown) => void,
): StoredFollow {
  if (!replicas) throw new Error("this store cannot tell when another process commits events");
  let reading = false;
  let again = false;
  let stopped = false;
  const stop = (err?: unknown) => {
    if (stopped) return;
    stopped = true;
    unwatch();
    onEnd(err);
  };
  const read = async () => {
    if (stopped) return;
    if (reading) {
      again = true; // a notice while reading: read once more when done
      return;
    }
    reading = true;
    try {
      do {
        again = false;
        for (const e of await store.eventsAfter(taskId, stream.position)) {
          stream.push(e);
          if (ends(e, untilTerminal)) return stop();
        }
      } while (again && !stopped);
    } catch (err) {
      stop(err);
    } finally {
      reading = false;
    }
  };
  const unwatch = replicas.watch(taskId, () => void read());
  return { catchUp: () => void read(), stop: () => stop() };
}

/** Whether an event ends a stream that follows a task from the store. */
export function ends(e: StreamItem, untilTerminal: boolean): boolean {
  if (!("statusUpdate" in e.response)) return false;
  const state = e.response.statusUpdate.status.state;
  return untilTerminal ? isTerminal(state) : isSettled(state);
}

/**
 * Resolves once the task has ended (a terminal event is stored), as far as the replicas' messages tell (`watch`), or
 * after `timeoutMs` otherwise: whichever comes first.
 */
export async function untilEnded(
  store: TaskStore,
  replicas: ReplicaMessages | undefined,
  taskId: string,
  timeoutMs: number,
): Promise<void> {
  if (!replicas) return;
  let notify: () => void = () => {};
  let timer: ReturnType<typeof setTimeout> | undefined;
  const expired = new Promise<void>((resolve) => (timer = setTimeout(resolve, timeoutMs)));
  const unwatch = replicas.watch(taskId, () => notify());
  try {
    let seen = 0;
    for (;;) {
      const noticed = new Promise<void>((resolve) => (notify = resolve));
      for (const e of await store.eventsAfter(taskId, seen)) {
        seen = e.seq;
        if ("statusUpdate" in e.response && isTerminal(e.response.statusUpdate.status.state)) return;
      }
      if ((await Promise.race([noticed.then(() => "noticed"), expired.then(() => "expired")])) === "expired") return;
    }
  } finally {
    clearTimeout(timer);
    unwatch();
  }
}

/** Resolves once a settled state (interrupted or terminal) is stored for the task after event `afterSeq`. */
export async function untilSettled(
  store: TaskStore,
  replicas: ReplicaMessages | undefined,
  taskId: string,
  afterSeq: number,
): Promise<void> {
  if (!replicas) throw new Error("this store cannot tell when another process commits events");
  let notify: () => void = () => {};
  const unwatch = replicas.watch(taskId, () => notify());
  try {
    let seen = afterSeq;
    for (;;) {
      const noticed = new Promise<void>((resolve) => (notify = resolve));
      for (const e of await store.eventsAfter(taskId, seen)) {
        seen = e.seq;
        if ("statusUpdate" in e.response && isSettled(e.response.statusUpdate.status.state)) return;
      }
      await noticed;
    }
  } finally {
    unwatch();
  }
}
