import type { AgentExecutor, ExecutionEvents, ExecutionOutcome } from "../executors/executor";
import { A2AError } from "../protocol/errors";
import type { StreamItem } from "../protocol/request-handler";
import type { Message, StreamResponse, Task, TaskStatus } from "../protocol/types";
import { isSettled, isTerminal } from "../protocol/types";
import { accumulate, agentMessage, capParts } from "./artifacts";
import { now } from "./clock";
import type { EventStream } from "./event-stream";
import type { TaskStore } from "./task-store";

export interface TaskRunnerOptions {
  /** Tasks executing at once. */
  maxConcurrent: number;
  /** Tasks allowed to wait (SUBMITTED) for a slot; beyond this new tasks are refused. */
  maxQueued: number;
  /** Earlier messages of the context handed to the executor. */
  historyMessages: number;
  /** A task still running after this long is stopped and ends FAILED (default: none). */
  deadlineMs?: number;
  /** Artifact text beyond this many bytes is cut, the executor stopped, and the task marked truncated. */
  outputCapBytes?: number;
}

/** Hears every committed task event (push notifications). */
export type EventListener = (taskId: string, item: StreamItem) => void;

interface Job {
  /** The live task: status, history, and artifacts as streamed so far. */
  task: Task;
  /** Continues a task a previous process started (restart recovery). */
  resumed: boolean;
  /** Why the executor was stopped by the runner itself, if it was. */
  stopped?: "deadline" | "output-cap";
  outputBytes: number;
  message: Message;
  caller: string;
  /** Made on first use: most tasks are never canceled, and an echo never looks at its signal. */
  abort?: AbortController;
  cancelReason?: string;
  /** Number of the last event emitted (committed or not). */
  seq: number;
  subscribers: Set<EventStream>;
  /** Events emitted but not yet committed (published once they are), with their commit. */
  unpublished: { seq: number; response: StreamResponse; committed: Promise<void> }[];
  /** Subscribers that stay until a terminal state (they subscribed while the task waited for input). */
  untilTerminal: Set<EventStream>;
  settled: Promise<Task>;
  resolve(task: Task): void;
  reject(err: unknown): void;
}

function abortOf(job: Job): AbortController {
  return (job.abort ??= new AbortController());
}

/**
 * Owns the life of running tasks: a bounded number execute at once, the rest wait in order. Everything that
 * happens to a task is a numbered event: stored in SQLite with its task, and handed to live subscribers only
 * once committed, so what a subscriber saw is always what a reconnecting one can replay. The executor's
 * outcome alone decides a task's final state, written once, here; no HTTP timer ever touches a task.
 */
export class TaskRunner {
  private readonly jobs = new Map<string, Job>();
  private readonly queue: Job[] = [];
  private running = 0;
  private accepting = true;
  private listener: EventListener | undefined;
  private readonly replies = new WeakMap<Task, Message>();
  /** Subscribers of tasks waiting for input: nothing runs those, so they wait here for the next turn. */
  private readonly parked = new Map<string, Set<EventStream>>();

  constructor(
    private readonly store: TaskStore,
    private readonly executor: AgentExecutor,
    private readonly options: TaskRunnerOptions,
  ) {}

  get executorKind(): string {
    return this.executor.kind;
  }

  /** Registers the one listener of committed events (the push dispatcher). */
  onEvent(listener: EventListener): void {
    this.listener = listener;
  }

  /** Refuses a message the executor cannot take, before a task exists for it. */
  check(message: Message): void {
    const refusal = this.executor.check?.(message);
    if (refusal) throw refusal;
  }

  /** Throws (before anything is committed) when the node cannot take another task. */
  assertCapacity(): void {
    if (!this.accepting) throw A2AError.busy("this node is shutting down; retry against it later or use another peer");
    if (this.running >= this.options.maxConcurrent && this.queue.length >= this.options.maxQueued)
      throw A2AError.busy(`this node is at capacity (${this.running} tasks running, ${this.queue.length} waiting); retry later`);
  }

