import type { ExecutionOutcome } from "../executors/executor";
import type { Artifact, Message } from "../protocol/types";
import { agentMessage, ArtifactSizes, capParts, historyBytes, messageBytes } from "./artifacts";
import { stop, type Job } from "./job";

/** The node's limits on what an execution makes. */
export interface OutputLimitOptions {
  /** Artifact text beyond this many bytes is cut, the executor stopped, and the task marked truncated. */
  outputCapBytes?: number;
  /**
   * Bytes a task's artifacts may hold, every part and chunk counted (see partBytes): output past it is not
   * kept, the executor is stopped and the task ends FAILED saying so.
   */
  maxArtifactBytes?: number;
  /**
   * Messages a task's history may hold. A question that would leave no room for its answer and the task's
   * final message ends the task FAILED instead (callers' messages are checked by the tasks service).
   */
  maxTaskMessages?: number;
  /** Parts an agent's reply may have; a reply with more ends the task FAILED. */
  maxMessageParts?: number;
  /**
   * Bytes a task may hold, its messages and artifacts counted as partBytes counts them (max_task_bytes): an
   * agent's question, artifact or outcome past it ends the task FAILED (callers' messages are checked by the
   * tasks service).
   */
  maxTaskBytes?: number;
}

/**
 * What an execution may add to its task: streamed artifacts cut at the output cap, and artifacts, questions and
 * outcomes held to max_artifact_bytes, max_task_messages, max_message_parts and max_task_bytes. Output past a
 * limit is not kept: the execution is stopped and the task ends FAILED saying which limit (see stopOverLimit).
 * Callers' own messages are checked by the tasks service before they are recorded.
 */
export class OutputLimits {
  constructor(private readonly options: OutputLimitOptions) {}

  get outputCapBytes(): number | undefined {
    return this.options.outputCapBytes;
  }

  /**
   * A streamed artifact event as it may be kept: cut at the output cap (`cut`: the execution is stopped and this
   * chunk is the last), or undefined when it would pass max_artifact_bytes or max_task_bytes (the execution is
   * stopped, and nothing of the event is kept).
   */
  streamed(job: Job, artifact: Artifact, append: boolean): { artifact: Artifact; cut: boolean } | undefined {
    let cutHere = false;
    const cap = this.options.outputCapBytes;
    if (cap !== undefined) {
      const cut = capParts(artifact, cap - job.outputBytes);
      job.outputBytes += cut.bytes;
      if (cut.over) {
        artifact = cut.artifact;
        cutHere = true;
        job.stopped = "output-cap";
        stop(job, "output-cap", "output cap");
      }
    }
    const maxBytes = this.options.maxArtifactBytes;
    if (maxBytes !== undefined || this.options.maxTaskBytes !== undefined) {
      const sizes = (job.artifactSizes ??= new ArtifactSizes(job.task.artifacts));
      const total = sizes.after(artifact, append);
      // Not kept: what is stored stays within the limit, and the task ends FAILED saying so.
      if (maxBytes !== undefined && total > maxBytes) {
        stopOverLimit(job, `${artifactsOver(total, maxBytes)}; the artifact event that passed it was not kept`);
        return undefined;
      }
      const grown = this.taskBytesOver(job, total - sizes.total);
      if (grown) {
        stopOverLimit(job, `the artifact event ${grown}; it was not kept`);
        return undefined;
      }
      sizes.add(artifact, append);
    }
    return { artifact, cut: cutHere };
  }

  /**
   * Why the agent's question cannot be asked (no room for it, its answer and the task's final message, or its
   * bytes pass max_task_bytes), or undefined, its bytes then counted.
   */
  question(job: Job, question: Message): string | undefined {
    const maxMessages = this.options.maxTaskMessages;
    const held = job.task.history?.length ?? 0;
    // Room for the question, its answer and the task's final message, or the question is not asked.
    if (maxMessages !== undefined && held + 3 > maxMessages)
      return `the agent asked for input, but the task holds ${held} messages: the question, its answer and the final message would pass this node's limit of ${maxMessages} per task (max_task_messages)`;
    const grown = this.taskBytesOver(job, messageBytes(question));
    if (grown) return `the agent's question ${grown}`;
    this.counted(job, question);
    return undefined;
  }

