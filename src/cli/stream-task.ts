import { RemoteError } from "../client/peer-client";
import { isOutsidePeer } from "../peers/peer-registry";
import type { Message, StreamResponse, Task } from "../protocol/types";
import { isSettled } from "../protocol/types";
import { CliError, ExitCode } from "./errors";
import { answeredStatus, applyItem, FollowBroken, followTask, type FollowReason } from "./follow-task";
import { ProgressLine } from "./progress";
import { otherTaskNote, partsText, shortState, statusNote } from "./render-task";
import type { ClientSession } from "./client-session";
import { finishWait, lostPeer, type WaitReport } from "./wait-report";

/**
 * `send --stream`: SendStreamingMessage, printing the answer's text as it arrives (stdout) and the agent's
 * progress (stderr). If the stream breaks off before the task settles, the wait goes on over
 * SubscribeToTask or GetTask (printing only text not yet shown); if the peer is gone, the task id and the
 * command to follow it are given.
 */
export async function streamTask(
  report: WaitReport,
  message: Message,
  tooLarge: (err: unknown) => CliError | undefined,
): Promise<number> {
  const { io, session } = report;
  const outside = session.target.peer !== undefined && isOutsidePeer(session.target.peer);
  const interrupt = io.interruptSignal;
  const progress = ProgressLine.start(io, session.target.label, report.json);
  const printer = new AnswerPrinter(report, progress);
  const deadline = Date.now() + report.timeoutS * 1000;
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(), report.timeoutS * 1000);
  const onInterrupt = () => abort.abort();
  if (interrupt?.aborted) abort.abort();
  interrupt?.addEventListener("abort", onInterrupt, { once: true });
  const stopped = (): FollowReason | undefined =>
    interrupt?.aborted ? "interrupted" : abort.signal.aborted ? "timeout" : undefined;
  let task: Task | undefined;
  /** The task as the stream opened with it, while no update has come since. */
  let opening: Task | undefined;
  let reason: FollowReason | undefined;
  try {
    try {
      for await (const item of session.client.sendStreamingMessage({ message }, abort.signal)) {
        if (report.json) io.stdout.write(`${JSON.stringify(item)}\n`);
        if ("message" in item && !task) {
          progress.stop();
          if (!report.json) io.stdout.write(`${partsText(item.message.parts)}\n`);
          return ExitCode.Ok;
        }
        if (!task) {
          const first = taskOfFirst(item);
          if (!first) continue;
          report.accepted?.(first.id);
          if (!report.json) {
            progress.print(`task ${first.id} accepted by ${session.target.label}`);
            const other = otherTaskNote(message.taskId, first, session.target.label);
            if (other) progress.print(other);
          }
          // What the task already held (a task answered after a question) was shown when it was asked.
          task = first;
          opening = task;
          printer.known(task);
          if ("task" in item) continue;
          // A stream that skipped the Task (Hermes's own A2A server, for a task it ended at once) opens with
          // an update: it is also the task's first change.
        }
        task = applyItem(task, item);
        opening = undefined;
        printer.see(item, task);
        // Settled by an update, not by the opening Task: an answer to a task waiting for input opens with
        // the task still input-required.
        if ("statusUpdate" in item && isSettled(task.status.state)) {
          reason = "settled";
          break;
        }
      }
    } catch (err) {
      reason = stopped();
      if (!task) {
        progress.stop();
        if (reason)
          throw new CliError(
            `${reason === "interrupted" ? "stopped" : `gave up after ${report.timeoutS}s`} before ${session.target.label} said whether it took the task`,
            reason === "interrupted" ? ExitCode.Interrupted : ExitCode.Timeout,
            `see whether it did with 'a2a-node tasks list --agent ${report.agent}'`,
          );
        const large = tooLarge(err);
        if (large) throw large;
        return session.fail(err);
      }
      if (!reason && err instanceof RemoteError) {
        progress.stop();
        printer.end();
        return session.fail(err);
      }
    } finally {
      clearTimeout(timer);
      interrupt?.removeEventListener("abort", onInterrupt);
    }
    if (!task) {
      progress.stop();
      return session.fail(new Error("the peer's stream ended without a task"));
    }
    if (reason === "settled" && outside) task = await confirmed(session, task);
    if (!reason) {
      // The stream ended or broke before the task settled: keep following it another way.
      const end = await followTask(session, task, {
        deadline,
        interrupt,
        // An answer whose stream broke before any update: the question it answered is not the end.
        stale: message.taskId && opening ? answeredStatus(opening) : undefined,
        onItem: (item, t) => {
          if (report.json) io.stdout.write(`${JSON.stringify(item)}\n`);
          printer.see(item, t);
        },
      });
      task = end.task;
      reason = end.reason;
    }
    progress.stop();
    printer.end();
    return finishWait(report, task, reason);
  } catch (err) {
    progress.stop();
    printer.end();
    if (err instanceof FollowBroken) return lostPeer(report, err);
    return session.fail(err);
  }
}