  /**
   * Runs (or queues) a task already recorded as SUBMITTED (or interrupted, for a follow-up message).
   * `lastSeq` is the number of its last stored event. Resolves when the task settles.
   */
  start(task: Task, message: Message, caller: string, lastSeq = 0, resumed = false): Promise<Task> {
    let resolve!: (t: Task) => void;
    let reject!: (err: unknown) => void;
    const settled = new Promise<Task>((res, rej) => {
      resolve = res;
      reject = rej;
    });
    settled.catch(() => {}); // a waiter may never come; the failure is logged by record()
    const job: Job = { task, message, caller, seq: lastSeq, subscribers: new Set(), unpublished: [], untilTerminal: new Set(), settled, resolve, reject, outputBytes: 0, resumed };
    // Subscribers that were waiting on this (interrupted) task follow it again now.
    const parked = this.parked.get(task.id);
    if (parked) {
      for (const s of parked) {
        job.subscribers.add(s);
        job.untilTerminal.add(s);
      }
      this.parked.delete(task.id);
    }
    this.jobs.set(task.id, job);
    if (this.running < this.options.maxConcurrent) void this.run(job);
    else this.queue.push(job);
    return settled;
  }

  /** The promise of a task this runner is working on, if it is. */
  settledOf(taskId: string): Promise<Task> | undefined {
    return this.jobs.get(taskId)?.settled;
  }

  /** The Message an executor answered a settled task with (SendMessage returns it instead of the Task). */
  replyOf(task: Task): Message | undefined {
    return this.replies.get(task);
  }

  /**
   * Adds a subscriber to a task this runner is working on; it receives every event committed from now on.
   * Returns false if the task is not running here (it is settled, or waits for input).
   */
  subscribe(taskId: string, caller: string, stream: EventStream): boolean {
    const job = this.jobs.get(taskId);
    if (!job || job.caller !== caller) return false;
    job.subscribers.add(stream);
    return true;
  }

  /** Keeps a subscriber of a task that waits for input until the task runs again and ends. */
  park(taskId: string, stream: EventStream): void {
    let set = this.parked.get(taskId);
    if (!set) this.parked.set(taskId, (set = new Set()));
    set.add(stream);
  }

  unsubscribe(taskId: string, stream: EventStream): void {
    const job = this.jobs.get(taskId);
    job?.subscribers.delete(stream);
    job?.untilTerminal.delete(stream);
    const parked = this.parked.get(taskId);
    if (parked?.delete(stream) && parked.size === 0) this.parked.delete(taskId);
  }

  /** Stops a running or queued task; resolves with its final (CANCELED) state, or undefined if not ours. */
  cancel(taskId: string, reason: string): Promise<Task> | undefined {
    const job = this.jobs.get(taskId);
    if (!job) return undefined;
    job.cancelReason = reason;
    const queued = this.queue.indexOf(job);
    if (queued !== -1) {
      this.queue.splice(queued, 1);
      void this.record(job, { state: "TASK_STATE_CANCELED", message: reason });
    } else abortOf(job).abort(new Error(reason));
    return job.settled;
  }

  /**
   * Tasks a previous run of the node left SUBMITTED or WORKING: each is run again, re-attached, or ended
   * FAILED as interrupted, as its executor's `onRestart` says, so that every accepted task gets a recorded
   * end. A task that was already resumed twice is not tried again (it may be what brings the node down).
   */
  async recover(): Promise<{ resumed: number; failed: number }> {
    let resumed = 0;
    let failed = 0;
    const writes: Promise<void>[] = [];
    for (const t of this.store.unfinished()) {
      const snap = this.store.snapshot(t.id, t.owner);
      if (!snap) continue;
      const { task } = snap;
      const lastSeq = this.store.lastEventSeq(t.id);
      const policy = t.executor === this.executor.kind ? (this.executor.onRestart ?? "fail") : "fail";
      const restarts = Number(task.metadata?.["a2a-node/restarts"] ?? 0);
      const message = [...(task.history ?? [])].reverse().find((m) => m.role === "ROLE_USER");
      if (policy !== "fail" && restarts < 2 && message) {
        task.metadata = { ...task.metadata, "a2a-node/restarts": restarts + 1 };
        void this.store.finish(t.id, task.status, [], { "a2a-node/restarts": restarts + 1 });
        this.start(task, message, t.owner, lastSeq, policy === "reattach");
        resumed++;
        continue;
      }
      const why =
        policy === "fail"
          ? "interrupted: the node stopped before this task finished; send it again"
          : "interrupted: the node stopped while running this task, more than twice; not trying it again";
      const status: TaskStatus = { state: "TASK_STATE_FAILED", timestamp: now(), message: agentMessage(t.id, task.contextId, why) };
      failed++;
      writes.push(this.store.finish(t.id, status, []));
      writes.push(this.store.appendEvents(t.id, lastSeq + 1, [{ statusUpdate: { taskId: t.id, contextId: task.contextId, status } }], lastSeq + 1));
    }
    await Promise.all(writes);
    return { resumed, failed };
  }

