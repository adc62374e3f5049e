/**
 * Twin of the Hermes A2A plugin's inbound server: plugins/platforms/a2a/adapter.py (NousResearch/hermes-agent @
 * 022a7d69f64112eaab2c5e25b9af8a91b9b8bb29, the stdlib design: `A2ARequestHandler`, `A2AAdapter`), with
 * protocol.py (./wire.ts) and security.py (./security.ts). See ./index.ts for what the twin leaves out.
 *
 * What a caller meets, as the source has it:
 * - JSON-RPC 2.0 only, POST to any path; no HTTP+JSON binding. v1.0 method names and their v0.3 aliases.
 * - Bearer tokens: per-peer (A2A_PEER_TOKENS, the caller is the peer's name) or shared (A2A_BEARER_TOKEN, the
 *   caller is `ip:ADDR`); none configured = localhost only, no authentication. A bad token is HTTP 401 with a
 *   JSON-RPC error -32050 and no WWW-Authenticate.
 * - `A2A-Version`: absent or empty is 1.0; "1.0" and "1.0.0" pass; anything else is -32602 (HTTP 200).
 * - The card mixes v0.3 into v1.0: top-level `url`, `securitySchemes: {bearer: {type: "http", scheme:
 *   "bearer"}}` and `security: [{bearer: []}]`; its URL is the request's Host (or A2A_PUBLIC_URL).
 * - SendMessage answers at once with the task WORKING (a receipt, whatever `returnImmediately` says); the task
 *   ids are `task-…`, contexts `ctx-…`; a message's `taskId` and `messageId` are not read (every message is a
 *   new task of its context); more than A2A_MAX_PINGPONG_TURNS (5) messages in one context are REJECTED.
 * - SendStreamingMessage: SSE whose frames are JSON-RPC responses: the task (SUBMITTED), WORKING, then at the
 *   end the reply as one artifactUpdate and the final statusUpdate, then the comment `: done` and the
 *   connection closes. A task that ends at once (rejected) streams only its statusUpdate, no task first. The
 *   reply on the stream is the agent's raw text: a reply starting [INPUT_REQUIRED] streams as COMPLETED with
 *   the marker, while GetTask says INPUT_REQUIRED (the store's copy is finalized, the stream's is not).
 * - SubscribeToTask sends no task first: only the terminal events, also for a task that has already ended.
 * - CancelTask marks the task CANCELED (the agent's turn goes on; its reply is dropped).
 * - Push: the terminal status (and INPUT_REQUIRED) POSTed as `{statusUpdate}` to a callback set inline
 *   (configuration.taskPushNotificationConfig) or by CreateTaskPushNotificationConfig, signed with
 *   X-A2A-Signature = hex HMAC-SHA256 (A2A_PUSH_SECRET, else the shared token) over the payload re-serialized
 *   with sorted keys; refused for loopback/private callbacks unless the node is localhost-only.
 */
import type { Server } from "node:net";
import type { AddressInfo } from "node:net";
import { http10Server, readBody, type Http10Request, type Http10Response } from "./http10";
import { PyFloat, pyDumps } from "./py-json";
import { isSafeCallbackUrl, redactOutbound, SecurityContext, wrapInbound, type SecuritySettings } from "./security";
import {
  artifactUpdate,
  buildAgentCard,
  buildTask,
  ERR,
  extractContextId,
  extractText,
  INPUT_REQUIRED_MARKER,
  jsonrpcError,
  jsonrpcResult,
  newContextId,
  newTaskId,
  nowIso,
  sendMessageResponse,
  skillsFromToolsets,
  SSE_DONE,
  sseData,
  STATE,
  statusUpdate,
  TERMINAL_STATES,
  uuidHex,
} from "./wire";

type Json = Record<string, unknown>;

/** What the live agent session is handed: the framed text, as a MessageEvent of the gateway. */
export interface AgentTurn {
  taskId: string;
  contextId: string;
  peer: string;
  /** The text the agent reads: the privacy frame, then the filtered message. */
  framed: string;
  /** The filtered message alone (the frame stripped), for scripts. */
  text: string;
}

/**
 * How the turn ends: `reply` is the agent's final answer (adapter.send with metadata.notify, given to the
 * oldest task still waiting in that context); `outcome` is on_processing_complete's (failure → FAILED,
 * cancelled → CANCELED, success without a reply → COMPLETED with no text).
 */
