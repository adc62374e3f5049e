import type { RouterMetrics } from "../server/request-router";
import { REFUSAL_KINDS } from "../server/refusal-log";
import type { DescriptorState } from "../server/descriptor-budget";
import type { Arrival, TaskLifecycle } from "../tasks/lifecycle";
import type { Task, TaskState } from "../protocol/types";
import { registerProcessMetrics } from "./process-metrics";
import { STORAGE_LIMITS, type StorageLimit } from "../tasks/storage-quota";
import type { DiskFloorState } from "../store/disk-floor";
import { EXPOSITION_CONTENT_TYPE, Registry } from "./registry";

/** What the node's metrics read when scraped (the store, the runner, the listeners, the identity). */
export interface MetricSources {
  version: string;
  executor: string;
  startedAt: number;
  /** Stored tasks by state; may take a while (it runs in a worker), so its answer is reused for a few seconds. */
  taskStates(): Promise<{ state: string; n: number }[]>;
  load(): { running: number; queued: number; waitingForInput: number };
  /** Each listener's connections now (open, of which unauthenticated) and its cap. */
  listeners(): ListenerLoad[];
  /** Whether the process has run out of file descriptors, and how often it has. */
  descriptors(): DescriptorState;
  certificateNotAfter(): Date;
  /** The revocation list in force (its age in seconds and next update), when there is one. */
  revocationList?(): { ageSeconds: number; nextUpdate?: Date } | undefined;
  /** Bytes of answers built and not yet taken by their clients (see server/answer-budget.ts). */
  answerBytesHeld?(): number;
  /** The free-space floor's last reading (SQLite with min_free_disk; undefined otherwise). */
  diskFloor?(): DiskFloorState | undefined;
}

/** One listener's connections, for the gauges: "mtls", "token", "enroll", "plain" or "admin". */
export interface ListenerLoad {
  listener: string;
  open: number;
  /** Not authenticated yet (TLS handshakes in progress, token listener connections without a valid token). */
  unauthenticated?: number;
  max: number;
}

// Blocking SendMessage answers when its task ends, so requests run from sub-millisecond to minutes.
const REQUEST_BUCKETS = [
  0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300,
];
const TASK_BUCKETS = [0.005, 0.01, 0.05, 0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600];
const FINAL_STATES: TaskState[] = [
  "TASK_STATE_COMPLETED",
  "TASK_STATE_FAILED",
  "TASK_STATE_CANCELED",
  "TASK_STATE_REJECTED",
];
/** How long a reading of the tasks-by-state gauge is reused: scrapes more frequent than this cost nothing. */
const TASK_STATES_TTL_MS = 5000;

/**
 * The node's Prometheus metrics: the router and the task runner report into it (counter increments and
 * histogram observations only), and the gauges are read from their sources when /metrics is scraped.
 */
