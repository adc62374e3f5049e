import type { Artifact, Message, TaskState } from "../protocol/types";

/**
 * What an executor reports while it works. Each call becomes a numbered task event, stored and streamed to
 * subscribers in order.
 */
export interface ExecutionEvents {
  /**
   * Visible progress (tool use, a step): a WORKING status update carrying this text as an agent message, which
   * also becomes the task's status. Ignored while the execution waits for input (the question stays shown).
   */
  progress(text: string, metadata?: Record<string, unknown>): void;
  /**
   * A piece of an artifact. `append`: add these parts to the artifact with this id (a streamed chunk);
   * `lastChunk`: the artifact is complete.
   */
  artifact(artifact: Artifact, options?: { append?: boolean; lastChunk?: boolean }): void;
  /**
   * Remembers something about this task in the node's own state of it (ExecutionRequest.state), committed at
   * once (e.g. the id of a remote run, so a restarted node can re-attach to it instead of starting it again).
   * Kept apart from the task's metadata, which its caller writes: a later execution reads these keys from
   * `state` only. The same keys are shown in the task's metadata, for its caller to see, never read back from
   * there. Resolves once it is durable; an executor that must not go on before it is (a remote run's id)
   * awaits it.
   */
  note(state: Record<string, unknown>): Promise<void>;
}

/**
 * A question an execution asks in the middle of its work (a person's approval of a command, a missing
 * detail). The task is INPUT_REQUIRED while it waits; the execution itself goes on (its remote run, its open
 * stream), and the next message sent to the task is the answer.
 */
export interface InputRequest {
  /** The status message: everything a person needs to decide, in words. */
  text: string;
  /** Put on that status message's metadata, for programs (the choices, the command, ids). */
  metadata?: Record<string, unknown>;
  /**
   * Judges an answer before it is taken: a returned text refuses it (the caller gets -32602 with that text)
   * and the task keeps waiting for a better one.
   */
  check?(answer: Message): string | undefined;
  /**
   * Aborted when the question no longer stands (answered elsewhere, or timed out on the remote side): the
   * task goes back to WORKING, the signal's reason (an Error) is shown to whoever answers late, and input()
   * rejects with it.
   */
  signal?: AbortSignal;
}

/**
 * Why an execution's signal was aborted (the `cause` of the reason it carries). "unstored": the node could
 * not store the task (its creation, or part of what happened since), so its result could not be kept.
 * "limit": the execution's output passed one of the node's limits (max_artifact_bytes, max_task_messages,
 * max_message_parts); the task ends FAILED saying which.
 */
export type StopCause = "canceled" | "shutdown" | "deadline" | "output-cap" | "unstored" | "limit";

/**
 * The reason an execution's signal carries. On "shutdown" an executor with remote work that outlives the
 * node (onRestart "reattach") leaves that work running: the node picks it up again when it restarts.
 */
export class ExecutionStopped extends Error {
  constructor(
    readonly stopCause: StopCause,
    message: string,
  ) {
    super(message);
    this.name = "ExecutionStopped";
  }
}

/** The cause of an aborted execution, if it was aborted by the runner. */
export function stopCause(signal: AbortSignal): StopCause | undefined {
  return signal.aborted && signal.reason instanceof ExecutionStopped ? signal.reason.stopCause : undefined;
}

/** Everything an executor gets to do one task. */
export interface ExecutionRequest {
  taskId: string;
  contextId: string;
  /** The message that started (or continues) the task. */
  message: Message;
  /**
   * Earlier messages of the same context, oldest first, bounded by the node. A function, so executors that
   * do not use history (echo) cost no read.
   */
  history(): Promise<Message[]>;
  /** Certificate name of the peer that asked. */
  caller: string;
  /** Aborted when the task is canceled or the node shuts down; executors pass it to their I/O. */
  signal: AbortSignal;
  /** Where to report progress and streamed artifact chunks. */
  events: ExecutionEvents;
  /**
   * The task's metadata: what its caller sent (SendMessage's `metadata`) and what the node shows beside it. The
   * caller writes it, so nothing in it is the node's own: never take a run id, an approval or any other state
   * from here (see `state`).
   */
  metadata: Record<string, unknown>;
  /**
   * What earlier executions of this task noted (ExecutionEvents.note), and the node's own keys: the node's
   * state of the task, which no caller can write. Empty for a task's first execution.
   */
  state: Record<string, unknown>;
  /**
   * The A2A extensions activated for the message this execution runs: the URIs its request named in the
   * A2A-Extensions header that the card declares ([[extensions]] in config.toml). An executor that
   * implements one acts on it here (its data usually rides in message.metadata under the extension's URI).
   * Absent or empty: none.
   */
  extensions?: string[];
  /** True when this run continues a task a previous process of the node had started (after a restart). */
  resumed: boolean;
  /**
   * Asks a question and waits for the answer (see InputRequest): the task is INPUT_REQUIRED until the next
   * message arrives for it, which this resolves with. Rejects when the task is canceled, the node stops, or
   * the request's own signal withdraws the question. While it waits the task holds none of the node's
   * execution slots.
   */
  input(request: InputRequest): Promise<Message>;
}

