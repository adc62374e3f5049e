import type { InputRequest } from "../executors/executor";
import { ExecutionStopped, type StopCause } from "../executors/executor";
import type { Message, StreamResponse, Task } from "../protocol/types";
import type { ArtifactSizes } from "./artifacts";
import type { EventStream } from "./event-stream";
import { deferred, type Deferred } from "../deferred";

/** How a task is started (see TaskRunner.start). */
export interface StartOptions {
  /** The number of its last stored event (0 for a new task). */
  lastSeq?: number;
  /** It continues a task a previous process started (restart recovery). */
  resumed?: boolean;
  /**
   * The commit of the write that recorded it (the task's creation, the follow-up message), if not settled yet;
   * if it fails, the execution stops and the task does not end COMPLETED.
   */
  committed?: Promise<void>;
  /** The A2A extensions activated for the message it runs (undefined: those its state names). */
  extensions?: string[];
  /** Its node state as stored (see TaskChange.state): what earlier executions noted. */
  state?: Record<string, unknown>;
}

/** A question an execution waits on (see InputRequest). */
export interface Waiting {
  request: InputRequest;
  answered: Deferred<Message>;
  /** Stops listening to the task's and the request's signals. */
  detach(): void;
}

/** One execution of a task, from its start (or queueing) to its recorded outcome. */
export interface Job {
  /** The live task: status, history, and artifacts as streamed so far. */
  task: Task;
  /** Continues a task a previous process started (restart recovery). */
  resumed: boolean;
  /** Why the executor was stopped by the runner itself, if it was. */
  stopped?: "deadline" | "output-cap" | "limit";
  /** With stopped "limit": which of the node's limits the executor's output passed, said to the task's callers. */
  limitReason?: string;
  outputBytes: number;
  /** The bytes of the task's artifacts so far (see max_artifact_bytes), counted from the first artifact event. */
  artifactSizes?: ArtifactSizes;
  /** The bytes of the task's history (see max_task_bytes), counted when first needed and kept up to date since. */
  historyBytes?: number;
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
  /** The end of the execution: its outcome recorded (or, at shutdown, left as stored). */
  done: Deferred<Task>;
  /** The task's next settled state (interrupted or terminal): what a blocking SendMessage waits for. */
  turn: Deferred<Task>;
  /** Holds one of the runner's execution slots (a task waiting for input does not). */
  counted: boolean;
  /** The question the execution waits on, while it does. */
  waiting?: Waiting;
  /** Why the last question was withdrawn: a late answer hears it. */
  withdrawn?: string;
  /** The outcome is being recorded: the settled state published next ends this execution. */
  final?: boolean;
  /** Why a write of this task could not be stored, if one could not: the task then cannot end COMPLETED. */
  lost?: string;
  /** performance.now() when this runner took the task (accepted, answered after a restart, or resumed). */
  acceptedAt: number;
  /** Milliseconds the executor spent on the task, time waiting for an answer left out. */
  executorMs: number;
  /** Another process took the task over (this one's lease ran out): the execution stops writing nothing. */
  handedOver?: boolean;
  /** The message the executor was given (the job's own, or the one an AUTH_REQUIRED retry runs again). */
  ran?: Message;
  /** The A2A extensions activated for the message that started this execution (undefined: read the task's). */
  extensions?: string[];
  /** The task's node state (see TaskChange.state), as stored and as noted since. */
  state: Record<string, unknown>;
}

export function newJob(task: Task, message: Message, caller: string, options: StartOptions): Job {
  return {
    state: options.state ?? {},
    task,
    message,
    caller,
    seq: options.lastSeq ?? 0,
    subscribers: new Set(),
    unpublished: [],
    untilTerminal: new Set(),
    done: deferred(),
    turn: deferred(),
    outputBytes: 0,
    resumed: options.resumed ?? false,
    counted: false,
    acceptedAt: performance.now(),
    executorMs: 0,
    extensions: options.extensions,
  };
}

export function abortOf(job: Job): AbortController {
  return (job.abort ??= new AbortController());
}

/** Aborts the execution, saying why (executors read it with stopCause()). */
export function stop(job: Job, cause: StopCause, message: string): void {
  abortOf(job).abort(new ExecutionStopped(cause, message));
}

/** Why the execution was stopped, if the runner stopped it. */
export function causeOf(job: Job): StopCause | undefined {
  const signal = job.abort?.signal;
  return signal?.aborted && signal.reason instanceof ExecutionStopped ? signal.reason.stopCause : undefined;
}
