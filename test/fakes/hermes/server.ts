/**
 * A fake Hermes Agent API server, runs API only, real HTTP on 127.0.0.1: a twin of the real server for the
 * hermes executor's tests, so they fail for the right reasons and pass only when the executor speaks the real
 * protocol. It follows the public source of NousResearch/hermes-agent:
 * - "newer" generation: gateway/platforms/api_server_runs.py @ 005b4b7607e918cd4a301970144878167d1841d7,
 *   gateway/platforms/api_server_run_idempotency.py @ 04ce47dc563b8a519184a18df7fbaff85570cb3d,
 *   gateway/platforms/api_server.py as indexed (`_concurrency_limited_response`, `_draining_response`,
 *   `_approval_event_choices`, `_sse_frame`), tools/approval_gateway_wait.py @
 *   04eef15a136c7bc4e2a2c5b34d65d227207cef5a, tools/approval.py @ 00067189dfecf833d4d009c2dd977ae85cf800e0;
 * - "older" generation: Hermes Agent 0.18.2, commit 306e2d2318745b48d0c9d249958b0190f65a07c9, the real server
 *   the real-Hermes tests run (A2A_REAL_HERMES; runs code inside gateway/platforms/api_server.py: `_handle_runs`,
 *   `_handle_run_events`, `_handle_run_approval`, `_handle_stop_run`, `_check_auth`, `_admit_api_agent_request`,
 *   `_concurrency_limited_response`, `_handle_capabilities`, `_handle_session_messages`,
 *   `_sweep_orphaned_runs`; agent/conversation_loop.py and run_agent.py for reasoning.available and the "\n\n"
 *   after tool calls), checked against that server by test/real-hermes/hermes-real.test.ts ("the wire"). Earlier it
 *   followed api_server.py @ 002b7c34f8dbecd1b56b877211ca67cf34bf68c9, which counted open queues, sent 429 without
 *   Retry-After and cancelled a stopped run at once; 0.18.2 does none of these;
 * - website/docs/user-guide/features/api-server.md @ 0111cb7dd7e235c9b95f5902169a1f59eaae54c0.
 *
 * Start it as either generation (`generation: "older" | "newer"`, default newer) so executor tests run against
 * both. Runs play a script (`hermes.*` in script.ts) on their own; tests control progress with gates
 * and approvals and await what happened through hooks, never timers. `markerScript` (markers.ts)
 * plays what the real server does with its scripted model, so one scenario list runs against both.
 *
 * Parts: script.ts (the step builders), run.ts (a run: status, events, approvals, stop),
 * stream.ts (the queue and the SSE reader), routes.ts (one handler per route),
 * sessions.ts (the SessionDB), markers.ts (the real server's scripted model),
 * wire.ts (JSON/error bytes), client.ts (a raw client for the fake's own tests).
 *
 * @example
 * const fake = startFakeHermes({ generation: "older", apiKey: KEY, script: [
 *   hermes.delta("Deploying. "),
 *   hermes.approval({ command: "kubectl rollout restart deploy/web", description: "restart" }, {
 *     deny: [hermes.failed("the operator declined")],
 *   }),
 *   hermes.delta("Done."),
 *   hermes.completed(),
 * ]});
 * // ... the executor starts a run ...
 * const ask = await fake.approvalRequested();      // the approval.request event as sent
 * expect((await fake.runCreated()).request.sessionId).toBe(contextId);
 * fake.expireApproval();                           // or: the executor POSTs the answer
 * await fake.finished();
 * await fake.stop();
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { FakeRun, GatewayProcess, type RunContext, type RunRequest, type RunStatus } from "./run";
import { SessionDb } from "./sessions";
import { createRoutes, type HermesRequest } from "./routes";
import { hermes, type ApprovalOutcome, type HermesStep } from "./script";
import type { HermesEvent } from "./stream";
import type { Generation } from "./wire";
import { Conditions } from "../../helpers/until";

export { hermes, FakeRun };
export type { ApprovalOutcome, Generation, HermesEvent, HermesRequest, HermesStep, RunRequest, RunStatus };
export type { ApprovalBranches, ApprovalChoice, ApprovalSpec, Usage } from "./script";

export interface FakeHermesOptions {
  /** Which server to be. Default "newer". */
  generation?: Generation;
  /** The steps of every new run, or a function of what the run was asked. Default: echo the input. */
  script?: HermesStep[] | ((request: RunRequest) => HermesStep[]);
  /** API_SERVER_KEY. When set, every route but /health needs `Authorization: Bearer <key>`. */
  apiKey?: string;
  /** `max_concurrent_runs` (default 10; 0 disables). Newer counts runs still working, older open queues. */
  maxConcurrentRuns?: number;
  /** Silence before `: keepalive` (real: 30 s). */
  keepaliveMs?: number;
  /** How long GET /events waits for an unregistered queue before 404 (real: 1 s). */
  eventsGraceMs?: number;
  /** `approvals.timeout` (default: older 60 s as 0.18.2, newer 300 s). */
  approvalTimeoutMs?: number;
  /** MAX_REQUEST_BYTES (10 MB). */
  maxBodyBytes?: number;
  /**
   * A stopped run stays `stopping` until `finishStop(runId)` (an agent slow to reach a safe point; 0.18.2 about 2 s).
   */
  holdStops?: boolean;
  /** The advertised model name (`hermes-agent`). */
  modelName?: string;
}