  /**
   * Stops taking tasks, gives running ones `graceMs` to finish, then aborts the rest; each ends in a recorded
   * state (queued and aborted tasks FAILED, saying the node stopped).
   */
  async shutdown(graceMs: number): Promise<void> {
    this.accepting = false;
    for (const job of this.queue.splice(0))
      void this.record(job, { state: "TASK_STATE_FAILED", message: "interrupted: the node shut down before this task started" });
    const pending = [...this.jobs.values()].map((j) => j.settled);
    if (pending.length === 0) return;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const grace = new Promise<void>((r) => (timer = setTimeout(r, graceMs)));
    await Promise.race([Promise.allSettled(pending), grace]);
    clearTimeout(timer);
    for (const job of this.jobs.values()) abortOf(job).abort(new Error("node shutting down"));
    await Promise.allSettled([...this.jobs.values()].map((j) => j.settled));
  }

  private async run(job: Job): Promise<void> {
    this.running++;
    const { task } = job;
    try {
      const working: TaskStatus = { state: "TASK_STATE_WORKING", timestamp: now() };
      task.status = working;
      // Not awaited: it commits with the next group, and if the task finishes first the writes merge.
      void this.store.setStatus(task.id, working);
      this.emit(job, { statusUpdate: { taskId: task.id, contextId: task.contextId, status: working } }, true);
      let outcome: ExecutionOutcome;
      const deadline = this.options.deadlineMs
        ? setTimeout(() => {
            job.stopped = "deadline";
            abortOf(job).abort(new Error("deadline"));
          }, this.options.deadlineMs)
        : undefined;
      try {
        const history = () =>
          this.store
            .contextHistory(task.contextId, job.caller, this.options.historyMessages + 1)
            .filter((m) => m.messageId !== job.message.messageId);
        outcome = await this.executor.execute({
          taskId: task.id,
          contextId: task.contextId,
          message: job.message,
          history,
          caller: job.caller,
          get signal() {
            return abortOf(job).signal;
          },
          events: this.eventsFor(job),
          metadata: { ...task.metadata },
          resumed: job.resumed,
        });
      } catch (err) {
        outcome = { state: "TASK_STATE_FAILED", message: `executor ${this.executor.kind} failed: ${(err as Error).message}` };
      } finally {
        clearTimeout(deadline);
      }
      if (job.stopped === "output-cap") {
        outcome = {
          state: "TASK_STATE_COMPLETED",
          message: `output cut at ${this.options.outputCapBytes} bytes (this node's output cap)`,
          metadata: { ...outcome.metadata, truncated: true, outputCapBytes: this.options.outputCapBytes },
        };
      } else if (job.stopped === "deadline") {
        outcome = { state: "TASK_STATE_FAILED", message: `stopped: the task ran longer than this node's deadline of ${Math.round((this.options.deadlineMs ?? 0) / 1000)} s` };
      } else if (job.abort?.signal.aborted) {
        outcome = job.cancelReason
          ? { state: "TASK_STATE_CANCELED", message: job.cancelReason }
          : { state: "TASK_STATE_FAILED", message: "interrupted: the node shut down while this task was running" };
      }
      await this.record(job, outcome);
    } finally {
      this.running--;
      const next = this.queue.shift();
      if (next) void this.run(next);
    }
  }