export interface AgentAnswer {
  reply?: string;
  outcome?: "success" | "failure" | "cancelled";
}

export type Agent = (turn: AgentTurn) => Promise<AgentAnswer>;

export interface HermesA2AServerOptions extends SecuritySettings {
  /** A2A_PORT / extra.port; the plugin's default is 9900. Tests pass 0. */
  port?: number;
  /** A2A_AGENT_NAME (default hermes-<hostname>). */
  agentName?: string;
  /** A2A_PUBLIC_URL. */
  publicUrl?: string;
  /** A2A_RATE_LIMIT, requests a minute per identity (default 60). */
  rateLimit?: number;
  /** A2A_MAX_PINGPONG_TURNS (default 5, at most 20). */
  maxPingpongTurns?: number;
  /** A2A_REPLY_TIMEOUT in seconds (default 300): how long a stream watches before it closes. */
  replyTimeoutS?: number;
  /** _SSE_KEEPALIVE (5 s in the source). */
  keepaliveMs?: number;
  /** The agent session. Default: `defaultAgent` (see there). */
  agent?: Agent;
}

interface TaskRecord {
  taskId: string;
  contextId: string;
  peer: string;
  state: string;
  reply: string;
  createdIso: string;
  pushUrl: string;
  pushConfigId: string;
}

/** concurrent.futures.Future, enough of it: one result, callbacks run when it is set, waiters wake after. */
class Future<T> {
  done = false;
  value?: T;
  private readonly callbacks: ((v: T) => void)[] = [];
  private readonly waiters: ((v: T) => void)[] = [];

  setResult(v: T): void {
    if (this.done) return;
    this.done = true;
    this.value = v;
    for (const w of this.waiters.splice(0)) w(v);
    for (const cb of this.callbacks.splice(0)) cb(v);
  }

  addDoneCallback(cb: (v: T) => void): void {
    if (this.done) cb(this.value as T);
    else this.callbacks.push(cb);
  }

  /** The result, or undefined after `ms` (Python's FuturesTimeout). */
  result(ms: number): Promise<T | undefined> {
    if (this.done) return Promise.resolve(this.value);
    return new Promise((resolve) => {
      const t = setTimeout(() => {
        this.waiters.splice(this.waiters.indexOf(w), 1);
        resolve(undefined);
      }, ms);
      const w = (v: T) => {
        clearTimeout(t);
        resolve(v);
      };
      this.waiters.push(w);
    });
  }
}

type Outcome = [state: string, text: string];

/** A push the twin POSTed, as the receiver got it. */
export interface SentPush {
  url: string;
  status?: number;
  error?: string;
}

/** Something the twin did with a request, in order (what a test asks "did Hermes see …?"). */
export interface SeenRequest {
  method: string;
  path: string;
  rpcMethod?: string;
  headers: Record<string, string>;
  body?: unknown;
  status?: number;
}

/**
 * The default agent, a scripted one (the model is what cannot run here):
 * "[ask]" replies `[INPUT_REQUIRED] Which environment: staging or production?`; "[fail]" fails the turn;
 * "[hold]" waits for `release(taskId, reply)`; anything else replies `Hermes heard: TEXT`.
 */
export function defaultAgent(server: () => HermesA2AServer): Agent {
  return async (turn) => {
    if (turn.text.includes("[hold]")) return { reply: await server().held(turn.taskId) };
    if (turn.text.includes("[ask]"))
      return { reply: `${INPUT_REQUIRED_MARKER} Which environment: staging or production?` };
    if (turn.text.includes("[fail]")) return { outcome: "failure" };
    return { reply: `Hermes heard: ${turn.text}` };
  };
}

