import { readSse } from "../../sse";

/*
 * The Hermes Agent runs API as the real server speaks it (gateway/platforms/api_server.py and, in newer
 * versions, api_server_runs.py of NousResearch/hermes-agent):
 * POST /v1/runs starts a run, GET /v1/runs/{id}/events streams its events once (`data:` frames whose JSON names
 * the event in "event"), GET /v1/runs/{id} is its pollable status, POST .../approval answers an approval,
 * POST .../stop interrupts it. Errors are OpenAI-shaped: {"error": {"message", "type", "param", "code"}}.
 */

/** One event of a run's stream. Unknown events and fields are kept, never refused. */
export interface HermesEvent {
  event: string;
  run_id?: string;
  timestamp?: number;
  [field: string]: unknown;
}

/** What a pending approval carries (the approval.request event, or a newer server's status.approval). */
export interface HermesApproval {
  command?: string;
  description?: string;
  pattern_key?: string;
  pattern_keys?: string[];
  choices?: string[];
  allow_permanent?: boolean;
  allow_session?: boolean;
  /** Newer servers: the id to answer this approval by (`request_id` in POST .../approval). */
  request_id?: string;
  approval_id?: string;
  expires_at?: number | string;
  [field: string]: unknown;
}

/** GET /v1/runs/{id}. */
export interface HermesRunStatus {
  object?: string;
  run_id: string;
  status:
    | "queued"
    | "running"
    | "waiting_for_approval"
    | "stopping"
    | "completed"
    | "failed"
    | "cancelled"
    | "interrupted"
    | string;
  output?: string;
  usage?: Record<string, number>;
  error?: string;
  approval?: HermesApproval;
  last_event?: string;
  session_id?: string;
  [field: string]: unknown;
}

/** One earlier turn of a conversation, as POST /v1/runs takes it in `conversation_history`. */
export interface HistoryTurn {
  role: "user" | "assistant";
  content: string;
}

/** What POST /v1/runs takes (only the fields the server reads; it ignores `metadata`). */
export interface StartRun {
  input: string;
  session_id?: string;
  /** The conversation so far; the older server has no other way to continue one (session_id is only a label there). */
  conversation_history?: HistoryTurn[];
  instructions?: string;
  model?: string;
}

/** GET /v1/capabilities, as far as this node reads it. */
export interface HermesCapabilities {
  features?: Record<string, unknown>;
  [field: string]: unknown;
}

/** One message of GET /api/sessions/{id}/messages (Hermes's SessionDB row). */
export interface SessionMessage {
  role?: string;
  content?: unknown;
  tool_calls?: unknown;
  [field: string]: unknown;
}

/** A non-2xx answer of the runs API, with the OpenAI error's code and message when it gave them. */
export class HermesHttpError extends Error {
  constructor(
    readonly endpoint: string,
    readonly status: number,
    readonly code: string | undefined,
    readonly detail: string,
    /** Seconds, from a Retry-After header. */
    readonly retryAfter: number | undefined,
  ) {
    super(`${endpoint} answered HTTP ${status}${code ? ` ${code}` : ""}${detail ? `: ${detail}` : ""}`);
    this.name = "HermesHttpError";
  }
}

export interface RunsApiOptions {
  baseUrl: string;
  apiKey?: string;
}

/** A small typed client of the runs API; every call takes the task's abort signal. */
export class RunsApi {
  readonly base: string;

  constructor(private readonly options: RunsApiOptions) {
    this.base = options.baseUrl.replace(/\/+$/, "");
  }

  /** POST /v1/runs; `idempotencyKey` makes a retried start return the same run on servers that honour it. */
  async start(
    body: StartRun,
    idempotencyKey: string,
    signal: AbortSignal,
  ): Promise<{ runId: string; replayed?: boolean }> {
    const r = (await this.call("POST", "/v1/runs", signal, body, { "idempotency-key": idempotencyKey })) as {
      run_id?: unknown;
      replayed?: boolean;
    };
    if (typeof r.run_id !== "string" || r.run_id === "")
      throw new HermesHttpError("POST /v1/runs", 202, undefined, "the answer carried no run_id", undefined);
    return { runId: r.run_id, replayed: r.replayed };
  }

  status(runId: string, signal: AbortSignal): Promise<HermesRunStatus> {
    return this.call("GET", `/v1/runs/${encodeURIComponent(runId)}`, signal) as Promise<HermesRunStatus>;
  }

