import { RemoteError } from "../client/a2a-client";
import type { Message, StreamResponse, Task } from "../protocol/types";
import { isSettled } from "../protocol/types";
import { CliError, ExitCode } from "./errors";
import { answeredStatus, applyItem, FollowBroken, followTask, type FollowReason } from "./follow-task";
import { ProgressLine } from "./progress";
import { partsText, shortState, statusNote } from "./render-task";
import { finishWait, lostPeer, type WaitReport } from "./wait-report";

/**
 * `send --stream`: SendStreamingMessage, printing the answer's text as it arrives (stdout) and the agent's
 * progress (stderr). If the stream breaks off before the task settles, the wait goes on over
 * SubscribeToTask or GetTask (printing only text not yet shown); if the peer is gone, the task id and the
 * command to follow it are given.
 */
export async function streamTask(report: WaitReport, message: Message, tooLarge: (err: unknown) => CliError | undefined): Promise<number> {
  const { io, session } = report;
  const interrupt = io.interruptSignal;
  const progress = ProgressLine.start(io, session.target.label, report.json);
  const printer = new AnswerPrinter(report, progress);
  const deadline = Date.now() + report.timeoutS * 1000;
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(), report.timeoutS * 1000);
  const onInterrupt = () => abort.abort();
  if (interrupt?.aborted) abort.abort();
  interrupt?.addEventListener("abort", onInterrupt, { once: true });
  const stopped = (): FollowReason | undefined => (interrupt?.aborted ? "interrupted" : abort.signal.aborted ? "timeout" : undefined);
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
          if (!("task" in item)) continue;
          if (!report.json) progress.print(`task ${item.task.id} accepted by ${session.target.label}`);
          // What the task already held (a task answered after a question) was shown when it was asked.
          task = item.task;
          opening = task;
          printer.known(task);
          continue;
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
      for (const a of item.task.artifacts ?? []) this.text(a.artifactId, partsText(a.parts.filter((p) => p.text !== undefined)), false);
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
    for (const a of task.artifacts ?? []) this.shown.set(a.artifactId, partsText(a.parts.filter((p) => p.text !== undefined)));
  }

  /** Ends the answer with a newline, so what follows starts on a line of its own. */
  end(): void {
    if (!this.report.json && !this.atLineStart) this.write("\n");
  }

  private text(id: string, t: string, append: boolean): void {
    const before = this.shown.get(id);
    let fresh = append || before === undefined ? t : before.endsWith(t) ? "" : t.startsWith(before) ? t.slice(before.length) : `\n${t}`;
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
