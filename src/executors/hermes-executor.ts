import type { Message } from "../protocol/types";
import {
  refuse,
  type AgentExecutor,
  type ExecutionOutcome,
  type ExecutionRequest,
  type ExecutorRefusal,
  type Readiness,
} from "./executor";
import { choiceOf } from "./hermes/approvals";
import { Conversations } from "./hermes/conversation";
import { APPROVAL_KEY, HermesTask, type HermesTiming } from "./hermes/hermes-task";
import type { HermesApproval } from "./hermes/runs-api";
import { HermesHttpError, RunsApi } from "./hermes/runs-api";

export { APPROVAL_KEY, RUN_KEY, sessionId } from "./hermes/hermes-task";

export interface HermesExecutorOptions {
  /** Base URL of a Hermes Agent API server, e.g. http://127.0.0.1:8642 */
  baseUrl: string;
  apiKey?: string;
  model?: string;
  /** Waits and polling intervals (tests shorten them). */
  timing?: Partial<HermesTiming>;
}

const DEFAULT_TIMING: HermesTiming = {
  capacityWaitMs: 5 * 60_000,
  maxRetryDelayMs: 30_000,
  pollFirstMs: 250,
  pollMaxMs: 5_000,
  stopWaitMs: 10_000,
};

/**
 * Runs tasks on a Hermes Agent through its runs API, as the real server speaks it (followed:
 * NousResearch/hermes-agent, gateway/platforms/api_server.py
 * and api_server_runs.py, both server generations). A task is one run, started with the task id as its
 * Idempotency-Key and its conversation's session_id (and, on the older server, which takes session_id as a
 * label only, the session's earlier turns: see hermes/conversation.ts). Tokens stream as artifact chunks and the
 * run's final `output` becomes the answer; tools and reasoning become status updates. An approval the run asks for puts
 * the task in INPUT_REQUIRED with the command and the choices, while the run's event stream stays open; the
 * next message to the task is the answer (yes/no or a choice). Cancel stops the run. After a restart the node
 * re-attaches to the run by polling its status: the server gives a run's events only once.
 */
export class HermesExecutor implements AgentExecutor {
  readonly kind = "hermes";
  readonly onRestart = "reattach";
  private readonly api: RunsApi;
  private readonly timing: HermesTiming;
  private readonly conversations: Conversations;

  constructor(private readonly options: HermesExecutorOptions) {
    // The options themselves, not a copy of the key: the node may give it a key that changes (SIGHUP).
    this.api = new RunsApi(options);
    this.timing = { ...DEFAULT_TIMING, ...options.timing };
    this.conversations = new Conversations(this.api);
  }

  check(message: Message, task?: { state: Record<string, unknown> }): ExecutorRefusal | undefined {
    if (message.parts.some((p) => p.raw !== undefined || p.url !== undefined))
      return refuse(
        "content-type",
        "the Hermes executor gives Hermes text (and data parts as JSON); it cannot pass files",
      );
    // An answer to an approval asked before this node restarted: refuse one that is not a choice of it.
    const pending = task?.state[APPROVAL_KEY];
    if (pending && typeof pending === "object") {
      const r = choiceOf(message, pending as HermesApproval);
      if ("refused" in r) return refuse("invalid", r.refused);
    }
    return undefined;
  }

  /**
   * Ready when Hermes answers an authenticated call with the key accepted: GET /health needs no key, so it cannot
   * tell a wrong key; a status query of a run that does not exist can (404 run_not_found once the key passed).
   */
  async ready(signal: AbortSignal): Promise<Readiness> {
    const probe = "run_a2a_node_readiness_probe";
    try {
      await this.api.status(probe, signal);
      return { ready: true, detail: `Hermes at ${this.api.base} answered an authenticated call` };
    } catch (err) {
      if (err instanceof HermesHttpError) {
        if (err.status === 404 && err.code === "run_not_found")
          return { ready: true, detail: `Hermes at ${this.api.base} accepted the API key` };
        if (err.status === 401 || err.status === 403)
          return {
            ready: false,
            detail: `Hermes at ${this.api.base} refused the API key (HTTP ${err.status}); set HERMES_API_KEY or --hermes-api-key-file`,
          };
        return { ready: false, detail: `Hermes at ${this.api.base}: ${err.message}` };
      }
      return { ready: false, detail: `Hermes at ${this.api.base} is unreachable: ${(err as Error).message}` };
    }
  }

  execute(req: ExecutionRequest): Promise<ExecutionOutcome> {
    return new HermesTask(this.api, req, this.timing, this.options.model, this.conversations).execute();
  }
}