/**
 * How a task ended, as the executor sees it. The runner records it once, as the task's final (or interrupted)
 * state; an executor never writes task state itself.
 */
export interface ExecutionOutcome {
  state: Extract<
    TaskState,
    | "TASK_STATE_COMPLETED"
    | "TASK_STATE_FAILED"
    | "TASK_STATE_REJECTED"
    | "TASK_STATE_INPUT_REQUIRED"
    | "TASK_STATE_AUTH_REQUIRED"
    | "TASK_STATE_CANCELED"
  >;
  /**
   * Human-readable status text (the reason for a failure, the question for input-required; for
   * auth-required: what refused which credential, and who can fix it). AUTH_REQUIRED: the backend refused the
   * node's credentials; the next message to the task runs this execution's message again (see
   * src/tasks/auth-retry.ts).
   */
  message?: string;
  /** Artifacts not already sent through events.artifact(). */
  artifacts?: Artifact[];
  /**
   * Answer with a Message instead of a task result (an agent replying directly): SendMessage then returns
   * {message}; the task is still recorded, COMPLETED.
   */
  reply?: Message;
  metadata?: Record<string, unknown>;
  /**
   * After a cancel: what became of the executor's remote work ("Hermes stopped run X", "still stopping"). The
   * task's status says the canceller's reason, then this.
   */
  stopNote?: string;
}

/** Whether what backs an executor (a model server) answers: GET /health/ready. */
export interface Readiness {
  ready: boolean;
  detail: string;
}

/**
 * Why an executor cannot take a message (see AgentExecutor.check): the request as sent (`invalid`, e.g. an
 * unknown skill), or a kind of content it cannot pass on (`content-type`). tasks/ raises it as its own refusal.
 */
export interface ExecutorRefusal {
  kind: "invalid" | "content-type";
  message: string;
}

export function refuse(kind: ExecutorRefusal["kind"], message: string): ExecutorRefusal {
  return { kind, message };
}

/** Runs tasks. Implementations are named for what backs them (EchoExecutor, OpenAiCompatibleExecutor). */
export interface AgentExecutor {
  /** Short name recorded with each task ("echo", "openai"). */
  readonly kind: string;
  execute(request: ExecutionRequest): Promise<ExecutionOutcome>;
  /**
   * Refuses, before anything is recorded, a message this executor cannot take (e.g. files for a chat model).
   * `task` is given when the message continues a task that waits for input and no execution of this process
   * is waiting for it (the node restarted since it asked): its `state` holds what the executor noted.
   */
  check?(message: Message, task?: { state: Record<string, unknown> }): ExecutorRefusal | undefined;
  /** Probes the backing service; absent means always ready. */
  ready?(signal: AbortSignal): Promise<Readiness>;
  /**
   * What happens to this executor's unfinished tasks when the node restarts after a crash: "rerun" runs them
   * again from their message, "reattach" runs them with `resumed` set (the executor picks up its remote run),
   * "fail" ends them FAILED as interrupted. Absent means "fail".
   */
  readonly onRestart?: "rerun" | "reattach" | "fail";
}

/** The text of a message: its text parts joined by newlines. */
export function messageText(message: Message): string {
  let out = "";
  for (const p of message.parts) {
    if (typeof p.text === "string") out = out ? `${out}\n${p.text}` : p.text;
  }
  return out;
}
