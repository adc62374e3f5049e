/**
 * A fake Hermes Agent API server (the runs API) on loopback, real HTTP: POST /v1/runs creates a run (the same
 * Idempotency-Key gives back the same run), GET /v1/runs/{id}/events streams its named server-sent events
 * following a per-test script, an `approval.request` pauses the run until POST /v1/runs/{id}/approval answers
 * it (a new GET events continues from there), POST /v1/runs/{id}/stop stops it and ends any open event
 * stream, GET /health answers 200. Every request is recorded; tests await "run created", "approval
 * answered", "stopped" as events, never by timers.
 */

/** One step of a run's script: an event to send, or a stall (nothing more until the run is stopped). */
export type HermesStep =
  | { event: string; data: Record<string, unknown>; branch?: Record<string, HermesStep[]> }
  | { stall: true };

export const hermes = {
  delta: (delta: string): HermesStep => ({ event: "message.delta", data: { delta } }),
  toolCall: (tool: string, args: Record<string, unknown> = {}): HermesStep => ({ event: "tool.call", data: { tool, args } }),
  toolResult: (tool: string, result: unknown = "ok"): HermesStep => ({ event: "tool.result", data: { tool, result } }),
  reasoning: (text = "thinking"): HermesStep => ({ event: "reasoning.available", data: { text } }),
  /** Asks for approval; `branch` optionally maps a choice to the steps that follow it. */
  approval: (approval_id: string, prompt: string, choices = ["yes", "no"], branch?: Record<string, HermesStep[]>): HermesStep => ({
    event: "approval.request",
    data: { approval_id, prompt, choices },
    ...(branch ? { branch } : {}),
  }),
  completed: (output?: string): HermesStep => ({ event: "run.completed", data: output === undefined ? {} : { output } }),
  failed: (error: string): HermesStep => ({ event: "run.failed", data: { error } }),
  stall: (): HermesStep => ({ stall: true }),
};

export interface HermesRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  /** The bearer token of the Authorization header, if any. */
  bearer?: string;
  body: any;
}

export interface HermesRun {
  id: string;
  idempotencyKey?: string;
  /** The body of the POST /v1/runs that created it. */
  body: any;
  steps: HermesStep[];
  /** Index of the next step to send. */
  cursor: number;
  status: "running" | "waiting" | "completed" | "failed" | "stopped";
  /** The approval the run waits for, while status is "waiting". */
  pending?: { approval_id: string; step: HermesStep };
  /** Answers received, in order. */
  approvals: { approval_id: string; choice: string; body: any }[];
  /** Times GET /v1/runs/{id}/events was opened. */
  eventStreams: number;
}

export interface FakeHermesOptions {
  /** The steps of every new run, or a function of the run's input. */
  script?: HermesStep[] | ((input: string, body: any) => HermesStep[]);
  /** Pause between events (a model producing tokens at a pace). */
  eventDelayMs?: number;
  /** When set, requests without `Authorization: Bearer <apiKey>` get 401 (GET /health excepted). */
  apiKey?: string;
}

export interface FakeHermes {
  url: string;
  requests: HermesRequest[];
  runs: Map<string, HermesRun>;
  /** Runs actually created (a repeated Idempotency-Key does not count). */
  readonly runsCreated: number;
  /** Resolves with the n-th created run (1-based) once it exists. */
  runCreated(n?: number): Promise<HermesRun>;
  /** Resolves with the answer once run `runId` (any run if omitted) got its n-th approval answer. */
  approvalAnswered(runId?: string, n?: number): Promise<{ approval_id: string; choice: string; body: any }>;
  /** Resolves once run `runId` (any run if omitted) was stopped through POST /v1/runs/{id}/stop. */
  stopped(runId?: string): Promise<HermesRun>;
  /** Resolves once the run is waiting for an approval (the approval.request event was sent). */
  waitingForApproval(runId?: string): Promise<HermesRun>;
  /** Resolves once n events of the run (any run if omitted) were sent. */
  eventsSent(runId: string | undefined, n: number): Promise<void>;
  /** Resolves once an events stream of the run was closed by the client (it went away). */
  streamAbandoned(runId?: string): Promise<void>;
  /** Creates a run directly (as if an earlier process of the node had started it). */
  createRun(input: string, idempotencyKey?: string): HermesRun;
  stop(): void;
}