const METHODS: Record<string, [op: string, v1: boolean]> = {
  SendMessage: ["send", true],
  "message/send": ["send", false],
  SendStreamingMessage: ["stream", true],
  "message/stream": ["stream", false],
  GetTask: ["get", true],
  "tasks/get": ["get", false],
  ListTasks: ["list", true],
  "tasks/list": ["list", false],
  CancelTask: ["cancel", true],
  "tasks/cancel": ["cancel", false],
  SubscribeToTask: ["subscribe", true],
  "tasks/subscribe": ["subscribe", false],
  CreateTaskPushNotificationConfig: ["push_create", true],
  "tasks/pushNotificationConfig/create": ["push_create", false],
  "tasks/pushNotificationConfig/set": ["push_create", false],
  "tasks/pushNotification/set": ["push_create", false],
  GetTaskPushNotificationConfig: ["push_get", true],
  "tasks/pushNotificationConfig/get": ["push_get", false],
  ListTaskPushNotificationConfigs: ["push_list", true],
  "tasks/pushNotificationConfig/list": ["push_list", false],
  DeleteTaskPushNotificationConfig: ["push_delete", true],
  "tasks/pushNotificationConfig/delete": ["push_delete", false],
};

const MAX_BODY = 1_048_576;

export class HermesA2AServer {
  readonly security: SecurityContext;
  readonly requests: SeenRequest[] = [];
  readonly turns: AgentTurn[] = [];
  readonly pushes: SentPush[] = [];
  private server?: Server;
  private readonly tasks = new Map<string, TaskRecord>();
  private readonly watchers = new Map<string, Future<Outcome>[]>();
  private readonly pending = new Map<string, { contextId: string; future: Future<Outcome> }>();
  private readonly pendingOrder = new Map<string, string[]>();
  private readonly turnCounts = new Map<string, number>();
  private readonly buckets = new Map<string, number[]>();
  private readonly holds = new Map<string, { promise: Promise<string>; resolve(text: string): void }>();
  private readonly turnWaiters: ((t: AgentTurn) => void)[] = [];
  private readonly pushWaiters: ((p: SentPush) => void)[] = [];
  private readonly agent: Agent;
  private port = 0;

  constructor(private readonly options: HermesA2AServerOptions = {}) {
    this.security = new SecurityContext(options);
    this.agent = options.agent ?? defaultAgent(() => this);
  }

  get host(): string {
    return this.security.resolveBindHost();
  }

  get url(): string {
    return `http://${this.host}:${this.port}`;
  }

  async start(): Promise<this> {
    this.server = http10Server({ GET: (q, r) => this.doGet(q, r), POST: (q, r) => this.doPost(q, r) });
    await new Promise<void>((resolve, reject) => {
      this.server!.once("error", reject);
      this.server!.listen(this.options.port ?? 9900, this.host, () => resolve());
    });
    this.port = (this.server.address() as AddressInfo).port;
    return this;
  }

  async stop(): Promise<void> {
    // disconnect(): pending replies fail so blocked handlers return.
    for (const { future } of this.pending.values()) future.setResult([STATE.FAILED, "[agent shutting down]"]);
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }

  /** The message the agent is handed after the first `after` (count them before the request that causes it). */
  nextTurn(after: number): Promise<AgentTurn> {
    if (this.turns.length > after) return Promise.resolve(this.turns[after]);
    return new Promise((resolve) => this.turnWaiters.push(resolve));
  }

  /** The push the twin sends after the first `after` (count them before the request that causes it). */
  nextPush(after: number): Promise<SentPush> {
    if (this.pushes.length > after) return Promise.resolve(this.pushes[after]);
    return new Promise((resolve) => this.pushWaiters.push(resolve));
  }

  /** A "[hold]" turn of the default agent: resolves when `release` is called for its task. */
  held(taskId: string): Promise<string> {
    let h = this.holds.get(taskId);
    if (!h) {
      let resolve!: (t: string) => void;
      const promise = new Promise<string>((r) => (resolve = r));
      h = { promise, resolve };
      this.holds.set(taskId, h);
    }
    return h.promise;
  }

  release(taskId: string, reply: string): void {
    void this.held(taskId);
    this.holds.get(taskId)!.resolve(reply);
  }

  /** The stored state of a task (what GetTask would say), for tests. */
  stateOf(taskId: string): string | undefined {
    return this.tasks.get(taskId)?.state;
  }

  // ── HTTP ─────────────────────────────────────────────────────────────

  private publicUrl(req: Http10Request): string {
    if (this.options.publicUrl?.trim()) return this.options.publicUrl.trim();
    const host = (req.headers.get("x-forwarded-host") || req.headers.get("host") || "").split(",")[0].trim();
    if (!host) return "";
    const scheme = (req.headers.get("x-forwarded-proto") || "http").split(",")[0].trim();
    return `${scheme}://${host}/`;
  }

