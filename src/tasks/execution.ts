import type { AgentExecutor, ExecutionOutcome } from "../executors/executor";
import type { Admission } from "./admission";
import { authRetryOf } from "./auth-retry";
import type { EventsSink } from "./events-sink";
import { abortOf, causeOf, stop, type Job } from "./job";
import { stoppedOutcome, type OutcomeWriter } from "./outcome-writer";
import type { OutputLimits } from "./output-limits";
import type { Questions } from "./questions";
import type { Shutdown } from "./shutdown";
import type { TaskStore } from "./task-store";

/**
 * The task's node state (shown in its metadata too): the A2A extensions activated for the message the task's
 * execution runs (see ExecutionRequest.extensions).
 */
export const EXTENSIONS_KEY = "a2a-node/extensions";

export interface ExecutionOptions {
  /** Earlier messages of the context handed to the executor. */
  historyMessages: number;
  /** A task still running after this long is stopped and ends FAILED (default: none). */
  deadlineMs?: number;
}

/** The runner's parts an execution goes through. */
export interface ExecutionParts {
  admission: Admission;
  limits: OutputLimits;
  outcomes: OutcomeWriter;
  questions: Questions;
  sink: EventsSink;
  shutdown: Shutdown;
}

/**
 * One execution of a task, from taking its slot to its recorded outcome: the executor is handed the message
 * (or, after AUTH_REQUIRED, the one to run again), its context's history and the events sink; the deadline
 * stops it; and what it returns becomes the outcome the node records: the node's own where the node stopped it
 * (a limit, the output cap, the deadline, a cancel), held to the limits otherwise. Its slot then goes to the next
 * queued task.
 */
export class Executions {
  constructor(
    private readonly store: TaskStore,
    private readonly executor: AgentExecutor,
    private readonly options: ExecutionOptions,
    private readonly parts: ExecutionParts,
  ) {}

  /** Gives back a job's slot and starts whoever may take it. */
  release(job: Job): void {
    this.parts.admission.release(job, (next) => void this.run(next));
  }

  async run(job: Job): Promise<void> {
    const { admission, limits, outcomes, questions, sink, shutdown } = this.parts;
    admission.acquire(job);
    const { task } = job;
    try {
      sink.setWorking(job);
      let outcome: ExecutionOutcome;
      const deadline = this.options.deadlineMs
        ? setTimeout(() => {
            job.stopped = "deadline";
            stop(job, "deadline", "deadline");
          }, this.options.deadlineMs)
        : undefined;
      const executing = performance.now();
      // A task whose last execution ended AUTH_REQUIRED runs that execution's message again.
      const retry = authRetryOf(task, job.state);
      const message = retry?.message ?? job.message;
      job.ran = message;
      try {
        const history = async () =>
          (
            await this.store.contextHistory(
              task.contextId,
              job.caller,
              this.options.historyMessages + 1 + (retry?.skip.size ?? 0),
            )
          ).filter((m) => m.messageId !== message.messageId && !retry?.skip.has(m.messageId));
        outcome = await this.executor.execute({
          taskId: task.id,
          contextId: task.contextId,
          message,
          history,
          caller: job.caller,
          get signal() {
            return abortOf(job).signal;
          },
          events: sink.for(job),
          metadata: { ...task.metadata },
          state: { ...job.state },
          // A resumed execution (after a restart) has what the task recorded.
          extensions: job.extensions ?? storedExtensions(job.state),
          resumed: job.resumed,
          input: (request) => questions.ask(job, request),
        });
      } catch (err) {
        outcome = {
          state: "TASK_STATE_FAILED",
          message: `executor ${this.executor.kind} failed: ${(err as Error).message}`,
        };
      } finally {
        clearTimeout(deadline);
        job.waiting?.detach();
        job.waiting = undefined;
        job.executorMs += performance.now() - executing;
      }
      const cause = causeOf(job);
      const stopped = stoppedOutcome(job, cause, outcome, {
        outputCapBytes: limits.outputCapBytes,
        deadlineMs: this.options.deadlineMs,
      });
      if (stopped) outcome = stopped;
      else {
        // Stopped by the node's shutdown.
        if (shutdown.leftForRestart(job)) return shutdown.detach(job);
        outcome = {
          state: "TASK_STATE_FAILED",
          message: "interrupted: the node shut down while this task was running",
        };
      }
      outcome = limits.capOutcome(job, outcome);
      // The node's own outcomes (a limit, the deadline, a cancel) are recorded as they are: only what the
      // executor made is held to the limits.
      const own = job.stopped === undefined && cause !== "canceled" && cause !== "shutdown";
      const over = own ? limits.outcomeOverLimit(job, outcome) : undefined;
      if (over) outcome = { state: "TASK_STATE_FAILED", message: `stopped: ${over}` };
      await outcomes.record(job, outcome);
    } finally {
      this.release(job);
    }
  }
}

function storedExtensions(state: Record<string, unknown>): string[] {
  const v = state[EXTENSIONS_KEY];
  return Array.isArray(v) ? v.filter((u): u is string => typeof u === "string") : [];
}
