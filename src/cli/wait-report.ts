import type { Task, TaskStatus } from "../protocol/types";
import { explainFailure } from "../client/connect";
import { exitCodeOfFailure, type ClientSession } from "./client-session";
import { CliError, ExitCode } from "./errors";
import { FollowBroken, followTask, type FollowReason } from "./follow-task";
import type { Io } from "./io";
import { ProgressLine } from "./progress";
import { answerHint, artifactsText, exitCodeFor, shortState, statusLine, statusNote } from "./render-task";

/** How long --wait, --stream and status --wait wait unless --timeout says otherwise. */
export const DEFAULT_WAIT_SECONDS = 600;

/** What every wait (send --wait, send --stream, status --wait) reports at its end, and how. */
export interface WaitReport {
  io: Io;
  session: ClientSession;
  /** The --agent to name in the commands we suggest (the peer's name, or the URL as given). */
  agent: string;
  json: boolean;
  timeoutS: number;
  /** Print the artifacts' text and the Task JSON (false when a stream already printed them). */
  printResult: boolean;
  /** Called once the peer has accepted the task (send: to remember which peer it went to). */
  accepted?(taskId: string): void;
  /**
   * send: the command's trace id, which the Task (or Message) it prints with --json carries as "traceId". A
   * stream's items do not: each is one of its four kinds, and a reader may tell them apart by their one key.
   */
  traceId?: string;
}

/** One line of --json output: `value` as it is, with the command's trace id beside its fields when given. */
export function jsonLine(value: object, traceId?: string): string {
  return `${JSON.stringify(traceId ? { ...value, traceId } : value)}\n`;
}

/** The command that picks a wait up again. */
export const followUp = (agent: string, id: string) => `a2a-node status --agent ${agent} --task-id ${id} --wait`;

/**
 * Reports the end of a wait and returns the exit code: the task's (0 completed, 1 failed or rejected,
 * 6 input required, 7 canceled); 5 at --timeout and 130 on Ctrl-C, both saying how to follow the task up.
 */
export function finishWait(r: WaitReport, task: Task, reason: FollowReason): number {
  const { io } = r;
  if (r.json && r.printResult) io.stdout.write(jsonLine(task, r.traceId));
  if (reason === "timeout")
    throw new CliError(
      `gave up waiting after ${r.timeoutS}s; task ${task.id} is still ${shortState(task.status.state)}`,
      ExitCode.Timeout,
      `follow it with '${followUp(r.agent, task.id)}'`,
    );
  if (reason === "interrupted")
    throw new CliError(
      `stopped waiting; task ${task.id} goes on at ${r.session.target.label} (${shortState(task.status.state)})`,
      ExitCode.Interrupted,
      `follow it with '${followUp(r.agent, task.id)}', or cancel it with 'a2a-node cancel --agent ${r.agent} --task-id ${task.id}'`,
    );
  if (!r.json) {
    if (r.printResult) {
      const out = artifactsText(task);
      if (out) io.stdout.write(out.endsWith("\n") ? out : `${out}\n`);
    }
    io.stderr.write(`${statusLine(task, r.session.target.label)}\n`);
    const hint = answerHint(task, r.agent);
    if (hint) io.stderr.write(`${hint}\n`);
  }
  return exitCodeFor(task);
}

/** The peer went away mid-wait: say why, with the task id and how to follow it once the peer is back. */
export function lostPeer(r: WaitReport, broken: FollowBroken): never {
  if (r.json && r.printResult) r.io.stdout.write(jsonLine(broken.task, r.traceId));
  const why = explainFailure(broken.cause, r.session.target);
  throw new CliError(
    `${why.message}; task ${broken.task.id} was accepted (last seen ${shortState(broken.task.status.state)}) and may go on there`,
    exitCodeOfFailure(broken.cause, r.session.target),
    `once the peer is back, follow it with '${followUp(r.agent, broken.task.id)}'${why.hint ? `; meanwhile: ${why.hint}` : ""}`,
  );
}

/**
 * Waits for `task` with a progress line on a terminal, and reports its end (also for `status --wait`). `stale`:
 * a status the wait must not end on (see FollowOptions.stale).
 */
export async function waitAndReport(report: WaitReport, task: Task, stale?: TaskStatus): Promise<number> {
  const { io, session } = report;
  // Take Ctrl-C before anything shows that we wait: from here on it stops the wait, not the process.
  const interrupt = io.interruptSignal;
  const progress = ProgressLine.start(io, session.target.label, report.json);
  progress.update(shortState(task.status.state), statusNote(task));
  try {
    const end = await followTask(session, task, {
      deadline: Date.now() + report.timeoutS * 1000,
      interrupt,
      stale,
      onItem: (_item, t) => progress.update(shortState(t.status.state), statusNote(t)),
    });
    progress.stop();
    return finishWait(report, end.task, end.reason);
  } catch (err) {
    progress.stop();
    if (err instanceof FollowBroken) return lostPeer(report, err);
    return session.fail(err);
  }
}