  private card(req: Http10Request): Json {
    let base = this.publicUrl(req) || `http://${this.host}:${this.port}/`;
    if (!base.endsWith("/")) base += "/";
    return buildAgentCard({
      name: this.options.agentName ?? "hermes-twin",
      url: base,
      description: "Hermes Agent — a general-purpose agent reachable over A2A.",
      skills: skillsFromToolsets([]),
      streaming: true,
      pushNotifications: true,
      authRequired: !this.security.localhostOnly(),
    });
  }

  private see(req: Http10Request, extra: Partial<SeenRequest> = {}): SeenRequest {
    const seen: SeenRequest = {
      method: req.method,
      path: req.path,
      headers: Object.fromEntries(req.headers),
      ...extra,
    };
    this.requests.push(seen);
    return seen;
  }

  private async doGet(req: Http10Request, res: Http10Response): Promise<void> {
    const seen = this.see(req);
    const path = req.path.split("?")[0].replace(/\/+$/, "") || "/";
    const send = (code: number, body: Json) => {
      seen.status = code;
      res.json(code, pyDumps(body));
    };
    if (path === "/.well-known/agent.json" || path === "/.well-known/agent-card.json") return send(200, this.card(req));
    if (path === "/" || path === "/health") {
      const payload: Json = { status: "ok", agent: this.options.agentName ?? "hermes-twin" };
      if (
        this.security.localhostOnly() ||
        this.security.authenticate(req.headers.get("authorization"), req.clientIp) !== undefined
      )
        payload.served_agents = [
          {
            slug: "default",
            name: this.options.agentName ?? "hermes-twin",
            url: this.publicUrl(req) || `${this.url}/`,
            tenant: null,
            profile: "default",
            local: true,
          },
        ];
      return send(200, payload);
    }
    if (path === "/metrics") return send(200, { uptime_seconds: new PyFloat(0), avg_latency_ms: new PyFloat(0) });
    return send(404, { error: "not found" });
  }

  private async doPost(req: Http10Request, res: Http10Response): Promise<void> {
    const seen = this.see(req);
    const send = (code: number, body: Json) => {
      seen.status = code;
      res.json(code, pyDumps(body));
    };
    const identity = this.security.authenticate(req.headers.get("authorization"), req.clientIp);
    if (identity === undefined) return send(401, jsonrpcError(null, ERR.UNAUTHORIZED, "unauthorized"));

    let request: unknown;
    const lengthHeader = (req.headers.get("content-length") ?? "0").trim();
    if (!/^[+-]?\d+$/.test(lengthHeader)) return send(400, jsonrpcError(null, ERR.PARSE, "parse error"));
    const length = Number(lengthHeader);
    if (length > MAX_BODY) return send(413, jsonrpcError(null, ERR.PARSE, "payload too large"));
    try {
      const raw = length ? await readBody(req, length) : Buffer.from("{}");
      request = JSON.parse(raw.toString("utf8"));
    } catch {
      return send(400, jsonrpcError(null, ERR.PARSE, "parse error"));
    }
    seen.body = request;
    if (!request || typeof request !== "object" || Array.isArray(request))
      return send(400, jsonrpcError(null, ERR.INVALID_PARAMS, "JSON-RPC request must be an object"));
    const r = request as Json;
    const id = r.id;
    const method = r.method === undefined || r.method === null ? "" : String(r.method);
    seen.rpcMethod = method;
    let params = r.params ?? {};
    if (params === null) params = {};
    if (typeof params !== "object" || Array.isArray(params))
      return send(200, jsonrpcError(id, ERR.INVALID_PARAMS, "params must be an object"));
    const p = params as Json;

    const version = (req.headers.get("a2a-version") ?? "").trim();
    if (version && version !== "1.0" && version !== "1.0.0")
      return send(200, jsonrpcError(id, ERR.INVALID_PARAMS, `unsupported A2A-Version: ${version}`));

    if (!this.allow(identity)) return send(429, jsonrpcError(id, ERR.RATE_LIMITED, "rate limit exceeded"));
    if (!this.security.isTrustedPeer(identity))
      return send(403, jsonrpcError(id, ERR.UNTRUSTED_PEER, `peer '${identity}' not trusted`));

    const [op, v1] = METHODS[method] ?? ["", false];
    if (!op) return send(200, jsonrpcError(id, ERR.METHOD_NOT_FOUND, `method not found: ${method}`));
    switch (op) {
      case "send":
        return send(200, this.rpcSend(id, p, identity, v1));
      case "stream":
        seen.status = 200;
        return this.rpcStream(res, id, p, identity);
      case "get":
        return send(200, this.rpcGet(id, p));
      case "list":
        return send(200, this.rpcList(id, p));
      case "cancel":
        return send(200, this.rpcCancel(id, p));
      case "subscribe":
        seen.status = 200;
        return this.rpcSubscribe(res, id, p, (code, body) => send(code, body));
      case "push_create":
        return send(200, this.rpcPushCreate(id, p));
      case "push_get":
      case "push_list":
      case "push_delete":
        return send(200, this.rpcPushOther(op, id, p));
    }
  }