export class NodeMetrics implements RouterMetrics, TaskLifecycle {
  readonly registry = new Registry();
  private readonly requests = this.registry.histogram(
    "a2a_node_rpc_request_duration_seconds",
    "JSON-RPC requests by method, from the request read to the answer (for a stream, to its head); method 'unknown' for one this node does not serve.",
    "method",
    REQUEST_BUCKETS,
  );
  private readonly rpcErrors = this.registry.counter(
    "a2a_node_rpc_errors_total",
    "JSON-RPC error answers by error code.",
    "code",
  );
  private readonly acceptedTasks = this.registry
    .counter(
      "a2a_node_tasks_accepted_total",
      "Tasks taken by the runner: new ones, messages continuing one, and ones a restart resumed.",
      "arrival",
    )
    .preset(["new", "continued", "resumed"]);
  private readonly taskDuration = this.registry
    .histogram(
      "a2a_node_task_duration_seconds",
      "Tasks by final state, from accepted to the final state recorded (waits for input included).",
      "state",
      TASK_BUCKETS,
    )
    .preset(FINAL_STATES);
  private readonly executorDuration = this.registry
    .histogram(
      "a2a_node_executor_duration_seconds",
      "Time the executor spent on a task (the model's latency), by the task's final state; waits for input left out.",
      "state",
      TASK_BUCKETS,
    )
    .preset(FINAL_STATES);
  private readonly refused = this.registry
    .counter(
      "a2a_node_connections_refused_total",
      "Connections refused on any listener, and requests of callers the node could not name (bad bearer tokens, failed enrollments), by reason (every one, logged or not).",
      "reason",
    )
    .preset(REFUSAL_KINDS);
  private readonly httpRefused = this.registry
    .counter(
      "a2a_node_http_requests_refused_total",
      "Requests the HTTP loop refused before the node saw them, by status: 400 malformed, 408 too slow to arrive (slow-loris), 413 body too large, 431 head too large, 501/505 unsupported.",
      "status",
    )
    .preset(["400", "408", "413", "431", "501", "505"]);
  private readonly limited = this.registry.counter(
    "a2a_node_rate_limited_total",
    "A2A requests refused with HTTP 429 by the per-peer rate limit, by peer.",
    "peer",
  );
  private readonly storageRefusals = this.registry
    .counter(
      "a2a_node_storage_refused_total",
      "New tasks and messages refused for storage, by limit: a caller's quota (max_caller_bytes, max_caller_tasks) or the free-space floor (min_free_disk).",
      "limit",
    )
    .preset(STORAGE_LIMITS);
  private streams = 0;
  private states: { at: number; value: Promise<{ state: string; n: number }[]> } | undefined;

  constructor(private readonly sources: MetricSources) {
    const r = this.registry;
    r.collected("a2a_node_build_info", "The running binary: version and executor (always 1).", () => [
      [{ version: sources.version, executor: sources.executor }, 1],
    ]);
    r.collected("a2a_node_uptime_seconds", "Seconds since the node started.", () =>
      Math.round((Date.now() - sources.startedAt) / 1000),
    );
    r.collected("a2a_node_tasks", "Stored tasks by state (read from the database, at most every 5 s).", () =>
      this.lastStates?.map(({ state, n }) => [{ state }, n]),
    );
    r.collected("a2a_node_tasks_running", "Tasks executing now.", () => sources.load().running);
    r.collected(
      "a2a_node_tasks_queued",
      "Tasks waiting for an execution slot (queue depth).",
      () => sources.load().queued,
    );
    r.collected(
      "a2a_node_tasks_waiting_for_input",
      "Tasks whose execution waits for an answer (INPUT_REQUIRED, holding no slot).",
      () => sources.load().waitingForInput,
    );
    r.collected(
      "a2a_node_sse_streams",
      "Server-sent event streams open now (SendStreamingMessage, SubscribeToTask).",
      () => this.streams,
    );
    r.collected(
      "a2a_node_connections_open",
      "Connections open on each listener, TLS handshakes in progress included.",
      () => sources.listeners().map((l) => [{ listener: l.listener }, l.open]),
    );
    r.collected(
      "a2a_node_connections_unauthenticated",
      "Of those, the ones not authenticated yet (evicted first when the listener is full).",
      () =>
        sources
          .listeners()
          .flatMap((l) =>
            l.unauthenticated === undefined
              ? []
              : [[{ listener: l.listener }, l.unauthenticated] as [{ listener: string }, number]],
          ),
    );
    r.collected(
      "a2a_node_connections_max",
      "Each listener's cap on open connections (max_connections, lowered to fit the file descriptor limit).",
      () => sources.listeners().map((l) => [{ listener: l.listener }, l.max]),
    );
    r.collected(
      "a2a_node_descriptors_exhausted",
      "1 while the process has no file descriptor free (no listener can accept), else 0.",
      () => (sources.descriptors().exhausted ? 1 : 0),
    );
    r.collected(
      "a2a_node_descriptors_exhausted_total",
      "Times the process ran out of file descriptors (a run of failed checks, one a second, counts once).",
      () => sources.descriptors().exhaustions,
      "counter",
    );
    r.collected(
      "a2a_node_certificate_expiry_timestamp_seconds",
      "When this node's certificate expires (unix time).",
      () => Math.floor(sources.certificateNotAfter().getTime() / 1000),
    );
    r.collected(
      "a2a_node_crl_age_seconds",
      "Seconds since the CA signed the revocation list in force (absent: none). The CA node signs one every crl_refresh_seconds.",
      () => {
        const list = sources.revocationList?.();
        return list && Math.round(list.ageSeconds);
      },
    );
    r.collected(
      "a2a_node_crl_next_update_timestamp_seconds",
      "When the revocation list in force goes stale (its next update, unix time; absent: no list). Alert on time() > this.",
      () => {
        const next = sources.revocationList?.()?.nextUpdate;
        return next && Math.floor(next.getTime() / 1000);
      },
    );
    r.collected(
      "a2a_node_disk_free_bytes",
      "Bytes free on the database's file system, as last read by the free-space floor (SQLite with min_free_disk only).",
      () => {
        const f = sources.diskFloor?.();
        return f && Number.isFinite(f.freeBytes) ? f.freeBytes : undefined;
      },
    );
    r.collected(
      "a2a_node_disk_floor_refusing",
      "Callers refused for want of disk space: 0 none, 1 the heaviest caller (below min_free_disk), 2 every caller (below half of it).",
      () => {
        const f = sources.diskFloor?.();
        return f ? ({ none: 0, heaviest: 1, all: 2 } as const)[f.refusing] : undefined;
      },
    );
    if (sources.answerBytesHeld)
      r.collected(
        "a2a_node_answer_bytes_held",
        "Bytes of answers built and not yet taken by their clients (bounded by answer_bytes_in_flight).",
        () => sources.answerBytesHeld!(),
      );
    registerProcessMetrics(r, sources.startedAt);
  }

