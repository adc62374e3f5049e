import type { StreamItem, StreamResponse } from "../protocol/types";
import { isSettled, isTerminal } from "../protocol/types";
import type { EventStream } from "./event-stream";
import type { Job } from "./job";
import type { TaskStore } from "./task-store";

/** Hears every committed task event (push notifications). */
export type EventListener = (taskId: string, item: StreamItem) => void;

/**
 * A task's events on their way out: numbered, stored with the next group commit, and handed to subscribers
 * (and the one listener, push) only once committed, in order, so what a subscriber saw is always what a
 * reconnecting one can replay. Subscribers of a task that waits for input with nothing executing it wait here
 * ("parked") for its next execution.
 */
export class EventPublisher {
  listener: EventListener | undefined;
  private readonly parked = new Map<string, Set<EventStream>>();

  constructor(private readonly store: TaskStore) {}

  /** `rowUpdated`: the task's row is being written to reflect this event too. Resolves once committed. */
  emit(job: Job, response: StreamResponse, rowUpdated = false): Promise<void> {
    const seq = ++job.seq;
    const committed = this.store.record(job.task.id, {
      events: { firstSeq: seq, items: [response] },
      rowSeq: rowUpdated ? seq : undefined,
    });
    job.unpublished.push({ seq, response, committed });
    if (job.unpublished.length === 1) this.publishOnCommit(job, committed);
    return committed;
  }

  /** The parked subscribers of a task join its new execution, following it to its end. */
  adopt(job: Job): void {
    const parked = this.parked.get(job.task.id);
    if (!parked) return;
    for (const s of parked) {
      job.subscribers.add(s);
      job.untilTerminal.add(s);
    }
    this.parked.delete(job.task.id);
  }

  park(taskId: string, stream: EventStream): void {
    let set = this.parked.get(taskId);
    if (!set) this.parked.set(taskId, (set = new Set()));
    set.add(stream);
  }

  unsubscribe(job: Job | undefined, taskId: string, stream: EventStream): void {
    job?.subscribers.delete(stream);
    job?.untilTerminal.delete(stream);
    const parked = this.parked.get(taskId);
    if (parked?.delete(stream) && parked.size === 0) this.parked.delete(taskId);
  }

  /**
   * Events go out only once committed, in order. One callback per commit serves all of a job's events in it
   * (a task often starts, streams and ends within one commit); events of a later commit wait for theirs.
   */
  private publishOnCommit(job: Job, committed: Promise<void>): void {
    committed.then(
      () => {
        let n = 0;
        while (n < job.unpublished.length && job.unpublished[n].committed === committed) n++;
        const items = job.unpublished.splice(0, n);
        for (const { seq, response } of items) this.publish(job, { seq, response });
        if (job.unpublished.length) this.publishOnCommit(job, job.unpublished[0].committed);
      },
      () => void (job.unpublished = []),
    );
  }

  private publish(job: Job, item: StreamItem): void {
    for (const s of job.subscribers) s.push(item);
    this.listener?.(job.task.id, item);
    const status = "statusUpdate" in item.response ? item.response.statusUpdate.status.state : undefined;
    if (!status || !isSettled(status) || item.seq !== job.seq) return;
    // A stream ends at a settled state. One that subscribed to follow an interrupted task to its end stays:
    // with this execution while it waits for its answer, parked for the next execution otherwise.
    const live = !isTerminal(status) && !job.final;
    for (const s of job.subscribers) {
      if (isTerminal(status) || !job.untilTerminal.has(s)) {
        s.end();
        job.subscribers.delete(s);
        job.untilTerminal.delete(s);
      } else if (!live) this.park(job.task.id, s);
    }
    if (!live) {
      job.subscribers.clear();
      job.untilTerminal.clear();
    }
  }
}