  /** RateLimiter.allow: a sliding minute per identity. */
  private allow(identity: string): boolean {
    const limit = Math.max(1, this.options.rateLimit ?? 60);
    const now = Date.now();
    const bucket = (this.buckets.get(identity) ?? []).filter((t) => now - t <= 60_000);
    this.buckets.set(identity, bucket);
    if (bucket.length >= limit) return false;
    bucket.push(now);
    return true;
  }

  // ── Tasks ────────────────────────────────────────────────────────────

  private maxTurns(): number {
    return Math.max(1, Math.min(this.options.maxPingpongTurns ?? 5, 20));
  }

  private create(taskId: string, contextId: string, peer: string): TaskRecord {
    const rec: TaskRecord = {
      taskId,
      contextId,
      peer,
      state: STATE.SUBMITTED,
      reply: "",
      createdIso: nowIso(),
      pushUrl: "",
      pushConfigId: "",
    };
    this.tasks.set(taskId, rec);
    return rec;
  }

  /** TaskStore.complete: to any state, unless already terminal (INPUT_REQUIRED is not); watchers hear it. */
  private complete(taskId: string, state: string, reply: string): void {
    const rec = this.tasks.get(taskId);
    if (!rec || TERMINAL_STATES.has(rec.state)) return;
    rec.state = state;
    rec.reply = reply;
    for (const w of this.watchers.get(taskId) ?? []) w.setResult([state, reply]);
    this.watchers.delete(taskId);
  }

  private toTask(rec: TaskRecord): Json {
    return buildTask(rec.taskId, rec.contextId, rec.state, rec.reply);
  }

  /** _prepare_task: a terminal task at once (rejected), or the pending one the agent works on. */
  private prepare(
    params: Json,
    peer: string,
  ): { terminal?: Json; pending?: { taskId: string; contextId: string; future: Future<Outcome> } } {
    const text = extractText(params);
    const contextId = extractContextId(params) || newContextId();
    const taskId = newTaskId();
    const turn = (this.turnCounts.get(contextId) ?? 0) + 1;
    this.turnCounts.set(contextId, turn);
    if (turn > this.maxTurns()) {
      this.create(taskId, contextId, peer);
      this.complete(taskId, STATE.REJECTED, "");
      return {
        terminal: buildTask(
          taskId,
          contextId,
          STATE.REJECTED,
          `Anti-loop protection: context ${contextId} exceeded ${this.maxTurns()} turns. Start a new context or increase A2A_MAX_PINGPONG_TURNS.`,
        ),
      };
    }
    if (!text) {
      this.create(taskId, contextId, peer);
      this.complete(taskId, STATE.REJECTED, "");
      return { terminal: buildTask(taskId, contextId, STATE.REJECTED, "Empty task — nothing to do.") };
    }
    const framed = wrapInbound(peer, text);
    const rec = this.create(taskId, contextId, peer);
    const cfg = (params.configuration as Json | undefined)?.taskPushNotificationConfig as Json | undefined;
    if (cfg && typeof cfg === "object") {
      const url = (cfg.url as string) || ((cfg.pushNotificationConfig as Json | undefined)?.url as string) || "";
      if (url) [rec.pushUrl, rec.pushConfigId] = [String(url), `cfg-${uuidHex().slice(0, 12)}`];
    }
    const future = new Future<Outcome>();
    this.pending.set(taskId, { contextId, future });
    this.pendingOrder.set(contextId, [...(this.pendingOrder.get(contextId) ?? []), taskId]);
    const turnInfo: AgentTurn = { taskId, contextId, peer, framed, text: framed.slice(framed.indexOf("]\n\n") + 3) };
    // handle_message runs on the gateway's loop: after this request handler has answered.
    setTimeout(() => this.runTurn(turnInfo), 0);
    if (rec.state !== STATE.COMPLETED && !TERMINAL_STATES.has(rec.state)) rec.state = STATE.WORKING;
    return { pending: { taskId, contextId, future } };
  }