  /** The sink an executor reports through; events after the task settled are ignored. */
  private eventsFor(job: Job): ExecutionEvents {
    const { task } = job;
    return {
      progress: (text, metadata) => {
        if (!this.jobs.has(task.id)) return;
        const status: TaskStatus = { state: "TASK_STATE_WORKING", timestamp: now(), message: agentMessage(task.id, task.contextId, text) };
        this.emit(job, { statusUpdate: { taskId: task.id, contextId: task.contextId, status, ...(metadata ? { metadata } : {}) } });
      },
      artifact: (artifact, options = {}) => {
        if (!this.jobs.has(task.id) || job.stopped) return;
        let lastChunk = options.lastChunk === true;
        const cap = this.options.outputCapBytes;
        if (cap !== undefined) {
          const cut = capParts(artifact, cap - job.outputBytes);
          job.outputBytes += cut.bytes;
          if (cut.over) {
            artifact = cut.artifact;
            lastChunk = true;
            job.stopped = "output-cap";
            abortOf(job).abort(new Error("output cap"));
          }
        }
        task.artifacts = accumulate(task.artifacts ?? [], artifact, options.append === true);
        const update = { taskId: task.id, contextId: task.contextId, artifact, ...(options.append ? { append: true } : {}), ...(lastChunk ? { lastChunk: true } : {}) };
        this.emit(job, { artifactUpdate: update });
      },
      note: (metadata) => {
        if (!this.jobs.has(task.id)) return;
        task.metadata = { ...task.metadata, ...metadata };
        void this.store.finish(task.id, task.status, [], metadata);
      },
    };
  }

  /**
   * Numbers an event, has it stored with the next group commit, and hands it to subscribers once committed.
   * `rowUpdated`: the task's row is being written to reflect this event too.
   */
  private emit(job: Job, response: StreamResponse, rowUpdated = false): Promise<void> {
    const seq = ++job.seq;
    const committed = this.store.appendEvents(job.task.id, seq, [response], rowUpdated ? seq : undefined);
    job.unpublished.push({ seq, response, committed });
    if (job.unpublished.length === 1) this.publishOnCommit(job, committed);
    return committed;
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
    if (status && isSettled(status) && item.seq === job.seq) {
      for (const s of job.subscribers) {
        if (!isTerminal(status) && job.untilTerminal.has(s)) this.park(job.task.id, s);
        else s.end();
      }
      job.subscribers.clear();
      job.untilTerminal.clear();
    }
  }

  /** Writes the outcome once; resolves `settled` after it is committed (rejects if it could not be). */
  private async record(job: Job, outcome: ExecutionOutcome): Promise<void> {
    const { task } = job;
    const status: TaskStatus = { state: outcome.state, timestamp: now() };
    const replyText = outcome.message;
    if (outcome.reply) {
      const reply = { ...outcome.reply, taskId: task.id, contextId: task.contextId };
      this.replies.set(task, reply);
      status.message = reply;
    } else if (replyText) status.message = agentMessage(task.id, task.contextId, replyText);
    for (const a of outcome.artifacts ?? []) {
      task.artifacts = accumulate(task.artifacts ?? [], a, false);
      void this.emit(job, { artifactUpdate: { taskId: task.id, contextId: task.contextId, artifact: a, lastChunk: true } });
    }
    task.status = status;
    if (status.message) task.history = [...(task.history ?? []), status.message];
    if (outcome.metadata) task.metadata = { ...task.metadata, ...outcome.metadata };
    const finalEvent: StreamResponse = { statusUpdate: { taskId: task.id, contextId: task.contextId, status } };
    try {
      // Both writes join the same group commit, so awaiting one awaits both.
      void this.store.finish(task.id, status, task.artifacts ?? [], outcome.metadata);
      await this.emit(job, finalEvent, true);
    } catch (err) {
      // The store itself failed (disk full, database gone): nothing can be recorded, so say so loudly.
      console.error(`a2a-node: could not record the outcome of task ${task.id}: ${(err as Error).message}`);
      for (const s of job.subscribers) s.fail(A2AError.internal("the node could not record this task's outcome"));
      this.jobs.delete(task.id);
      job.reject(err);
      return;
    }
    this.jobs.delete(task.id);
    job.resolve(task);
  }
}
