import type { ExecutionEvents } from "../executors/executor";
import type { TaskStatus } from "../protocol/types";
import { now } from "../clock";
import { accumulate, agentMessage } from "./artifacts";
import type { Job } from "./job";
import { notStored } from "./outcome-writer";
import type { OutputLimits } from "./output-limits";
import type { RunningJobs } from "./running-jobs";
import type { TaskStore } from "./task-store";

/**
 * What a running execution reports (progress, artifacts, notes to its node state) and its WORKING status, each
 * written with the task, emitted as an event, and watched (see RunningJobs.track). Nothing is written for a task
 * that lost a write or has settled.
 */
export class EventsSink {
  constructor(
    private readonly store: TaskStore,
    private readonly limits: OutputLimits,
    private readonly jobs: RunningJobs,
  ) {}

  /** Records the task WORKING (with `text` as its status message). */
  setWorking(job: Job, text?: string): void {
    if (job.lost !== undefined) return; // nothing more of this execution is stored (see RunningJobs.track)
    const { task } = job;
    const working: TaskStatus = { state: "TASK_STATE_WORKING", timestamp: now() };
    if (text) working.message = agentMessage(task.id, task.contextId, text);
    task.status = working;
    // Not awaited: it commits with the next group, and if the task finishes first the writes merge.
    void this.jobs.track(job, this.store.record(task.id, { status: working }));
    void this.jobs.emit(job, { statusUpdate: { taskId: task.id, contextId: task.contextId, status: working } }, true);
  }

  /** The sink an executor reports through; events after the task settled are ignored. */
  for(job: Job): ExecutionEvents {
    const { task } = job;
    return {
      progress: (text, metadata) => {
        if (!this.jobs.has(task.id) || job.waiting || job.lost !== undefined) return;
        const status: TaskStatus = {
          state: "TASK_STATE_WORKING",
          timestamp: now(),
          message: agentMessage(task.id, task.contextId, text),
        };
        // The task's status is the latest progress, for those who read it with GetTask rather than a stream.
        task.status = status;
        void this.jobs.track(job, this.store.record(task.id, { status }));
        void this.jobs.emit(
          job,
          { statusUpdate: { taskId: task.id, contextId: task.contextId, status, ...(metadata ? { metadata } : {}) } },
          true,
        );
      },
      artifact: (artifact, options = {}) => {
        if (!this.jobs.has(task.id) || job.stopped || job.lost !== undefined) return;
        const kept = this.limits.streamed(job, artifact, options.append === true);
        if (!kept) return;
        artifact = kept.artifact;
        const lastChunk = options.lastChunk === true || kept.cut;
        task.artifacts = accumulate(task.artifacts ?? [], artifact, options.append === true);
        const update = {
          taskId: task.id,
          contextId: task.contextId,
          artifact,
          ...(options.append ? { append: true } : {}),
          ...(lastChunk ? { lastChunk: true } : {}),
        };
        void this.jobs.emit(job, { artifactUpdate: update });
      },
      note: (state) => {
        if (!this.jobs.has(task.id)) return Promise.resolve();
        if (job.lost !== undefined) return Promise.reject(notStored(task.id, job.lost));
        // Read back from the node state only; the metadata shows it to the task's caller.
        job.state = { ...job.state, ...state };
        task.metadata = { ...task.metadata, ...state };
        return this.jobs.track(job, this.store.record(task.id, { state, metadata: state }));
      },
    };
  }
}