  private async runTurn(turn: AgentTurn): Promise<void> {
    this.turns.push(turn);
    for (const w of this.turnWaiters.splice(0)) w(turn);
    let answer: AgentAnswer;
    try {
      answer = await this.agent(turn);
    } catch {
      answer = { outcome: "failure" };
    }
    if (answer.reply !== undefined) this.resolveOldestForContext(turn.contextId, [STATE.COMPLETED, answer.reply]);
    const outcome = answer.outcome ?? "success";
    this.resolveTask(
      turn.taskId,
      outcome === "failure"
        ? [STATE.FAILED, "[agent processing failed]"]
        : outcome === "cancelled"
          ? [STATE.CANCELED, ""]
          : [STATE.COMPLETED, ""],
    );
  }

  private resolveTask(taskId: string, outcome: Outcome): void {
    const p = this.pending.get(taskId);
    if (p && !p.future.done) p.future.setResult(outcome);
  }

  /** adapter.send(): the context's oldest task still waiting gets the reply; none waiting, it is dropped. */
  private resolveOldestForContext(contextId: string, outcome: Outcome): void {
    for (const taskId of this.pendingOrder.get(contextId) ?? []) {
      const p = this.pending.get(taskId);
      if (p && !p.future.done) return p.future.setResult(outcome);
    }
  }

  private popPending(taskId: string): void {
    const p = this.pending.get(taskId);
    if (!p) return;
    this.pending.delete(taskId);
    const order = (this.pendingOrder.get(p.contextId) ?? []).filter((t) => t !== taskId);
    if (order.length) this.pendingOrder.set(p.contextId, order);
    else this.pendingOrder.delete(p.contextId);
  }

  /** _finalize_task: redaction, the [INPUT_REQUIRED] marker, the store, the push. */
  private finalize(taskId: string, contextId: string, [state0, reply0]: Outcome): void {
    this.popPending(taskId);
    let state = state0;
    let reply = redactOutbound(reply0 || "");
    if (state === STATE.COMPLETED) {
      const stripped = reply.trimStart();
      if (stripped.toUpperCase().startsWith(INPUT_REQUIRED_MARKER)) {
        state = STATE.INPUT_REQUIRED;
        reply = stripped.slice(INPUT_REQUIRED_MARKER.length).trim();
      }
    }
    this.complete(taskId, state, reply);
    void this.push(taskId, contextId, reply, state);
  }

  private finalizeWhenReplyArrives(pending: { taskId: string; contextId: string; future: Future<Outcome> }): void {
    pending.future.addDoneCallback((outcome) => this.finalize(pending.taskId, pending.contextId, outcome));
  }

  private rpcSend(id: unknown, params: Json, peer: string, v1: boolean): Json {
    const { terminal, pending } = this.prepare(params, peer);
    if (terminal) return jsonrpcResult(id, v1 ? sendMessageResponse(terminal) : terminal);
    this.finalizeWhenReplyArrives(pending!);
    const task = this.toTask(this.tasks.get(pending!.taskId)!);
    return jsonrpcResult(id, v1 ? sendMessageResponse(task) : task);
  }

  private sseHead(res: Http10Response): void {
    res.head(200, { "Content-Type": "text/event-stream", "Cache-Control": "no-cache" });
  }

  /**
   * _emit_terminal: the reply as an artifact then the state (COMPLETED), or the state with the reply as its message.
   */
  private emitTerminal(
    res: Http10Response,
    taskId: string,
    contextId: string,
    state: string,
    reply: string,
    id: unknown,
  ): void {
    if (reply && state === STATE.COMPLETED) {
      res.write(sseData(artifactUpdate(taskId, contextId, reply), id));
      res.write(sseData(statusUpdate(taskId, contextId, state), id));
    } else res.write(sseData(statusUpdate(taskId, contextId, state, reply), id));
    res.write(SSE_DONE);
  }

