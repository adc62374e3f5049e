import type { Artifact, Message, TaskState } from "../protocol/types";

/**
 * What an executor reports while it works. Each call becomes a numbered task event, stored and streamed to
 * subscribers in order.
 */
export interface ExecutionEvents {
  /** Visible progress (tool use, a step): a WORKING status update carrying this text as an agent message. */
  progress(text: string, metadata?: Record<string, unknown>): void;
  /**
   * A piece of an artifact. `append`: add these parts to the artifact with this id (a streamed chunk);
   * `lastChunk`: the artifact is complete.
   */
  artifact(artifact: Artifact, options?: { append?: boolean; lastChunk?: boolean }): void;
  /**
   * Remembers something about this task in its metadata, committed at once (e.g. the id of a remote run, so
   * a restarted node can re-attach to it instead of starting it again).
   */
  note(metadata: Record<string, unknown>): void;
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
  history(): Message[];
  /** Certificate name of the peer that asked. */
  caller: string;
  /** Aborted when the task is canceled or the node shuts down; executors pass it to their I/O. */
  signal: AbortSignal;
  /** Where to report progress and streamed artifact chunks. */
  events: ExecutionEvents;
  /** The task's metadata so far (what earlier runs noted). */
  metadata: Record<string, unknown>;
  /** True when this run continues a task a previous process of the node had started (after a restart). */
  resumed: boolean;
}

/**
 * How a task ended, as the executor sees it. The runner records it once, as the task's final (or interrupted)
 * state; an executor never writes task state itself.
 */
export interface ExecutionOutcome {
  state: Extract<
    TaskState,
    "TASK_STATE_COMPLETED" | "TASK_STATE_FAILED" | "TASK_STATE_REJECTED" | "TASK_STATE_INPUT_REQUIRED" | "TASK_STATE_CANCELED"
  >;
  /** Human-readable status text (the reason for a failure, the question for input-required). */
  message?: string;
  /** Artifacts not already sent through events.artifact(). */
  artifacts?: Artifact[];
  /**
   * Answer with a Message instead of a task result (an agent replying directly): SendMessage then returns
   * {message}; the task is still recorded, COMPLETED.
   */
  reply?: Message;
  metadata?: Record<string, unknown>;
}

/** Whether what backs an executor (a model server) answers: GET /health/ready. */
export interface Readiness {
  ready: boolean;
  detail: string;
}

/** Runs tasks. Implementations are named for what backs them (EchoExecutor, OpenAiCompatibleExecutor). */
export interface AgentExecutor {
  /** Short name recorded with each task ("echo", "openai"). */
  readonly kind: string;
  execute(request: ExecutionRequest): Promise<ExecutionOutcome>;
  /** Refuses, before a task is created, a message this executor cannot take (e.g. files for a chat model). */
  check?(message: Message): import("../protocol/errors").A2AError | undefined;
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