  /** POST .../approval with one of once|session|always|deny; `requestId` names the approval (newer servers). */
  approve(runId: string, choice: string, requestId: string | undefined, signal: AbortSignal): Promise<unknown> {
    return this.call("POST", `/v1/runs/${encodeURIComponent(runId)}/approval`, signal, {
      choice,
      ...(requestId ? { request_id: requestId } : {}),
    });
  }

  stop(runId: string, signal: AbortSignal): Promise<unknown> {
    return this.call("POST", `/v1/runs/${encodeURIComponent(runId)}/stop`, signal, {});
  }

  /** GET /v1/capabilities: what the server says it does (features, endpoints). */
  capabilities(signal: AbortSignal): Promise<HermesCapabilities> {
    return this.call("GET", "/v1/capabilities", signal) as Promise<HermesCapabilities>;
  }

  /**
   * GET /api/sessions/{id}/messages: the messages Hermes keeps for a session (its SessionDB), oldest first; none
   * for a session it does not know (404 session_not_found).
   */
  async sessionMessages(sessionId: string, signal: AbortSignal): Promise<SessionMessage[]> {
    try {
      const r = (await this.call("GET", `/api/sessions/${encodeURIComponent(sessionId)}/messages`, signal)) as {
        data?: unknown;
      };
      return Array.isArray(r.data) ? (r.data as SessionMessage[]) : [];
    } catch (err) {
      if (err instanceof HermesHttpError && err.status === 404 && err.code === "session_not_found") return [];
      throw err;
    }
  }

  /**
   * Opens the run's event stream. The server gives it once: its events are taken off the run's queue as they
   * are read, and when this connection ends the queue is gone (a second GET answers 404). So one stream per run,
   * held open for the run's whole life.
   */
  async events(runId: string, signal: AbortSignal): Promise<AsyncIterator<HermesEvent>> {
    const endpoint = `GET /v1/runs/${runId}/events`;
    const res = await fetch(`${this.base}/v1/runs/${encodeURIComponent(runId)}/events`, {
      headers: { ...this.auth(), accept: "text/event-stream" },
      signal,
    });
    if (!res.ok || !res.body) throw await httpError(endpoint, res);
    const frames = readSse(res.body)[Symbol.asyncIterator]();
    return {
      async next(): Promise<IteratorResult<HermesEvent>> {
        for (;;) {
          const r = await frames.next();
          if (r.done) return { done: true, value: undefined };
          let e: unknown;
          try {
            e = JSON.parse(r.value);
          } catch {
            continue; // not an event of the runs API; the real server sends none, but never let one break a run
          }
          if (e && typeof e === "object" && typeof (e as HermesEvent).event === "string")
            return { done: false, value: e as HermesEvent };
        }
      },
      async return(): Promise<IteratorResult<HermesEvent>> {
        await frames.return?.();
        return { done: true, value: undefined };
      },
    };
  }

  auth(): Record<string, string> {
    return this.options.apiKey ? { authorization: `Bearer ${this.options.apiKey}` } : {};
  }

  private async call(
    method: "GET" | "POST",
    path: string,
    signal: AbortSignal,
    body?: unknown,
    extra: Record<string, string> = {},
  ): Promise<unknown> {
    const endpoint = `${method} ${path}`;
    const res = await fetch(`${this.base}${path}`, {
      method,
      headers: { ...this.auth(), ...(body !== undefined ? { "content-type": "application/json" } : {}), ...extra },
      body: body !== undefined ? JSON.stringify(body) : undefined,
      signal,
    });
    if (!res.ok) throw await httpError(endpoint, res);
    const text = await res.text();
    try {
      return text ? JSON.parse(text) : {};
    } catch {
      throw new HermesHttpError(
        endpoint,
        res.status,
        undefined,
        `the answer is not JSON: ${text.slice(0, 120)}`,
        undefined,
      );
    }
  }
}

async function httpError(endpoint: string, res: Response): Promise<HermesHttpError> {
  const text = await res.text().catch(() => "");
  let code: string | undefined;
  let detail = text.slice(0, 200);
  try {
    const e = (JSON.parse(text) as { error?: { message?: unknown; code?: unknown } }).error;
    if (e && typeof e === "object") {
      if (typeof e.code === "string") code = e.code;
      if (typeof e.message === "string") detail = e.message;
    }
  } catch {
    // not the OpenAI error shape: keep the start of the body
  }
  const ra = Number(res.headers.get("retry-after"));
  return new HermesHttpError(endpoint, res.status, code, detail, Number.isFinite(ra) && ra >= 0 ? ra : undefined);
}