  /** _await_reply: the future's raw result, or WORKING once the reply timeout passed or the client left. */
  private async awaitReply(future: Future<Outcome>, res: Http10Response, deadline: number): Promise<Outcome> {
    const keepalive = this.options.keepaliveMs ?? 5000;
    for (;;) {
      const got = await future.result(Math.min(keepalive, Math.max(0, deadline - Date.now())));
      if (got) return got;
      if (Date.now() >= deadline) return [STATE.WORKING, ""];
      if (!res.write(": keepalive\n\n")) return [STATE.WORKING, ""];
    }
  }

  private async rpcStream(res: Http10Response, id: unknown, params: Json, peer: string): Promise<void> {
    this.sseHead(res);
    const { terminal, pending } = this.prepare(params, peer);
    if (terminal) {
      const status = terminal.status as Json;
      return this.emitTerminal(
        res,
        terminal.id as string,
        terminal.contextId as string,
        status.state as string,
        extractText((status.message as Json) ?? {}),
        id,
      );
    }
    const { taskId, contextId, future } = pending!;
    this.finalizeWhenReplyArrives(pending!);
    const initial = this.toTask(this.tasks.get(taskId)!);
    initial.status = { state: STATE.SUBMITTED, timestamp: nowIso() };
    res.write(sseData({ task: initial }, id));
    res.write(sseData(statusUpdate(taskId, contextId, STATE.WORKING), id));
    const [state, reply] = await this.awaitReply(future, res, Date.now() + (this.options.replyTimeoutS ?? 300) * 1000);
    this.emitTerminal(res, taskId, contextId, state, reply, id);
  }

  private rpcSubscribe(
    res: Http10Response,
    id: unknown,
    params: Json,
    json: (code: number, body: Json) => void,
  ): Promise<void> | void {
    const taskId = String(params.taskId || params.id || "");
    const rec = this.tasks.get(taskId);
    if (!rec) return json(200, jsonrpcError(id, ERR.TASK_NOT_FOUND, `task not found: ${taskId}`));
    this.sseHead(res);
    const future = new Future<Outcome>();
    if (TERMINAL_STATES.has(rec.state)) future.setResult([rec.state, rec.reply]);
    else this.watchers.set(taskId, [...(this.watchers.get(taskId) ?? []), future]);
    return (async () => {
      const deadline = Date.now() + (this.options.replyTimeoutS ?? 300) * 1000;
      const keepalive = this.options.keepaliveMs ?? 5000;
      let outcome: Outcome | undefined;
      for (;;) {
        outcome = await future.result(keepalive);
        if (outcome) break;
        if (Date.now() >= deadline) {
          outcome = [rec.state, rec.reply];
          break;
        }
        if (!res.write(": keepalive\n\n")) return;
      }
      this.emitTerminal(res, taskId, rec.contextId, outcome[0], outcome[1], id);
    })();
  }

  private rpcGet(id: unknown, params: Json): Json {
    const taskId = String(params.taskId || params.id || "");
    const rec = this.tasks.get(taskId);
    if (!rec) return jsonrpcError(id, ERR.TASK_NOT_FOUND, `task not found: ${taskId}`);
    return jsonrpcResult(id, this.toTask(rec));
  }

  private rpcList(id: unknown, params: Json): Json {
    const int = (v: unknown, d: number) => {
      const n =
        typeof v === "number" ? Math.trunc(v) : typeof v === "string" && /^\s*[+-]?\d+\s*$/.test(v) ? Number(v) : NaN;
      return Number.isNaN(n) || !v ? d : n;
    };
    const offset = Math.max(0, int(params.pageToken, 0));
    const pageSize = Math.max(1, Math.min(int(params.pageSize, 50), 100));
    const contextId = String(params.contextId || "");
    const state = String(params.status || params.state || "");
    const recs = [...this.tasks.values()]
      .reverse()
      .filter((r) => (!contextId || r.contextId === contextId) && (!state || r.state === state));
    const page = recs.slice(offset, offset + pageSize);
    const next = offset + pageSize < recs.length ? offset + pageSize : 0;
    const tasks = page.map((r) => {
      const t = this.toTask(r);
      if (!params.includeArtifacts) delete t.artifacts;
      return t;
    });
    return jsonrpcResult(id, { tasks, nextPageToken: next ? String(next) : "", pageSize, totalSize: recs.length });
  }