export interface FakeHermes {
  readonly url: string;
  readonly generation: Generation;
  readonly requests: HermesRequest[];
  /** Every run created, in order, across restarts. */
  readonly runs: FakeRun[];
  run(id: string): FakeRun | undefined;
  /** What GET /v1/runs/{id} would answer now (undefined: 404), without a request in the log. */
  status(runId: string): RunStatus | undefined;

  /** Lets runs past `hermes.gate(label)`: one run, or every run waiting there (else the next to arrive). */
  release(label: string, runId?: string): void;
  /** The approval timeout elapses now for the oldest pending approval of the run (or of any run). */
  expireApproval(runId?: string): boolean;
  /** With `holdStops`: the stopped run's agent exits; the run ends cancelled. */
  finishStop(runId: string): void;
  /** The gateway drains: 503 `gateway_draining` for new runs (0.18.2 has the gate too). */
  drain(on?: boolean): void;
  /** As if the periodic sweep ran with every TTL passed: unread queues (transports) and old terminal statuses go. */
  sweep(what?: { transports?: boolean; statuses?: boolean }): void;
  /** The gateway process restarts on the same port: connections cut, memory lost (newer keeps idempotent runs). */
  restart(): Promise<void>;
  /**
   * The gateway stops gracefully (SIGTERM): every run in flight is cancelled, its stream gets a bare
   * `run.cancelled` and `: stream closed`, then the port closes (until `up()`); its runs are forgotten.
   */
  shutdown(): Promise<void>;
  /** The SessionDB: each session's messages (outlives restarts). */
  readonly sessions: SessionDb;
  /** The process is gone (connections refused) until `up()`. */
  down(): Promise<void>;
  up(): Promise<void>;
  stop(): Promise<void>;

  // Hooks: each resolves once the thing happened (including before the call). runId omitted = any run.
  runCreated(n?: number): Promise<FakeRun>;
  streamOpened(runId?: string, n?: number): Promise<FakeRun>;
  /** The client of an events stream went away (the server notices only at its next write). */
  clientLeft(runId?: string, n?: number): Promise<FakeRun>;
  /** The server dropped the run's queue: its reader ended or failed a write. Later GET /events: 404. */
  queueDropped(runId?: string, n?: number): Promise<FakeRun>;
  approvalRequested(runId?: string, n?: number): Promise<HermesEvent>;
  approvalAnswered(runId?: string, n?: number): Promise<FakeRun["answers"][number]>;
  approvalExpired(runId?: string, n?: number): Promise<HermesEvent>;
  gateReached(label: string, runId?: string): Promise<FakeRun>;
  stopRequested(runId?: string, n?: number): Promise<FakeRun>;
  /** The run ended (completed, failed or cancelled; a run killed by a restart never ends). */
  finished(runId?: string): Promise<FakeRun>;
  /** The run ended cancelled (after a stop). */
  stopped(runId?: string): Promise<FakeRun>;
  /** n events of the run were written to a connected reader. */
  eventsRead(runId: string, n: number): Promise<FakeRun>;
  /** n readers wait on the run's queue. */
  readersWaiting(runId: string, n: number): Promise<FakeRun>;
  requestReceived(match: (r: HermesRequest) => boolean, n?: number): Promise<HermesRequest>;
}