export function startFakeHermes(options: FakeHermesOptions = {}): FakeHermes {
  const requests: HermesRequest[] = [];
  const runs = new Map<string, HermesRun>();
  const byKey = new Map<string, HermesRun>();
  const created: HermesRun[] = [];
  const abandoned = new Map<string, number>();
  const waiters: { ready: () => boolean; resolve(): void }[] = [];
  /** Wakes the pump of each run's open event stream. */
  const pumps = new Map<string, Set<() => void>>();
  let nextId = 1;

  const wake = () => {
    for (let i = waiters.length - 1; i >= 0; i--) if (waiters[i]!.ready()) waiters.splice(i, 1)[0]!.resolve();
  };
  const until = (ready: () => boolean) => (ready() ? Promise.resolve() : new Promise<void>((resolve) => waiters.push({ ready, resolve })));
  const nudge = (runId: string) => {
    for (const p of pumps.get(runId) ?? []) p();
  };
  const pick = (runId?: string) => (runId ? [runs.get(runId)].filter((r): r is HermesRun => !!r) : [...runs.values()]);

  const scriptFor = (input: string, body: any): HermesStep[] => {
    const s = options.script ?? [hermes.delta("done: "), hermes.delta(input), hermes.completed()];
    return typeof s === "function" ? s(input, body) : s.map((x) => x);
  };

  const createRun = (input: string, body: any, key?: string): HermesRun => {
    const run: HermesRun = {
      id: `run_${nextId++}`,
      idempotencyKey: key,
      body,
      steps: scriptFor(input, body),
      cursor: 0,
      status: "running",
      approvals: [],
      eventStreams: 0,
    };
    runs.set(run.id, run);
    if (key) byKey.set(key, run);
    created.push(run);
    wake();
    return run;
  };

  const eventStream = (run: HermesRun, req: Request): Response => {
    run.eventStreams++;
    const enc = new TextEncoder();
    let closed = false;
    let poke: () => void = () => {};
    const wakeUp = () => poke();
    const set = pumps.get(run.id) ?? new Set();
    pumps.set(run.id, set);
    set.add(wakeUp);
    /** Waits until something changes for this run (approval, stop) or the client leaves. */
    const changed = () => new Promise<void>((r) => (poke = r));
    const finish = () => {
      closed = true;
      set.delete(wakeUp);
    };
    const stream = new ReadableStream<Uint8Array>({
      async pull(c) {
        for (;;) {
          if (closed) return;
          if (run.status === "stopped") {
            finish();
            c.close();
            return;
          }
          if (run.status === "waiting") {
            await changed();
            continue;
          }
          const step = run.steps[run.cursor];
          if (!step || run.status !== "running") {
            // The run ended before this stream opened (or its script ran out): nothing more to say.
            finish();
            c.close();
            return;
          }
          if ("stall" in step) {
            await changed();
            continue;
          }
          if (run.cursor > 0 && options.eventDelayMs) await new Promise((r) => setTimeout(r, options.eventDelayMs));
          if (closed || run.status !== "running") continue;
          run.cursor++;
          c.enqueue(enc.encode(`event: ${step.event}\ndata: ${JSON.stringify(step.data)}\n\n`));
          if (step.event === "approval.request") {
            run.status = "waiting";
            run.pending = { approval_id: String(step.data.approval_id), step };
          } else if (step.event === "run.completed") run.status = "completed";
          else if (step.event === "run.failed") run.status = "failed";
          wake();
          if (run.status === "completed" || run.status === "failed") {
            finish();
            c.close();
          }
          return;
        }
      },
      cancel() {
        if (closed) return;
        finish();
        poke();
        abandoned.set(run.id, (abandoned.get(run.id) ?? 0) + 1);
        wake();
      },
    });
    req.signal.addEventListener("abort", () => {
      if (closed) return;
      finish();
      poke();
      abandoned.set(run.id, (abandoned.get(run.id) ?? 0) + 1);
      wake();
    });
    return new Response(stream, { headers: { "content-type": "text/event-stream", "cache-control": "no-cache" } });
  };

  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    idleTimeout: 0,
    async fetch(req) {
      const url = new URL(req.url);
      const headers: Record<string, string> = {};
      req.headers.forEach((v, k) => (headers[k] = v));
      const text = req.method === "POST" ? await req.text() : "";
      let body: any;
      try {
        body = text ? JSON.parse(text) : undefined;
      } catch {
        body = text;
      }
      const auth = headers.authorization;
      const bearer = auth?.startsWith("Bearer ") ? auth.slice(7) : undefined;
      requests.push({ method: req.method, path: url.pathname, headers, bearer, body });
      wake();

      if (req.method === "GET" && url.pathname === "/health") return Response.json({ status: "ok" });
      if (options.apiKey !== undefined && bearer !== options.apiKey) return Response.json({ error: "unauthorized" }, { status: 401 });

      if (req.method === "POST" && url.pathname === "/v1/runs") {
        if (typeof body?.input !== "string") return Response.json({ error: "input (a string) is required" }, { status: 400 });
        const key = headers["idempotency-key"];
        const run = (key && byKey.get(key)) || createRun(body.input, body, key);
        return Response.json({ id: run.id, status: run.status }, { status: 202 });
      }
      const m = /^\/v1\/runs\/([^/]+)\/(events|approval|stop)$/.exec(url.pathname);
      const run = m ? runs.get(m[1]!) : undefined;
      if (!m || !run) return Response.json({ error: "not found" }, { status: 404 });
      const what = m[2];
      if (what === "events" && req.method === "GET") return eventStream(run, req);
      if (what === "approval" && req.method === "POST") {
        if (run.status !== "waiting" || !run.pending) return Response.json({ error: "the run is not waiting for an approval" }, { status: 409 });
        if (body?.approval_id !== run.pending.approval_id || typeof body?.choice !== "string")
          return Response.json({ error: `expected {approval_id: "${run.pending.approval_id}", choice}` }, { status: 400 });
        const step = run.pending.step;
        const branch = "branch" in step ? step.branch?.[body.choice] : undefined;
        if (branch) run.steps.splice(run.cursor, 0, ...branch);
        run.approvals.push({ approval_id: body.approval_id, choice: body.choice, body });
        run.pending = undefined;
        run.status = "running";
        wake();
        nudge(run.id);
        return Response.json({ id: run.id, status: run.status });
      }
      if (what === "stop" && req.method === "POST") {
        run.status = "stopped";
        wake();
        nudge(run.id);
        return Response.json({ id: run.id, status: "stopped" });
      }
      return Response.json({ error: "method not allowed" }, { status: 405 });
    },
  });

  return {
    url: `http://127.0.0.1:${server.port}`,
    requests,
    runs,
    get runsCreated() {
      return created.length;
    },
    async runCreated(n = 1) {
      await until(() => created.length >= n);
      return created[n - 1]!;
    },
    async approvalAnswered(runId, n = 1) {
      await until(() => pick(runId).some((r) => r.approvals.length >= n));
      return pick(runId).find((r) => r.approvals.length >= n)!.approvals[n - 1]!;
    },
    async stopped(runId) {
      await until(() => pick(runId).some((r) => r.status === "stopped"));
      return pick(runId).find((r) => r.status === "stopped")!;
    },
    async waitingForApproval(runId) {
      await until(() => pick(runId).some((r) => r.status === "waiting"));
      return pick(runId).find((r) => r.status === "waiting")!;
    },
    eventsSent: (runId, n) => until(() => pick(runId).some((r) => r.cursor >= n)),
    streamAbandoned: (runId) => until(() => (runId ? (abandoned.get(runId) ?? 0) > 0 : abandoned.size > 0)),
    createRun: (input, key) => createRun(input, { input }, key),
    stop: () => {
      for (const run of runs.values()) if (run.status === "running" || run.status === "waiting") run.status = "stopped";
      for (const id of pumps.keys()) nudge(id);
      void server.stop(true);
    },
  };
}