  private rpcCancel(id: unknown, params: Json): Json {
    const taskId = String(params.taskId || params.id || "");
    const rec = this.tasks.get(taskId);
    if (!rec) return jsonrpcError(id, ERR.TASK_NOT_FOUND, `task not found: ${taskId}`);
    if (TERMINAL_STATES.has(rec.state))
      return jsonrpcError(id, ERR.TASK_NOT_CANCELABLE, `task ${taskId} already ${rec.state}`);
    this.complete(taskId, STATE.CANCELED, "");
    this.turnCounts.delete(rec.contextId);
    this.resolveTask(taskId, [STATE.CANCELED, ""]);
    return jsonrpcResult(id, this.toTask(rec));
  }

  private pushView(rec: TaskRecord): Json {
    return {
      configId: rec.pushConfigId,
      taskId: rec.taskId,
      createdAt: rec.createdIso,
      pushNotificationConfig: { url: rec.pushUrl },
    };
  }

  private rpcPushCreate(id: unknown, params: Json): Json {
    const taskId = String(params.taskId || "");
    const cfg = ((params.pushNotificationConfig || params.config || {}) as Json) ?? {};
    const url = String(cfg.url || "");
    if (!taskId || !url) return jsonrpcError(id, ERR.INVALID_PARAMS, "taskId and pushNotificationConfig.url required");
    const rec = this.tasks.get(taskId);
    if (!rec) return jsonrpcError(id, ERR.TASK_NOT_FOUND, `task not found: ${taskId}`);
    [rec.pushUrl, rec.pushConfigId] = [url, `cfg-${uuidHex().slice(0, 12)}`];
    return jsonrpcResult(id, this.pushView(rec));
  }

  private rpcPushOther(op: string, id: unknown, params: Json): Json {
    const taskId = String(params.taskId || "");
    if (!taskId) return jsonrpcError(id, ERR.INVALID_PARAMS, "taskId required");
    const configId = String(params.id || params.configId || "");
    const rec = this.tasks.get(taskId);
    const found = rec && rec.pushUrl && (!configId || rec.pushConfigId === configId) ? rec : undefined;
    if (op === "push_list")
      return jsonrpcResult(id, { configs: found ? [this.pushView(found)] : [], nextPageToken: "" });
    if (!found) return jsonrpcError(id, ERR.TASK_NOT_FOUND, `push config not found for task: ${taskId}`);
    if (op === "push_get") return jsonrpcResult(id, this.pushView(found));
    found.pushUrl = found.pushConfigId = "";
    return jsonrpcResult(id, { deleted: true });
  }

  /** _send_push_notification: once per task (the URL is taken), guarded, signed, 10 s bound. */
  private async push(taskId: string, contextId: string, reply: string, state: string): Promise<void> {
    const rec = this.tasks.get(taskId);
    const url = rec?.pushUrl ?? "";
    if (rec) rec.pushUrl = "";
    if (!url) return;
    const sent: SentPush = { url };
    if (!isSafeCallbackUrl(url, this.security.localhostOnly())) sent.error = "blocked: unsafe callback URL";
    else {
      const payload = statusUpdate(taskId, contextId, state, (reply || "").slice(0, 2000));
      const signature = this.security.signPushPayload(payload);
      const headers: Record<string, string> = { "Content-Type": "application/json" };
      if (signature) headers["X-A2A-Signature"] = signature;
      try {
        const res = await fetch(url, {
          method: "POST",
          headers,
          body: pyDumps(payload),
          signal: AbortSignal.timeout(10_000),
        });
        await res.arrayBuffer();
        sent.status = res.status;
      } catch (err) {
        sent.error = String(err);
      }
    }
    this.pushes.push(sent);
    for (const w of this.pushWaiters.splice(0)) w(sent);
  }
}

export async function startHermesA2AServer(options: HermesA2AServerOptions = {}): Promise<HermesA2AServer> {
  return new HermesA2AServer(options).start();
}
