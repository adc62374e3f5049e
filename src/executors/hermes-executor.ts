import type { AgentExecutor, ExecutionOutcome, ExecutionRequest, Readiness } from "./executor";
import { messageText } from "./executor";
import { readNamedSse } from "./sse";

export interface HermesExecutorOptions {
  /** Base URL of a Hermes Agent API server, e.g. http://127.0.0.1:8642 */
  baseUrl: string;
  apiKey?: string;
  model?: string;
}

/** Task metadata keys this executor keeps (committed as soon as known, for re-attaching after a restart). */
export const RUN_KEY = "hermes/runId";
export const APPROVAL_KEY = "hermes/pendingApproval";
/** Characters of the answer already streamed when the run paused: the continuation appends to them. */
export const CHARS_KEY = "hermes/answerChars";

interface HermesEvent {
  type?: string;
  delta?: string;
  text?: string;
  content?: string;
  error?: string | { message?: string };
  message?: string;
  prompt?: string;
  approval_id?: string;
  id?: string;
  choices?: string[];
  tool?: string;
  name?: string;
  output?: string;
  [key: string]: unknown;
}

/**
 * Runs tasks on a Hermes Agent through its runs API: POST /v1/runs starts a run (the task id is the
 * Idempotency-Key, so a retried start never makes a second run), GET /v1/runs/{id}/events streams what the
 * agent does. Tokens become artifact chunks; tool and reasoning events become status updates without
 * tokens; an approval request pauses the task as INPUT_REQUIRED with the question, and the next message to
 * the task is the answer (POST /v1/runs/{id}/approval). Cancel stops the run (POST /v1/runs/{id}/stop). The
 * run id is noted in the task's metadata at once, so a node restarted mid-run re-attaches to it.
 */
export class HermesExecutor implements AgentExecutor {
  readonly kind = "hermes";
  readonly onRestart = "reattach";
  private readonly base: string;

  constructor(private readonly options: HermesExecutorOptions) {
    this.base = options.baseUrl.replace(/\/+$/, "");
  }

  async ready(signal: AbortSignal): Promise<Readiness> {
    const url = `${this.base}/health`;
    try {
      const res = await fetch(url, { headers: this.headers(), signal });
      return { ready: res.ok, detail: `${url} answered HTTP ${res.status}` };
    } catch (err) {
      return { ready: false, detail: `${url} is unreachable: ${(err as Error).message}` };
    }
  }

  async execute(req: ExecutionRequest): Promise<ExecutionOutcome> {
    let runId = typeof req.metadata[RUN_KEY] === "string" ? (req.metadata[RUN_KEY] as string) : undefined;
    const pending = req.metadata[APPROVAL_KEY] as HermesEvent | undefined;
    try {
      if (runId && pending && !req.resumed) {
        // This message answers the question the run is waiting on.
        await this.post(`/v1/runs/${runId}/approval`, { operation: "approval_response", approval_id: pending.approval_id ?? pending.id, choice: messageText(req.message) }, req.signal);
        req.events.note({ [APPROVAL_KEY]: null });
      } else if (!runId) {
        const created = (await this.post(
          "/v1/runs",
          { input: messageText(req.message), ...(this.options.model ? { model: this.options.model } : {}), metadata: { a2a_task_id: req.taskId, a2a_context_id: req.contextId } },
          req.signal,
          { "idempotency-key": req.taskId },
        )) as { id?: string; run_id?: string };
        runId = created.run_id ?? created.id;
        if (!runId) return { state: "TASK_STATE_FAILED", message: `Hermes at ${this.base} created a run but gave no run id` };
        req.events.note({ [RUN_KEY]: runId });
      }
      return await this.follow(runId, req, Number(req.metadata[CHARS_KEY] ?? 0));
    } catch (err) {
      if (req.signal.aborted) return this.stop(runId, req);
      return { state: "TASK_STATE_FAILED", message: `Hermes at ${this.base}: ${(err as Error).message}` };
    }
  }

