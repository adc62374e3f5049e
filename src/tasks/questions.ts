import type { InputRequest } from "../executors/executor";
import type { Message, Task, TaskStatus } from "../protocol/types";
import { agentMessage } from "./artifacts";
import { now } from "../clock";
import { deferred } from "../deferred";
import type { EventsSink } from "./events-sink";
import { abortOf, type Job, type Waiting } from "./job";
import type { TaskLifecycle } from "./lifecycle";
import { notStored } from "./outcome-writer";
import { stopOverLimit, type OutputLimits } from "./output-limits";
import { TaskRefusal } from "./refusal";
import type { RunningJobs } from "./running-jobs";
import type { TaskStore } from "./task-store";
import { reasonOf } from "../reason";

/** The execution slots questions give back while they wait, and take again when answered (see Admission). */
export interface QuestionSlots {
  acquire(job: Job): void;
  /** Gives the slot back, starting whoever may take it. */
  release(job: Job): void;
}

/**
 * An execution that stops half-way to ask its caller (input()): the task is INPUT_REQUIRED while the execution
 * waits, holding no slot, and the next message for the task is its answer. The question can be withdrawn by
 * the executor, or fail with the execution (canceled, stopped, shut down).
 */
export class Questions {
  constructor(
    private readonly store: TaskStore,
    private readonly limits: OutputLimits,
    private readonly lifecycle: TaskLifecycle | undefined,
    private readonly jobs: RunningJobs,
    private readonly sink: EventsSink,
    private readonly slots: QuestionSlots,
  ) {}

  /**
   * The execution asks a question: INPUT_REQUIRED is recorded and published (a blocking caller gets its answer
   * now), the execution's slot is given back, and the next message for the task resolves the returned promise.
   */
  ask(job: Job, request: InputRequest): Promise<Message> {
    const signal = abortOf(job).signal;
    if (signal.aborted) return Promise.reject(signal.reason);
    if (!this.jobs.get(job.task.id)) return Promise.reject(new Error("the task has ended"));
    if (job.waiting) return Promise.reject(new Error("this execution already waits for input"));
    if (request.signal?.aborted) return Promise.reject(request.signal.reason);
    const { task } = job;
    const question = agentMessage(task.id, task.contextId, request.text);
    if (request.metadata) question.metadata = request.metadata;
    const over = this.limits.question(job, question);
    if (over) {
      stopOverLimit(job, over);
      return Promise.reject(abortOf(job).signal.reason);
    }
    const status: TaskStatus = { state: "TASK_STATE_INPUT_REQUIRED", timestamp: now(), message: question };
    task.status = status;
    task.history = [...(task.history ?? []), question];
    job.withdrawn = undefined;
    const answered = deferred<Message>();
    // Time spent waiting for the answer is not the executor's: it is taken off its share when the wait ends.
    const asked = performance.now();
    answered.promise.then(
      () => void (job.executorMs -= performance.now() - asked),
      () => void (job.executorMs -= performance.now() - asked),
    );
    const onStop = () => {
      if (job.waiting !== waiting) return;
      job.waiting = undefined;
      waiting.detach();
      answered.reject(signal.reason);
    };
    const onWithdraw = () => {
      if (job.waiting !== waiting) return;
      job.waiting = undefined;
      waiting.detach();
      const reason = request.signal?.reason;
      job.withdrawn = reasonOf(reason ?? "the question was withdrawn");
      this.slots.acquire(job);
      this.sink.setWorking(job, `no longer waiting for an answer: ${job.withdrawn}`);
      answered.reject(reason ?? new Error(job.withdrawn));
    };
    const waiting: Waiting = {
      request,
      answered,
      detach: () => {
        signal.removeEventListener("abort", onStop);
        request.signal?.removeEventListener("abort", onWithdraw);
      },
    };
    job.waiting = waiting;
    signal.addEventListener("abort", onStop, { once: true });
    request.signal?.addEventListener("abort", onWithdraw, { once: true });
    void this.jobs.track(
      job,
      this.store.record(task.id, { status, history: status.message ? [status.message] : undefined }),
    );
    const committed = this.jobs.emit(
      job,
      { statusUpdate: { taskId: task.id, contextId: task.contextId, status } },
      true,
    );
    const turn = job.turn;
    job.turn = deferred();
    this.lifecycle?.waitingForInput(task, job.caller);
    committed.then(
      () => turn.resolve(job.task),
      (err) => turn.reject(notStored(task.id, err)),
    );
    this.slots.release(job);
    return answered.promise;
  }

  /**
   * Gives `message` to the execution waiting for this task's next message. Refuses, with nothing recorded, an
   * answer the question's check turns down. Returns the task as the answer left it (WORKING again, the answer
   * in its history: never the question it answered, which a caller would take for the task's state), the
   * sequence number of its last event before the answer, when the answer is durable, and the task's next
   * settled state after it.
   */
  answer(
    taskId: string,
    message: Message,
  ): { task: Task; committed: Promise<void>; settled: Promise<Task>; lastSeq: number } {
    const job = this.jobs.get(taskId);
    const waiting = job?.waiting;
    if (!job || !waiting) throw TaskRefusal.unsupported(`task ${taskId} is not waiting for input`);
    const why = waiting.request.check?.(message);
    if (why !== undefined) throw TaskRefusal.invalid(why);
    const { task } = job;
    const lastSeq = job.seq;
    task.history = [...(task.history ?? []), message];
    this.limits.counted(job, message);
    const committed = this.jobs.track(job, this.store.record(taskId, { history: [message] }));
    job.waiting = undefined;
    waiting.detach();
    this.slots.acquire(job);
    this.sink.setWorking(job);
    const after = {
      ...task,
      status: { ...task.status },
      history: [...task.history],
      artifacts: task.artifacts && [...task.artifacts],
    };
    const settled = job.turn.promise;
    this.lifecycle?.answered(task, job.caller);
    waiting.answered.resolve(message);
    return { task: after, committed, settled, lastSeq };
  }
}
