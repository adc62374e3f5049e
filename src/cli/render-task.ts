import type { Task } from "../protocol/types";
import { isTerminal } from "../protocol/types";
import { ExitCode } from "./errors";

/** "TASK_STATE_INPUT_REQUIRED" → "input-required": how people read states. */
export const shortState = (state: string): string =>
  state
    .replace(/^TASK_STATE_/, "")
    .toLowerCase()
    .replace(/_/g, "-");

export function partsText(
  parts: { text?: string; data?: unknown; url?: string; raw?: string; filename?: string }[],
): string {
  return parts
    .map((p) =>
      p.text !== undefined
        ? p.text
        : p.data !== undefined
          ? JSON.stringify(p.data)
          : p.url !== undefined
            ? `<file ${p.url}>`
            : `<${p.filename ?? "binary"}: ${p.raw?.length ?? 0} base64 chars>`,
    )
    .join("\n");
}

/** The status line: id, state, and the agent's status message if any. */
export function statusLine(task: Task, where: string): string {
  const msg = task.status.message ? `: ${partsText(task.status.message.parts)}` : "";
  return `task ${task.id} ${shortState(task.status.state)} (${where})${msg}`;
}

/**
 * For a task that waits for input: the command that answers it; for one that waits for authorization (the
 * agent's backend refused its credentials, which its operator supplies): how to retry or give up. Printed
 * after its status line.
 */
export function answerHint(task: Task, agent: string): string | undefined {
  if (task.status.state === "TASK_STATE_AUTH_REQUIRED")
    return (
      `the agent needs an authorization it cannot get by itself (its status says what). Once it is fixed there, retry with: ` +
      `a2a-node send --agent ${agent} --task-id ${task.id} --task "retry" --wait; or give up with: a2a-node cancel --agent ${agent} --task-id ${task.id}`
    );
  if (task.status.state !== "TASK_STATE_INPUT_REQUIRED") return undefined;
  return `answer it with: a2a-node send --agent ${agent} --task-id ${task.id} --task "YOUR ANSWER" --wait`;
}

/** The result a person (or a pipe) wants: the artifacts' text, one after another. */
export function artifactsText(task: Task): string {
  return (task.artifacts ?? []).map((a) => partsText(a.parts)).join("\n");
}

/** The agent's status text (a progress note, a question, a failure's reason), on one line. */
export function statusNote(task: Task): string | undefined {
  const m = task.status.message;
  return m ? partsText(m.parts).replace(/\s+/g, " ").trim() || undefined : undefined;
}

/**
 * Exit code for a task someone waited for: 0 completed, 6 waiting for input, 7 canceled, 1 failed or rejected.
 */
export function exitCodeFor(task: Task): number {
  const state = task.status.state;
  if (state === "TASK_STATE_COMPLETED") return ExitCode.Ok;
  if (state === "TASK_STATE_CANCELED") return ExitCode.Canceled;
  if (!isTerminal(state)) return ExitCode.NeedsInput;
  return ExitCode.Failure;
}

/**
 * A peer that took a message meant for task `asked` as another task (Hermes's own A2A server reads no
 * taskId: every message is a new task of its conversation). Undefined when it continued `asked`.
 */
export function otherTaskNote(asked: string | undefined, got: Task, where: string): string | undefined {
  if (asked === undefined || got.id === asked) return undefined;
  return `note: ${where} took the message as a new task ${got.id} in the same conversation (context ${got.contextId}), not as part of task ${asked}`;
}