/**
 * The task a stream's first item makes known: the Task the spec puts first, or, from a server that skips it,
 * the task an update is about (its id, its context, the status or artifact the update carries).
 */
function taskOfFirst(item: StreamResponse): Task | undefined {
  if ("task" in item) return item.task;
  if ("statusUpdate" in item) {
    const u = item.statusUpdate;
    return { id: u.taskId, contextId: u.contextId, status: { state: "TASK_STATE_SUBMITTED" } };
  }
  if ("artifactUpdate" in item) {
    const u = item.artifactUpdate;
    return { id: u.taskId, contextId: u.contextId, status: { state: "TASK_STATE_WORKING" } };
  }
  return undefined;
}

/**
 * The settled task as the peer records it. A peer outside the fleet may stream something else than it
 * keeps: Hermes's own A2A server streams its agent's raw reply, so a question (a reply starting
 * "[INPUT_REQUIRED]") streams as COMPLETED while GetTask says INPUT_REQUIRED. One GetTask at the end settles
 * it; if that fails, what the stream said stands. Fleet peers stream what they store, and are not asked.
 */
async function confirmed(session: ClientSession, task: Task): Promise<Task> {
  try {
    const stored = await session.client.getTask({ id: task.id });
    return stored.status.state === task.status.state ? task : stored;
  } catch {
    return task;
  }
}

/**
 * Prints each artifact's text once, as it grows: appended chunks as they come, and of a replacement (an
 * agent's final answer after streamed narration, a whole task after a reconnect) only what the reader has
 * not seen yet. Status notes go to stderr as "[agent] note".
 */
class AnswerPrinter {
  /** Each artifact's text as printed so far. */
  private readonly shown = new Map<string, string>();
  private atLineStart = true;
  /** Something of the answer was printed. */
  private printed = false;
  private readonly sharedTerminal: boolean;

  constructor(
    private readonly report: WaitReport,
    private readonly progress: ProgressLine,
  ) {
    // Answer and progress line on one screen: the line is shown only between lines of the answer.
    this.sharedTerminal = report.io.tty?.stdout === true && progress.enabled;
  }

  see(item: StreamResponse, task: Task): void {
    this.progress.update(shortState(task.status.state), statusNote(task));
    if (this.report.json) return;
    if ("artifactUpdate" in item) {
      const { artifact, append } = item.artifactUpdate;
      this.text(artifact.artifactId, partsText(artifact.parts.filter((p) => p.text !== undefined)), append === true);
    } else if ("task" in item) {
      for (const a of item.task.artifacts ?? [])
        this.text(a.artifactId, partsText(a.parts.filter((p) => p.text !== undefined)), false);
    } else if ("statusUpdate" in item) {
      const note = item.statusUpdate.status.message ? partsText(item.statusUpdate.status.message.parts) : "";
      if (note && !isSettled(item.statusUpdate.status.state)) {
        if (this.sharedTerminal && !this.atLineStart) this.write("\n");
        this.progress.print(`[${this.report.session.target.peer?.name ?? this.report.agent}] ${note}`);
      }
    }
  }

  /** Takes the task's artifacts as already shown. */
  known(task: Task): void {
    this.progress.update(shortState(task.status.state), statusNote(task));
    for (const a of task.artifacts ?? [])
      this.shown.set(a.artifactId, partsText(a.parts.filter((p) => p.text !== undefined)));
  }

  /** Ends the answer with a newline, so what follows starts on a line of its own. */
  end(): void {
    if (!this.report.json && !this.atLineStart) this.write("\n");
  }

  private text(id: string, t: string, append: boolean): void {
    const before = this.shown.get(id);
    let fresh =
      append || before === undefined
        ? t
        : before.endsWith(t)
          ? ""
          : t.startsWith(before)
            ? t.slice(before.length)
            : `\n${t}`;
    this.shown.set(id, append ? (before ?? "") + t : t);
    // The answer as printed starts with its text: a paragraph break the agent put between narration shown
    // before (when the question was asked) and the rest does not open it with blank lines.
    if (!this.printed) fresh = fresh.replace(/^\n+/, "");
    if (fresh) this.write(fresh);
  }

  private write(text: string): void {
    this.printed = true;
    if (this.sharedTerminal) this.progress.hide();
    this.report.io.stdout.write(text);
    this.atLineStart = text.endsWith("\n");
    if (this.sharedTerminal && this.atLineStart) this.progress.show();
  }
}
