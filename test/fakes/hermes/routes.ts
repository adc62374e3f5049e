/**
 * The HTTP surface of the fake Hermes server: one handler per route of the real runs API, each following the
 * named function of the real source (see server.ts for the files and commits), including the order of
 * its checks, so a client sees the same error for the same bad request.
 */
import { FakeRun, TERMINAL, type GatewayProcess, type RunContext, type RunRequest, type RunStatus } from "./run";
import { hermes, type ApprovalOutcome, type HermesStep } from "./script";
import { pumpEvents } from "./stream";
import {
  aiohttpText,
  canonicalJson,
  coerceRequestBool,
  errorAnswer,
  hex32,
  jsonAnswer,
  nowSeconds,
  pyTruthy,
  sseHeaders,
  type Answer,
  type Generation,
} from "./wire";

/** One HTTP request the fake received. */
export interface HermesRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  /** The token of `Authorization: Bearer ...`, if any. */
  bearer?: string;
  text: string;
  /** The body as JSON, if it parsed. */
  body: any;
  /** The status answered (set once answered). */
  status?: number;
}

export interface RoutesEnv {
  gen: Generation;
  apiKey?: string;
  limit: number;
  keepaliveMs: number;
  graceMs: number;
  maxBody: number;
  modelName: string;
  script?: HermesStep[] | ((request: RunRequest) => HermesStep[]);
  ctx: RunContext;
  /** Newer: Idempotency-Key -> the run it admitted (durable, survives restarts). */
  idempotency: Map<string, { runId: string; fingerprint: string }>;
  allRuns: FakeRun[];
  /** Resolves once probe() holds (re-checked on every change) or after ms. */
  waitFor(probe: () => boolean, ms: number): Promise<void>;
}

const isObject = (v: unknown): v is Record<string, any> => typeof v === "object" && v !== null && !Array.isArray(v);

/** Python `str(x)` for the JSON values the server stringifies. */
function pyStr(v: unknown): string {
  if (typeof v === "string") return v;
  if (v === null || v === undefined) return "None";
  if (typeof v === "boolean") return v ? "True" : "False";
  return typeof v === "number" ? String(v) : JSON.stringify(v);
}

const CHOICE_ALIASES: Record<string, string> = { approve: "once", approved: "once", allow: "once" };
const CHOICES = new Set(["once", "session", "always", "deny"]);