  /** Counts a message added to the task's history (an answer), once its bytes are being counted. */
  counted(job: Job, message: Message): void {
    if (job.historyBytes !== undefined) job.historyBytes += messageBytes(message);
  }

  /**
   * output_cap applies to artifacts an executor returns whole as it does to streamed ones: their text past
   * what the cap leaves (after what was streamed) is cut, and the task is marked truncated. The executor's
   * state and reply are kept; without a reply, the status message says the output was cut.
   */
  capOutcome(job: Job, outcome: ExecutionOutcome): ExecutionOutcome {
    const cap = this.options.outputCapBytes;
    if (cap === undefined || !outcome.artifacts?.length || job.stopped) return outcome;
    let over = false;
    const artifacts = outcome.artifacts.map((a) => {
      const cut = capParts(a, cap - job.outputBytes);
      job.outputBytes += cut.bytes;
      over ||= cut.over;
      return cut.artifact;
    });
    if (!over) return outcome;
    const capped: ExecutionOutcome = {
      ...outcome,
      artifacts,
      metadata: { ...outcome.metadata, truncated: true, outputCapBytes: cap },
    };
    if (!outcome.reply) capped.message = `output cut at ${cap} bytes (this node's output cap)`;
    return capped;
  }

  /**
   * Why an outcome cannot be recorded as the executor gave it: its artifacts would pass max_artifact_bytes, or
   * its reply has more parts than max_message_parts. Undefined when it fits.
   */
  outcomeOverLimit(job: Job, outcome: ExecutionOutcome): string | undefined {
    const maxParts = this.options.maxMessageParts;
    const parts = outcome.reply?.parts?.length ?? 0;
    if (maxParts !== undefined && parts > maxParts)
      return `the agent's reply has ${parts} parts, more than this node's limit of ${maxParts} per message (max_message_parts); it was not kept`;
    const maxBytes = this.options.maxArtifactBytes;
    const maxTask = this.options.maxTaskBytes;
    if (maxBytes === undefined && maxTask === undefined) return undefined;
    const sizes = new ArtifactSizes(job.task.artifacts);
    for (const a of outcome.artifacts ?? []) sizes.add(a, false);
    if (maxBytes !== undefined && sizes.total > maxBytes) return artifactsOver(sizes.total, maxBytes);
    // What the outcome adds: its artifacts over those the task has, and its reply or status message.
    const message =
      outcome.reply ?? (outcome.message ? agentMessage(job.task.id, job.task.contextId, outcome.message) : undefined);
    const before = job.artifactSizes?.total ?? new ArtifactSizes(job.task.artifacts).total;
    const grown = this.taskBytesOver(job, sizes.total - before + (message ? messageBytes(message) : 0));
    if (grown) return `the agent's outcome ${grown}; it was not kept`;
    return undefined;
  }

  /**
   * With max_task_bytes, how adding `added` bytes would pass it ("would make the task hold N bytes, more than
   * ..."), or undefined when it fits. The history's bytes are counted on first use and kept up to date.
   */
  private taskBytesOver(job: Job, added: number): string | undefined {
    const max = this.options.maxTaskBytes;
    if (max === undefined) return undefined;
    job.historyBytes ??= historyBytes(job.task.history);
    const artifacts = job.artifactSizes?.total ?? (job.artifactSizes = new ArtifactSizes(job.task.artifacts)).total;
    const total = job.historyBytes + artifacts + added;
    if (total <= max) return undefined;
    return `would make the task hold ${total} bytes, more than this node's limit of ${max} per task (max_task_bytes)`;
  }
}

/** The executor's output passed one of the node's limits: it is stopped, and the task ends FAILED saying why. */
export function stopOverLimit(job: Job, reason: string): void {
  job.stopped = "limit";
  job.limitReason = reason;
  stop(job, "limit", reason);
}

function artifactsOver(total: number, max: number): string {
  return `the task's artifacts would hold ${total} bytes, more than this node's limit of ${max} (max_artifact_bytes)`;
}