export function startFakeHermes(options: FakeHermesOptions = {}): FakeHermes {
  const gen: Generation = options.generation ?? "newer";
  const requests: HermesRequest[] = [];
  const allRuns: FakeRun[] = [];
  const conditions = new Conditions();
  const changed = conditions.changed;
  const ctx: RunContext = {
    generation: gen,
    approvalTimeoutMs: options.approvalTimeoutMs ?? (gen === "older" ? 60_000 : 300_000),
    holdStops: options.holdStops ?? false,
    durable: new Map(),
    earlyReleases: new Map(),
    sessions: new SessionDb(),
    changed,
  };
  const { route, owns, statusFor } = createRoutes({
    gen,
    apiKey: options.apiKey,
    limit: options.maxConcurrentRuns ?? 10,
    keepaliveMs: options.keepaliveMs ?? 30_000,
    graceMs: options.eventsGraceMs ?? 1_000,
    maxBody: options.maxBodyBytes ?? 10_000_000,
    modelName: options.modelName ?? "hermes-agent",
    script: options.script,
    ctx,
    idempotency: new Map(),
    allRuns,
    waitFor(probe, ms) {
      let expired = false;
      return new Promise<void>((resolve) => {
        const timer = setTimeout(() => ((expired = true), changed()), ms);
        conditions.watch(() => {
          if (!probe() && !expired) return false;
          clearTimeout(timer);
          resolve();
          return true;
        });
        changed();
      });
    },
  });
  let proc = new GatewayProcess();
  let server: Server | undefined;
  let port = 0;

  const until = <T>(probe: () => T | undefined): Promise<T> => conditions.until(probe);
  const pick = (runId?: string) => (runId ? allRuns.filter((r) => r.id === runId) : allRuns);
  const findRun = (runId: string | undefined, test: (r: FakeRun) => boolean) => pick(runId).find(test);

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const p = proc;
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const text = Buffer.concat(chunks).toString("utf8");
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(req.headers))
      if (v !== undefined) headers[k] = Array.isArray(v) ? v.join(", ") : v;
    let body: any;
    try {
      body = text ? JSON.parse(text) : undefined;
    } catch {
      body = undefined;
    }
    const auth = headers.authorization;
    const path = new URL(req.url ?? "/", "http://fake").pathname;
    const bearer = auth?.startsWith("Bearer ") ? { bearer: auth.slice(7) } : {};
    const entry: HermesRequest = { method: req.method ?? "GET", path, headers, text, body, ...bearer };
    requests.push(entry);
    changed();
    const answer = await route(p, entry);
    if (answer instanceof Response) {
      entry.status = answer.status;
      res.writeHead(answer.status, Object.fromEntries(answer.headers));
      res.end(Buffer.from(await answer.arrayBuffer()));
    } else {
      entry.status = 200;
      res.writeHead(200, answer.headers);
      res.flushHeaders(); // aiohttp's response.prepare(): the client has its 200 before any event
      answer.start({
        write: (t) => void res.write(t),
        end: () => res.end(),
        onGone: (cb) => res.on("close", () => !res.writableFinished && cb()),
      });
    }
    changed();
  }

  function serve(): Promise<void> {
    proc = new GatewayProcess();
    const s = createServer((req, res) => void handle(req, res));
    server = s;
    return new Promise((resolve) => {
      s.listen(port, "127.0.0.1", () => resolve());
      port = (s.address() as AddressInfo).port; // Bun binds synchronously: the URL is known at once
    });
  }

  async function down(): Promise<void> {
    proc.alive = false;
    for (const run of proc.runs.values()) run.kill();
    const s = server;
    server = undefined;
    if (s) {
      const closed = new Promise((resolve) => s.close(resolve));
      s.closeAllConnections(); // the process died: every connection is cut mid-answer
      await closed;
    }
    changed();
  }

  /** Resolves once probe() holds (re-checked on every change), or after a second. */
  function waitForQuiet(probe: () => boolean): Promise<void> {
    return new Promise<void>((resolve) => {
      const timer = setTimeout(() => ((expired = true), changed()), 1000);
      let expired = false;
      conditions.watch(() => {
        if (!probe() && !expired) return false;
        clearTimeout(timer);
        resolve();
        return true;
      });
      changed();
    });
  }

  void serve();

  return {
    get url() {
      return `http://127.0.0.1:${port}`;
    },
    generation: gen,
    requests,
    runs: allRuns,
    run: (id) => allRuns.find((r) => r.id === id),
    status: (id) => (gen === "older" ? proc.statuses.get(id) : owns(proc, id) ? statusFor(proc, id) : undefined),
    release(label, runId) {
      if (runId) allRuns.find((r) => r.id === runId)?.release(label);
      else {
        const waiting = allRuns.filter((r) => r.active && r.waitingAt === label);
        for (const r of waiting) r.release(label);
        if (waiting.length === 0) ctx.earlyReleases.set(label, (ctx.earlyReleases.get(label) ?? 0) + 1);
      }
      changed();
    },
    expireApproval: (runId) => !!findRun(runId, (r) => r.active && r.pending.length > 0)?.expire(),
    finishStop: (runId) => allRuns.find((r) => r.id === runId)?.finishStop(),
    drain(on = true) {
      proc.draining = on;
    },
    sweep({ transports = true, statuses = true } = {}) {
      if (transports)
        for (const id of [...proc.streamCreated.keys()]) {
          if (proc.subscribers.has(id)) continue; // a connected reader keeps draining
          proc.streams.delete(id);
          proc.streamCreated.delete(id);
          const run = proc.runs.get(id);
          // Live control state stays until the task returns (0.18.2 and newer; older ones forgot the agent).
          if (!proc.live.has(id)) {
            run?.resolve("deny", { all: true });
            proc.live.delete(id);
            proc.approvalSessions.delete(id);
          }
        }
      // `_RUN_STATUS_TTL`: completed/failed/cancelled statuses go (not interrupted ones).
      if (statuses)
        for (const [id, st] of [...proc.statuses])
          if (["completed", "failed", "cancelled"].includes(String(st.status))) proc.statuses.delete(id);
      changed();
    },
    async restart() {
      await down();
      await serve();
    },
    async shutdown() {
      const p = proc;
      const inFlight = [...p.live.values()];
      for (const run of inFlight) run.cancelByShutdown();
      // The cancelled runs' readers write their last frames before the port closes.
      await waitForQuiet(() => inFlight.every((r) => r.queue.buffered === 0 || !p.streams.has(r.id)));
      await down();
    },
    sessions: ctx.sessions,
    down,
    up: () => (server ? Promise.resolve() : serve()),
    async stop() {
      await down();
      for (const run of allRuns) run.kill();
    },

    runCreated: (n = 1) => until(() => allRuns[n - 1]),
    streamOpened: (runId, n = 1) => until(() => findRun(runId, (r) => r.streamsOpened >= n)),
    clientLeft: (runId, n = 1) => until(() => findRun(runId, (r) => r.clientsLeft >= n)),
    queueDropped: (runId, n = 1) => until(() => findRun(runId, (r) => r.queuesDropped >= n)),
    approvalRequested: (runId, n = 1) =>
      until(() => findRun(runId, (r) => r.approvalRequests.length >= n)?.approvalRequests[n - 1]),
    approvalAnswered: (runId, n = 1) => until(() => findRun(runId, (r) => r.answers.length >= n)?.answers[n - 1]),
    approvalExpired: (runId, n = 1) => until(() => findRun(runId, (r) => r.expired.length >= n)?.expired[n - 1]),
    gateReached: (label, runId) => until(() => findRun(runId, (r) => r.waitingAt === label)),
    stopRequested: (runId, n = 1) => until(() => findRun(runId, (r) => r.stopRequests >= n)),
    finished: (runId) => until(() => findRun(runId, (r) => r.outcome !== undefined)),
    stopped: (runId) => until(() => findRun(runId, (r) => r.outcome === "cancelled")),
    eventsRead: (runId, n) => until(() => findRun(runId, (r) => r.read.length >= n)),
    readersWaiting: (runId, n) => until(() => findRun(runId, (r) => r.queue.waiting >= n)),
    requestReceived: (match, n = 1) => until(() => requests.filter(match)[n - 1]),
  };
}