  private lastStates: { state: string; n: number }[] | undefined;

  /** Everything, in the Prometheus text format; reads the stored tasks by state first if the last reading is old. */
  async render(): Promise<string> {
    const now = Date.now();
    if (!this.states || now - this.states.at > TASK_STATES_TTL_MS)
      this.states = { at: now, value: this.sources.taskStates() };
    try {
      this.lastStates = await this.states.value;
    } catch {
      this.lastStates = undefined; // the database does not answer: the gauge is left out (GET /health/ready says why)
    }
    return this.registry.render();
  }

  /** What GET /metrics answers: the text and the exposition format's content type. */
  async exposition(): Promise<{ contentType: string; body: string }> {
    return { contentType: EXPOSITION_CONTENT_TYPE, body: await this.render() };
  }

  // RouterMetrics
  rpc(method: string | undefined, seconds: number, errorCode: number | undefined): void {
    this.requests.get(method ?? "unknown").observe(seconds);
    if (errorCode !== undefined) this.rpcErrors.get(String(errorCode)).inc();
  }
  streamOpened(): void {
    this.streams++;
  }
  streamClosed(): void {
    this.streams--;
  }
  rateLimited(peer: string): void {
    this.limited.get(peer).inc();
  }

  /** A new task or message refused by a storage quota or the free-space floor. */
  storageRefused(limit: StorageLimit): void {
    this.storageRefusals.get(limit).inc();
  }

  /** A request the HTTP loop refused, by its status. */
  requestRefused(status: number): void {
    this.httpRefused.get(String(status)).inc();
  }

  /** A refused connection, by classify()'s kind. */
  connectionRefused(kind: string): void {
    this.refused.get(kind).inc();
  }

  // TaskLifecycle
  accepted(_task: Task, _peer: string, arrival: Arrival): void {
    this.acceptedTasks.get(arrival).inc();
  }
  waitingForInput(): void {}
  answered(): void {}
  finished(_task: Task, _peer: string, state: TaskState, seconds: number, executorSeconds: number): void {
    this.taskDuration.get(state).observe(seconds);
    this.executorDuration.get(state).observe(executorSeconds);
  }
  leftForRestart(): void {}
}