export function createRoutes(env: RoutesEnv) {
  const { gen, apiKey, limit, keepaliveMs, graceMs, maxBody, modelName, script, ctx, idempotency, allRuns, waitFor } =
    env;
  const changed = ctx.changed;

  // ---- the newer server's view of a run: `_request_owns_run` + `_durable_run_status` ----------------------

  const owns = (p: GatewayProcess, id: string) =>
    p.statuses.has(id) || p.live.has(id) || p.streams.has(id) || p.approvalSessions.has(id) || ctx.durable.has(id);

  function statusFor(p: GatewayProcess, id: string): RunStatus | undefined {
    const mem = p.statuses.get(id);
    if (mem || gen === "older") return mem;
    const record = ctx.durable.get(id);
    if (!record) return undefined;
    const st = structuredClone(record.status);
    if (!TERMINAL.has(String(st.status)) && p.runs.get(id) === undefined) {
      // The owner process is gone: fail closed (status.update keeps any stale `approval`).
      Object.assign(st, {
        status: "interrupted",
        error: "The gateway restarted before this run settled.",
        last_event: "run.interrupted",
        updated_at: nowSeconds(),
      });
      record.status = structuredClone(st);
    }
    p.statuses.set(id, st);
    return st;
  }

  // ---- handlers ---------------------------------------------------------------------------------------

  const notFound = (id: string) => errorAnswer(gen, 404, `Run not found: ${id}`, { code: "run_not_found" });

  function checkAuth(r: HermesRequest): Response | undefined {
    if (!apiKey) return undefined; // no key configured: all requests allowed (`_check_auth`)
    const auth = r.headers.authorization ?? "";
    if (auth.startsWith("Bearer ") && auth.slice(7).trim() === apiKey) return undefined;
    return jsonAnswer(
      gen,
      { error: { message: "Invalid API key", type: "invalid_request_error", code: "invalid_api_key" } },
      401,
    );
  }

  /** `_concurrency_limited_response`: both generations count the agents still at work (0.18.2 included). */
  function concurrencyLimited(p: GatewayProcess): Response | undefined {
    if (limit <= 0) return undefined;
    if (p.live.size < limit) return undefined;
    return errorAnswer(gen, 429, `Too many concurrent runs (max ${limit})`, {
      type: "rate_limit_error",
      code: "rate_limit_exceeded",
      headers: { "retry-after": "1" },
    });
  }

  function postRuns(p: GatewayProcess, r: HermesRequest): Response {
    // `_admit_api_agent_request`: the key, then the drain gate.
    const auth = checkAuth(r);
    if (auth) return auth;
    if (p.draining)
      return errorAnswer(gen, 503, "Gateway is draining existing work; retry shortly.", {
        code: "gateway_draining",
        headers: { "retry-after": "1" },
      });
    if (gen === "older") {
      const limited = concurrencyLimited(p);
      if (limited) return limited;
    }
    // A chunked body past client_max_size makes request.json() raise: "Invalid JSON" too.
    if (r.body === undefined || (r.headers["content-length"] === undefined && r.text.length > maxBody))
      return errorAnswer(gen, 400, "Invalid JSON");
    const body = r.body;
    if (!isObject(body)) return aiohttpText(gen, 500); // body.get(...) raises
    let key = "";
    if (gen === "newer") {
      key = (r.headers["idempotency-key"] ?? "").trim();
      if ([...key].length > 255 || [...key].some((ch) => ch.codePointAt(0)! < 33 || ch.codePointAt(0)! > 126))
        return errorAnswer(gen, 400, "Idempotency-Key must be 1-255 visible ASCII characters", {
          code: "invalid_idempotency_key",
        });
    }
    const raw = body.input;
    if (!pyTruthy(raw)) return errorAnswer(gen, 400, "Missing 'input' field");
    let userMessage: unknown = "";
    if (typeof raw === "string") userMessage = raw;
    else if (Array.isArray(raw)) {
      const last = raw[raw.length - 1];
      if (!isObject(last)) return aiohttpText(gen, 500); // raw_input[-1].get(...) raises
      userMessage = last.content ?? "";
    }
    if (!pyTruthy(userMessage)) return errorAnswer(gen, 400, "No user message found in input");
    // `_resolve_conversation_history`: conversation_history > all but the last input item.
    let history: { role: string; content: string }[] = [];
    let historyFrom: RunRequest["historyFrom"] = "none";
    if (pyTruthy(body.conversation_history)) {
      if (!Array.isArray(body.conversation_history))
        return errorAnswer(gen, 400, "'conversation_history' must be an array of message objects");
      for (const [i, e] of body.conversation_history.entries()) {
        if (!isObject(e) || !("role" in e) || !("content" in e))
          return errorAnswer(gen, 400, `conversation_history[${i}] must have 'role' and 'content' fields`);
        history.push({ role: pyStr(e.role), content: pyStr(e.content) });
      }
      historyFrom = "body";
    }
    if (history.length === 0 && Array.isArray(raw) && raw.length > 1) {
      for (const m of raw.slice(0, -1)) {
        if (!isObject(m) || !pyTruthy(m.role) || !pyTruthy(m.content)) continue;
        const content = Array.isArray(m.content)
          ? m.content
              .filter((x: any) => isObject(x) && x.type === "text")
              .map((x: any) => x.text ?? "")
              .join(" ")
          : m.content;
        history.push({ role: pyStr(m.role), content: pyStr(content) });
      }
      if (history.length > 0) historyFrom = "input";
    }
    const fingerprint = canonicalJson({ body, gateway_session_key: "" });
    if (key) {
      const known = idempotency.get(key);
      if (known && known.fingerprint !== fingerprint)
        return errorAnswer(gen, 409, "Idempotency-Key was already used with a different request payload", {
          code: "idempotency_key_conflict",
        });
      if (known) {
        const st = statusFor(p, known.runId) ?? ctx.durable.get(known.runId)?.status;
        return jsonAnswer(gen, { run_id: known.runId, status: st?.status ?? "queued", replayed: true }, 202, {
          "idempotency-replayed": "true",
        });
      }
    }
    if (gen === "newer") {
      const limited = concurrencyLimited(p);
      if (limited) return limited;
    }
    // Newer: a run with a session_id and no history of its own continues that session (`_handle_runs`:
    // `_conversation_history_for_session`). The older server takes session_id as a label only.
    if (gen === "newer" && history.length === 0 && pyTruthy(body.session_id) && !pyTruthy(body.previous_response_id)) {
      history = ctx.sessions.conversation(pyStr(body.session_id));
      if (history.length > 0) historyFrom = "session";
    }
    const id = `run_${hex32()}`;
    const request: RunRequest = {
      body,
      headers: r.headers,
      input: raw,
      userMessage,
      history,
      historyFrom,
      instructions: body.instructions,
      sessionId: body.session_id,
      model: body.model,
      ...(key ? { idempotencyKey: key } : {}),
    };
    const echo = [hermes.delta("echo: "), hermes.delta(pyStr(userMessage)), hermes.completed()];
    const steps = script ? (typeof script === "function" ? script(request) : [...script]) : echo;
    const run = new FakeRun(id, request, p, steps, ctx);
    p.runs.set(id, run);
    p.streams.set(id, run.queue);
    p.streamCreated.set(id, Date.now());
    p.approvalSessions.add(id);
    p.live.set(id, run);
    if (key) {
      ctx.durable.set(id, { status: {} as RunStatus });
      idempotency.set(key, { runId: id, fingerprint });
    }
    run.setStatus("queued", {
      created_at: nowSeconds(),
      session_id: pyTruthy(body.session_id) ? body.session_id : id,
      model: "model" in body ? body.model : modelName,
    });
    allRuns.push(run);
    changed();
    void run.drive();
    return jsonAnswer(
      gen,
      gen === "newer" ? { run_id: id, status: "started", replayed: false } : { run_id: id, status: "started" },
      202,
    );
  }

  /** `_load_owned_run` (newer) / the status lookup (older): the run's status, or a 404. */
  function loadRun(p: GatewayProcess, id: string, activeFallback: boolean): RunStatus | Response {
    if (gen === "older") return p.statuses.get(id) ?? notFound(id);
    if (!owns(p, id)) return notFound(id);
    let st = statusFor(p, id);
    if (!st && activeFallback && p.live.has(id)) {
      p.live.get(id)!.setStatus("running");
      st = p.statuses.get(id);
    }
    return st ?? notFound(id);
  }

  async function getEvents(p: GatewayProcess, r: HermesRequest, id: string): Promise<Answer> {
    const auth = checkAuth(r);
    if (auth) return auth;
    if (gen === "newer" && !owns(p, id)) return notFound(id);
    if (!p.streams.has(id)) {
      // "Allow subscribing slightly before the run is registered": 20 x 50 ms, then 404.
      await waitFor(() => p.streams.has(id) || !p.alive, graceMs);
      if (!p.streams.has(id)) return notFound(id);
    }
    const queue = p.streams.get(id)!;
    const run = p.runs.get(id)!;
    p.subscribers.add(id);
    return {
      headers: sseHeaders(gen),
      start: (out) =>
        pumpEvents(queue, keepaliveMs, out, {
          opened: () => (run.streamsOpened++, changed()),
          wrote: (e) => (run.read.push(e), changed()),
          clientLeft: () => (run.clientsLeft++, changed()),
          lost: (e) => (run.lost.push(e), changed()),
          ended: () => {
            p.subscribers.delete(id);
            p.streams.delete(id);
            p.streamCreated.delete(id);
            run.queuesDropped++;
            changed();
          },
        }),
    };
  }

  function postApproval(p: GatewayProcess, r: HermesRequest, id: string): Response {
    const auth = checkAuth(r);
    if (auth) return auth;
    const loaded = loadRun(p, id, false);
    if (loaded instanceof Response) return loaded;
    if (r.body === undefined) return errorAnswer(gen, 400, "Invalid JSON");
    if (!isObject(r.body)) return aiohttpText(gen, 500);
    const body = r.body;
    const raw = pyStr(body.choice ?? "")
      .trim()
      .toLowerCase();
    const choice = CHOICE_ALIASES[raw] ?? raw;
    let requestId = "";
    if (gen === "newer") {
      const rawId = body.request_id;
      requestId = typeof rawId === "string" ? rawId.trim() : "";
      if (rawId !== undefined && rawId !== null && (!requestId || requestId.length > 256))
        return errorAnswer(gen, 400, "Approval request_id is invalid.", { code: "invalid_approval_request" });
      if (!CHOICES.has(choice))
        return errorAnswer(gen, 400, "Invalid approval choice; expected one of: always, deny, once, session", {
          code: "invalid_approval_choice",
        });
    } else if (!CHOICES.has(choice))
      return errorAnswer(gen, 400, "Invalid approval choice; expected one of: once, session, always, deny", {
        code: "invalid_approval_choice",
      });
    // `_coerce_request_bool` in both (0.18.2 too): "false" is false.
    const all = coerceRequestBool(body.all) || coerceRequestBool(body.resolve_all);
    const run = p.runs.get(id);
    if (!p.approvalSessions.has(id) || !run)
      return errorAnswer(gen, 409, `Run has no active approval session: ${id}`, { code: "approval_not_active" });
    const resolved = run.resolve(choice as ApprovalOutcome, { all, requestId: requestId || undefined });
    if (resolved <= 0)
      return errorAnswer(gen, 409, `Run has no pending approval: ${id}`, { code: "approval_not_pending" });
    const rid = requestId ? { request_id: requestId } : {};
    run.answers.push({ choice, ...(requestId ? { requestId } : {}), all, resolved, body });
    run.setStatus("running", { last_event: "approval.responded" });
    run.deliver(
      { event: "approval.responded", run_id: id, timestamp: nowSeconds(), choice, ...rid, resolved },
      "control",
    );
    return jsonAnswer(gen, { object: "hermes.run.approval_response", run_id: id, choice, ...rid, resolved });
  }

  function postStop(p: GatewayProcess, r: HermesRequest, id: string): Response {
    const auth = checkAuth(r);
    if (auth) return auth;
    const run = p.live.get(id);
    if (gen === "older") {
      // No agent and no task left (the run ended, or another process's): 404.
      if (!run) return notFound(id);
      run.requestStop();
      return jsonAnswer(gen, { run_id: id, status: "stopping" });
    }
    const loaded = loadRun(p, id, true);
    if (loaded instanceof Response) return loaded;
    if (TERMINAL.has(String(loaded.status))) return jsonAnswer(gen, loaded);
    if (!run)
      return errorAnswer(gen, 409, `Run is not active in this gateway process: ${id}`, { code: "run_not_active" });
    run.requestStop();
    return jsonAnswer(gen, { run_id: id, status: "stopping" });
  }

  function health(p: GatewayProcess, r: HermesRequest, detailed: boolean): Response {
    if (!detailed)
      return jsonAnswer(gen, {
        status: "ok",
        platform: "hermes-agent",
        ...(gen === "older" ? { version: "0.18.2" } : {}),
      });
    if (gen === "older")
      return jsonAnswer(gen, {
        status: "ok",
        platform: "hermes-agent",
        gateway_state: "running",
        platforms: {},
        active_agents: p.live.size,
        exit_reason: null,
        updated_at: null,
        pid: process.pid,
      });
    return checkAuth(r) ?? jsonAnswer(gen, { status: "ok", platform: "hermes-agent", active_runs: p.live.size });
  }

  /**
   * `_handle_capabilities` (auth first): the runs part of the real document. The newer generation adds
   * `runs_idempotency` (`_idempotency_capabilities`), which is how a client tells it loads history by
   * session_id; 0.18.2 lists the same runs features without it.
   */
  function capabilities(r: HermesRequest): Response {
    const auth = checkAuth(r);
    if (auth) return auth;
    const endpoint = (method: string, path: string) => ({ method, path });
    return jsonAnswer(gen, {
      object: "hermes.api_server.capabilities",
      platform: "hermes-agent",
      model: modelName,
      auth: { type: "bearer", required: Boolean(apiKey) },
      features: {
        chat_completions: true,
        responses_api: true,
        run_submission: true,
        ...(gen === "newer" ? { runs_idempotency: { supported: true, durable: true, retention_seconds: 86400 } } : {}),
        run_status: true,
        run_events_sse: true,
        run_stop: true,
        run_approval_response: true,
        tool_progress_events: true,
        approval_events: true,
        session_resources: true,
        session_continuity_header: "X-Hermes-Session-Id",
      },
      endpoints: {
        runs: endpoint("POST", "/v1/runs"),
        run_status: endpoint("GET", "/v1/runs/{run_id}"),
        run_events: endpoint("GET", "/v1/runs/{run_id}/events"),
        run_approval: endpoint("POST", "/v1/runs/{run_id}/approval"),
        run_stop: endpoint("POST", "/v1/runs/{run_id}/stop"),
        session_messages: endpoint("GET", "/api/sessions/{session_id}/messages"),
      },
    });
  }

  /** `_handle_session_messages`: the session's rows, or 404 session_not_found. */
  function sessionMessages(r: HermesRequest, sessionId: string): Response {
    const auth = checkAuth(r);
    if (auth) return auth;
    if (!ctx.sessions.has(sessionId))
      return errorAnswer(gen, 404, `Session not found: ${sessionId}`, { code: "session_not_found" });
    return jsonAnswer(gen, { object: "list", session_id: sessionId, data: ctx.sessions.messages(sessionId) });
  }

  async function route(p: GatewayProcess, r: HermesRequest): Promise<Answer> {
    const { method, path } = r;
    const cl = r.headers["content-length"];
    if (["POST", "PUT", "PATCH"].includes(method) && cl !== undefined && Number(cl) > maxBody)
      return errorAnswer(gen, 413, "Request body too large.", { code: "body_too_large" });
    const get = method === "GET" || method === "HEAD";
    if (path === "/health" || path === "/v1/health" || path === "/health/detailed")
      return get ? health(p, r, path === "/health/detailed") : aiohttpText(gen, 405, "GET,HEAD");
    if (path === "/v1/capabilities") return get ? capabilities(r) : aiohttpText(gen, 405, "GET,HEAD");
    const session = /^\/api\/sessions\/([^/]+)\/messages$/.exec(path);
    if (session) return get ? sessionMessages(r, decodeURIComponent(session[1]!)) : aiohttpText(gen, 405, "GET,HEAD");
    if (path === "/v1/runs") return method === "POST" ? postRuns(p, r) : aiohttpText(gen, 405, "POST");
    const m = /^\/v1\/runs\/([^/{}]+)(?:\/(events|approval|stop))?$/.exec(path);
    if (!m) return aiohttpText(gen, 404);
    const [, id, sub] = m as unknown as [string, string, string | undefined];
    if (!sub || sub === "events") {
      if (!get) return aiohttpText(gen, 405, "GET,HEAD");
      if (sub) return getEvents(p, r, id);
      const auth = checkAuth(r);
      if (auth) return auth;
      const loaded = loadRun(p, id, true);
      return loaded instanceof Response ? loaded : jsonAnswer(gen, loaded);
    }
    if (method !== "POST") return aiohttpText(gen, 405, "POST");
    return sub === "approval" ? postApproval(p, r, id) : postStop(p, r, id);
  }

  return { route, owns, statusFor };
}