  /** Reads the run's events until it ends or asks for approval. */
  private async follow(runId: string, req: ExecutionRequest, alreadyStreamed: number): Promise<ExecutionOutcome> {
    const res = await fetch(`${this.base}/v1/runs/${runId}/events`, { headers: { ...this.headers(), accept: "text/event-stream" }, signal: req.signal });
    if (!res.ok || !res.body) throw new Error(`GET /v1/runs/${runId}/events answered HTTP ${res.status}`);
    const artifactId = `${req.taskId}-answer`;
    let chars = alreadyStreamed;
    const close = () => req.events.artifact({ artifactId, name: "answer", parts: [{ text: "" }] }, { append: chars > 0, lastChunk: true });
    try {
      for await (const { event, data } of readNamedSse(res.body)) {
        let e: HermesEvent;
        try {
          e = JSON.parse(data) as HermesEvent;
        } catch {
          e = { text: data };
        }
        const type = event !== "message" ? event : (e.type ?? "message");
        if (type === "message.delta") {
          const delta = e.delta ?? e.text ?? e.content ?? "";
          if (delta) {
            req.events.artifact({ artifactId, name: "answer", parts: [{ text: delta }] }, { append: chars > 0 });
            chars += delta.length;
          }
        } else if (type.startsWith("tool.") || type.startsWith("reasoning.")) {
          req.events.progress(`${type}${e.tool ?? e.name ? `: ${e.tool ?? e.name}` : ""}`, { hermes: { event: type, ...e } });
        } else if (type === "approval.request" || type === "approval.required") {
          req.events.note({ [APPROVAL_KEY]: e, [CHARS_KEY]: chars });
          const question = e.prompt ?? e.message ?? "The agent asks for approval to continue.";
          const choices = e.choices?.length ? ` (answer: ${e.choices.join(" / ")})` : "";
          return { state: "TASK_STATE_INPUT_REQUIRED", message: `${question}${choices}` };
        } else if (type === "run.completed") {
          if (chars === 0 && typeof e.output === "string" && e.output) {
            req.events.artifact({ artifactId, name: "answer", parts: [{ text: e.output }] }, { lastChunk: true });
            return { state: "TASK_STATE_COMPLETED" };
          }
          close();
          return { state: "TASK_STATE_COMPLETED" };
        } else if (type === "run.failed") {
          const reason = typeof e.error === "string" ? e.error : (e.error?.message ?? e.message ?? "no reason given");
          if (chars > 0) close();
          return { state: "TASK_STATE_FAILED", message: `the Hermes run failed: ${reason}` };
        }
      }
    } catch (err) {
      if (req.signal.aborted) return this.stop(runId, req);
      throw err;
    }
    if (req.signal.aborted) return this.stop(runId, req);
    throw new Error(`the event stream of run ${runId} ended before the run did`);
  }

  /** Cancel: stop the run on Hermes too (best effort; the task ends CANCELED either way). */
  private async stop(runId: string | undefined, req: ExecutionRequest): Promise<ExecutionOutcome> {
    if (runId) await this.post(`/v1/runs/${runId}/stop`, {}, AbortSignal.timeout(1000)).catch(() => {});
    return { state: "TASK_STATE_CANCELED", message: (req.signal.reason as Error | undefined)?.message ?? "canceled" };
  }

  private async post(path: string, body: unknown, signal: AbortSignal, extra: Record<string, string> = {}): Promise<unknown> {
    const res = await fetch(`${this.base}${path}`, {
      method: "POST",
      headers: { ...this.headers(), "content-type": "application/json", ...extra },
      body: JSON.stringify(body),
      signal,
    });
    const text = await res.text();
    if (!res.ok) throw new Error(`POST ${path} answered HTTP ${res.status}: ${text.slice(0, 200)}`);
    return text ? JSON.parse(text) : {};
  }

  private headers(): Record<string, string> {
    return this.options.apiKey ? { authorization: `Bearer ${this.options.apiKey}` } : {};
  }
}
