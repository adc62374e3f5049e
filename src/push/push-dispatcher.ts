import type { Logger } from "../log";
import type { StreamResponse } from "../protocol/types";
import type { DeliveryQueue } from "./delivery-queue";
import { newId } from "../clock";
import type { QueuedWithEvent } from "../tasks/task-store";
import { FairScheduler } from "./fair-scheduler";
import type { PushFetch } from "./pinned-fetch";
import type { PushConfigStore, StoredPushConfig } from "./push-config-store";
import type { WebhookTarget } from "./ssrf-guard";
import { postDelivery } from "./webhook-post";

/** Events of one task waiting for one look-up of its configs (see PushDispatcher.notify). */
interface EventBatch {
  events: { event: StreamResponse; owner?: string }[];
  queued: Promise<void>;
}

export type { PushFetch } from "./pinned-fetch";

/** Defaults of the delivery limits (also the serve defaults, see config.ts). */
export const PUSH_DEFAULTS = { timeoutMs: 10_000, concurrency: 8, hostConcurrency: 2, callerConcurrency: 4 } as const;

export interface PushDispatcherOptions {
  /** Attempts per delivery before it is abandoned (default 10: about 8.5 minutes of retrying at the default base). */
  maxAttempts?: number;
  /** Delay after the first failure; doubles per attempt (default 1000 ms). */
  backoffBaseMs?: number;
  /** Ceiling of the delay (default 5 minutes). */
  backoffMaxMs?: number;
  /** Per-request timeout, DNS lookup included (default 10 s; the spec suggests 10-30 s). */
  timeoutMs?: number;
  /** Requests in flight at once across all webhooks (default 8). */
  concurrency?: number;
  /** Requests in flight at once to one webhook host name (default 2). */
  hostConcurrency?: number;
  /** Requests in flight at once for the webhooks of one caller, the owner of the configs (default 4). */
  callerConcurrency?: number;
  /**
   * Resolves and checks the URL before each attempt (a WebhookGuard); the request then goes to the checked
   * address. Omitted = no check, fetch resolves the name itself (tests only).
   */
  guard?: { resolve(url: string): Promise<WebhookTarget> };
  fetch?: PushFetch;
  /** Milliseconds since the epoch. */
  clock?: () => number;
  /** [0, 1), for the jitter. */
  random?: () => number;
  log?: Logger;
}

/** Delay before attempt `attempts + 1`, after `attempts` failures: base·2^(n-1), ±20 % jitter, capped. */
export function backoffDelay(
  attempts: number,
  baseMs: number,
  maxMs: number,
  random: () => number = Math.random,
): number {
  const exp = baseMs * 2 ** Math.min(Math.max(attempts - 1, 0), 30);
  // Jitter spreads the retries of many deliveries that failed together (a receiver restart) so they do not
  // come back as one burst.
  return Math.min(maxMs, Math.round(exp * (0.8 + 0.4 * random())));
}

/** The deliveries of one (task, config), in order; only its head is ever attempted. */
interface Lane {
  taskId: string;
  configId: string;
  /** Who registered the config, and the host name of its URL: the keys of the fair share. */
  owner: string;
  host: string;
  /** push_deliveries ids, oldest first. */
  queue: string[];
  /** Epoch ms at which the head may be attempted. */
  dueAt: number;
  timer?: ReturnType<typeof setTimeout>;
  busy: boolean;
  ready: boolean;
}

/**
 * Sends task events to registered webhooks, at least once, in order per webhook.
 *
 * The table push_deliveries is the queue and the truth: notify() writes one row per config before anything is
 * sent, a row is deleted only when its receiver answered 2xx (or it was abandoned), so a crash or restart
 * loses nothing; start() rebuilds the in-memory schedule from the table. A receiver may therefore see an event
 * twice (answered, but we crashed before deleting the row); X-A2A-Delivery-Id lets it tell.
 *
 * Order: the deliveries of one (task, config) form a lane and only the head of a lane is in flight, so event 5
 * is not sent before 4 was acknowledged or abandoned; lanes proceed independently of each other. Row ids are
 * ULIDs, so ordering by id is ordering by notify() across restarts.
 *
 * Fairness: lanes whose head is due wait in a FairScheduler keyed by the config's owner (the caller who
 * registered it) and its URL's host name: at most `concurrency` requests in all, `hostConcurrency` to one host,
 * `callerConcurrency` for one caller, and free slots go round-robin over callers. A caller whose webhooks hang
 * until the timeout therefore holds only its own share, and another caller's notification starts at the next
 * free slot instead of behind every hanging request.
 *
 * Deliveries are written in the transaction of the event they carry: the node's task store (SQLite or
 * Postgres, see openStorage) queues one per webhook the task has at that commit (TaskStore.onDeliveriesQueued)
 * and tells scheduleQueued() once it committed, so a crash or a lost connection between the two leaves no
 * event on disk without its deliveries (test/e2e/push-crash.test.ts kills the process there). A webhook sent
 * with the message is stored in the commit that creates the task, so it hears the first event too. notify()
 * queues deliveries itself, after the event's commit: only for a task store that does neither (tests, an
 * embedding program's store), where a crash in between may lose them.
 */
export class PushDispatcher {
  private renewal: ReturnType<typeof setInterval> | undefined;
  private readonly lanes = new Map<string, Lane>();
  private readonly scheduler: FairScheduler<Lane>;
  private readonly idleWaiters: (() => void)[] = [];
  /** Per task, the last notify() still being queued: the next one waits for it. */
  private readonly notifying = new Map<string, Promise<void>>();
  /** Per task, the events notified whose look-up has not started yet (see notify). */
  private readonly gathering = new Map<string, EventBatch>();
  private running = false;
  /** Counts start() and stop() calls: a start that a stop overtook does not start. */
  private generation = 0;
  /** While start() loads the queue: deliveries queued meanwhile wait for it, so they follow the older ones. */
  private starting: Promise<void> | undefined;
  private readonly maxAttempts: number;
  private readonly baseMs: number;
  private readonly maxMs: number;
  private readonly timeoutMs: number;
  private readonly fetchFn: PushFetch;
  private readonly clock: () => number;
  private readonly random: () => number;

  constructor(
    private readonly queue: DeliveryQueue,
    private readonly configs: PushConfigStore,
    private readonly options: PushDispatcherOptions = {},
  ) {
    this.maxAttempts = Math.max(1, options.maxAttempts ?? 10);
    this.baseMs = options.backoffBaseMs ?? 1000;
    this.maxMs = options.backoffMaxMs ?? 300_000;
    this.timeoutMs = options.timeoutMs ?? PUSH_DEFAULTS.timeoutMs;
    this.scheduler = new FairScheduler({
      total: options.concurrency ?? PUSH_DEFAULTS.concurrency,
      perHost: options.hostConcurrency ?? PUSH_DEFAULTS.hostConcurrency,
      perOwner: options.callerConcurrency ?? PUSH_DEFAULTS.callerConcurrency,
    });
    this.fetchFn = options.fetch ?? ((url, init) => fetch(url, init));
    this.clock = options.clock ?? Date.now;
    this.random = options.random ?? Math.random;
  }

  /**
   * Queues `event` for every webhook of the task (durably, before returning) and schedules the sends, for a task
   * store that does not queue deliveries with its events (see scheduleQueued). Cheap
   * when the task has no webhook (one index probe), so it can be called for every event. `owner`, if given,
   * restricts delivery to that owner's configs (defence in depth should a config ever be attached to a task
   * its owner does not own). Called while stopped, the rows wait for start(). A task's events are queued in
   * the order notify() was called, however long each look-up of its configs takes.
   */
  notify(taskId: string, event: StreamResponse, owner?: string): Promise<void> {
    // Events of one task notified before its look-up starts (those committed together) share one look-up of
    // its configs and one write of their deliveries: a task's events cost one query, not one each.
    const open = this.gathering.get(taskId);
    if (open) {
      open.events.push({ event, owner });
      return open.queued;
    }
    const batch: EventBatch = { events: [{ event, owner }], queued: Promise.resolve() };
    this.gathering.set(taskId, batch);
    const start = () => {
      if (this.gathering.get(taskId) === batch) this.gathering.delete(taskId);
      return this.queueDeliveries(taskId, batch.events);
    };
    const before = this.notifying.get(taskId);
    batch.queued = before ? before.then(start) : Promise.resolve().then(start);
    const settled = batch.queued.catch(() => {});
    this.notifying.set(taskId, settled);
    void settled.then(() => {
      if (this.notifying.get(taskId) === settled) this.notifying.delete(taskId);
    });
    return batch.queued;
  }

  /**
   * Schedules deliveries a task store queued with their events (see TaskStore.onDeliveriesQueued): they are in
   * the queue already, committed with the events. Called while stopped (or before start), they wait there for
   * start(), which loads them.
   */
  scheduleQueued(deliveries: QueuedWithEvent[]): void {
    const go = () => {
      if (!this.running) return;
      for (const d of deliveries)
        this.enqueue(d.taskId, { id: d.configId, owner: d.owner, url: d.url }, d.id, Date.parse(d.nextAttemptAt));
      this.pump();
    };
    // Deliveries queued while start() loads the queue may be in what it read, or not: they go in after it.
    if (this.starting) void this.starting.then(go, () => {});
    else go();
  }

  private async queueDeliveries(taskId: string, events: EventBatch["events"]): Promise<void> {
    const all = await this.configs.forTask(taskId);
    if (all.length === 0) return;
    const at = this.clock();
    const nextAttemptAt = new Date(at).toISOString();
    const queued: { config: StoredPushConfig; id: string }[] = [];
    const rows: Parameters<DeliveryQueue["add"]>[0] = [];
    for (const { event, owner } of events) {
      const configs = owner === undefined ? all : all.filter((c) => c.owner === owner);
      if (configs.length === 0) continue;
      const body = JSON.stringify(event);
      for (const c of configs) {
        const id = newId();
        queued.push({ config: c, id });
        rows.push({ id, task_id: taskId, config_id: c.id, body, next_attempt_at: nextAttemptAt });
      }
    }
    if (rows.length === 0) return;
    await this.queue.add(rows);
    // Rows written while a start() loads the queue were not in what it read: they go in after it.
    if (this.starting) await this.starting;
    if (!this.running) return;
    for (const q of queued) this.enqueue(taskId, q.config, q.id, at);
    this.pump();
  }

  /** Requests in flight now: in all, for one caller (config owner), to one host name. */
  inFlight(filter: { owner?: string; host?: string } = {}): number {
    if (filter.owner !== undefined) return this.scheduler.inFlightFor(filter.owner);
    if (filter.host !== undefined) return this.scheduler.inFlightTo(filter.host.toLowerCase());
    return this.scheduler.inFlight;
  }

  /**
   * Picks up every delivery left in the table (a previous run's, or queued while stopped) and starts sending.
   * Resolves once they are scheduled.
   */
  start(): Promise<void> {
    if (this.running) return Promise.resolve();
    this.starting ??= this.load().finally(() => (this.starting = undefined));
    return this.starting;
  }

  private async load(): Promise<void> {
    this.lanes.clear();
    this.scheduler.clear();
    const generation = ++this.generation;
    const rows = await this.queue.load();
    // Looked up once per lane; a config gone meanwhile is dropped at its attempt.
    const configs = new Map<string, StoredPushConfig | undefined>();
    for (const row of rows) {
      const key = `${row.task_id}\0${row.config_id}`;
      if (!configs.has(key)) configs.set(key, await this.configs.forDelivery(row.task_id, row.config_id));
    }
    if (generation !== this.generation) return; // stopped meanwhile
    this.running = true;
    this.keepClaims(generation);
    for (const row of rows) {
      const config = configs.get(`${row.task_id}\0${row.config_id}`);
      this.enqueue(
        row.task_id,
        config ?? { id: row.config_id, owner: "", url: "" },
        row.id,
        Date.parse(row.next_attempt_at),
      );
    }
    this.pump();
  }

  /**
   * Stops scheduling; undelivered rows stay for the next start(). Resolves once the requests already in flight
   * have finished and recorded their outcome (so the database can then be closed); await it before start()ing
   * again, or an in-flight delivery could be sent a second time alongside.
   */
  stop(): Promise<void> {
    this.running = false;
    this.generation++;
    clearInterval(this.renewal);
    this.renewal = undefined;
    for (const lane of this.lanes.values()) clearTimeout(lane.timer);
    this.lanes.clear();
    this.scheduler.clear();
    return this.idle();
  }

  /** Resolves when nothing is queued in memory and nothing is in flight (everything delivered or abandoned). */
  idle(): Promise<void> {
    if (this.isIdle()) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  private isIdle(): boolean {
    return this.scheduler.inFlight === 0 && this.lanes.size === 0;
  }

  /**
   * On a shared queue: keeps this process's claims alive, and takes up the deliveries of processes that died
   * (those `load` returns that are not queued here yet), each in its lane's order.
   */
  private keepClaims(generation: number): void {
    const every = this.queue.renewEveryMs;
    if (!every || !this.queue.renew) return;
    let busy = false;
    this.renewal = setInterval(() => {
      if (busy) return;
      busy = true;
      void (async () => {
        await this.queue.renew!();
        const rows = await this.queue.load();
        if (generation !== this.generation) return;
        let added = false;
        for (const row of rows) {
          const lane = this.lanes.get(`${row.task_id}\0${row.config_id}`);
          if (lane?.queue.includes(row.id)) continue;
          const config = lane ? undefined : await this.configs.forDelivery(row.task_id, row.config_id);
          if (generation !== this.generation) return;
          this.enqueue(
            row.task_id,
            config ?? { id: row.config_id, owner: lane?.owner ?? "", url: "" },
            row.id,
            Date.parse(row.next_attempt_at),
          );
          added = true;
        }
        if (added) this.pump();
      })()
        .catch((err) => this.options.log?.error("could not renew the push delivery claims", { reason: String(err) }))
        .finally(() => (busy = false));
    }, every);
    (this.renewal as { unref?: () => void }).unref?.();
  }

  private enqueue(
    taskId: string,
    config: Pick<StoredPushConfig, "id" | "owner" | "url">,
    deliveryId: string,
    dueAt: number,
  ): void {
    const key = `${taskId}\0${config.id}`;
    let lane = this.lanes.get(key);
    if (!lane) {
      lane = {
        taskId,
        configId: config.id,
        owner: config.owner,
        host: hostNameOf(config.url),
        queue: [],
        dueAt,
        busy: false,
        ready: false,
      };
      this.lanes.set(key, lane);
      lane.queue.push(deliveryId);
      this.schedule(lane);
      return;
    }
    if (lane.queue.includes(deliveryId)) return; // scheduled already (loaded by start() and told by the store)
    // In id order (queued order): a delivery taken up from a process that died may be older than what this one
    // queued since, or than a delivery of that process taken up a tick earlier (their claims may run out a
    // millisecond apart). Only a head in flight stays first; an older delivery goes before a head that merely
    // waits (for its retry time or its turn), and becomes the head with its own due time.
    const first = lane.busy ? 1 : 0;
    let at = lane.queue.length;
    while (at > first && lane.queue[at - 1]! > deliveryId) at--;
    lane.queue.splice(at, 0, deliveryId);
    if (at === 0) {
      lane.dueAt = dueAt;
      if (!lane.ready) this.schedule(lane);
    }
  }

  /** Makes the lane's head ready now or arms its timer. */
  private schedule(lane: Lane): void {
    clearTimeout(lane.timer);
    lane.timer = undefined;
    const wait = lane.dueAt - this.clock();
    if (wait <= 0) {
      this.markReady(lane);
      return;
    }
    lane.timer = setTimeout(() => {
      lane.timer = undefined;
      if (!this.running || this.lanes.get(laneKey(lane)) !== lane) return;
      this.markReady(lane);
      this.pump();
    }, wait);
    // A retry waiting minutes must not keep a process alive by itself; its row is durable anyway.
    (lane.timer as { unref?: () => void }).unref?.();
  }

  private markReady(lane: Lane): void {
    if (lane.ready) return;
    lane.ready = true;
    this.scheduler.add(lane, lane.owner, lane.host);
  }

  private pump(): void {
    while (this.running) {
      const taken = this.scheduler.take();
      if (!taken) return;
      const { item: lane, owner, host } = taken;
      lane.ready = false;
      if (lane.busy || this.lanes.get(laneKey(lane)) !== lane) {
        this.scheduler.release(owner, host);
        continue;
      }
      lane.busy = true;
      void this.attempt(lane)
        .catch((err) =>
          this.options.log?.error("push delivery failed unexpectedly", {
            task: lane.taskId,
            config: lane.configId,
            error: String(err),
          }),
        )
        .finally(() => {
          lane.busy = false;
          this.scheduler.release(owner, host);
          this.afterAttempt(lane);
          this.pump();
          if (this.isIdle()) for (const w of this.idleWaiters.splice(0)) w();
        });
    }
  }

  /** After an attempt: next head now, or the same head later, or the lane is done. */
  private afterAttempt(lane: Lane): void {
    if (!this.running || this.lanes.get(laneKey(lane)) !== lane) return;
    if (lane.queue.length === 0) {
      this.lanes.delete(laneKey(lane));
      return;
    }
    this.schedule(lane);
  }

  /** One attempt of the lane's head; leaves lane.queue/dueAt describing what comes next. */
  private async attempt(lane: Lane): Promise<void> {
    const id = lane.queue[0]!;
    const row = await this.queue.get(id);
    if (!row) {
      // Removed behind our back (its config was deleted, which drops its rows): nothing to send.
      lane.queue.shift();
      lane.dueAt = this.clock();
      return;
    }
    const config = await this.configs.forDelivery(lane.taskId, lane.configId);
    if (!config) {
      const dropped = await this.queue.dropLane(lane.taskId, lane.configId);
      lane.queue.length = 0;
      this.options.log?.info("push config gone; dropped its queued deliveries", {
        task: lane.taskId,
        config: lane.configId,
        dropped,
      });
      return;
    }
    // The config may have been re-registered with another URL: its next turn waits in the right queue.
    lane.owner = config.owner;
    lane.host = hostNameOf(config.url);
    const error = await postDelivery(row, config, {
      guard: this.options.guard,
      fetch: this.fetchFn,
      timeoutMs: this.timeoutMs,
      nowSeconds: Math.floor(this.clock() / 1000),
    });
    if (error === undefined) {
      await this.queue.remove(id);
      lane.queue.shift();
      lane.dueAt = this.clock();
      return;
    }
    const attempts = row.attempts + 1;
    if (attempts >= this.maxAttempts) {
      await this.queue.remove(id);
      lane.queue.shift();
      lane.dueAt = this.clock();
      // One line per abandoned event; the host only (a URL's path or query may carry a secret).
      this.options.log?.warn("push delivery abandoned", {
        task: lane.taskId,
        config: lane.configId,
        delivery: id,
        host: hostOf(config.url),
        attempts,
        error,
      });
      return;
    }
    lane.dueAt = this.clock() + backoffDelay(attempts, this.baseMs, this.maxMs, this.random);
    await this.queue.retry(id, attempts, new Date(lane.dueAt).toISOString(), error.slice(0, 500));
  }
}

function laneKey(lane: Lane): string {
  return `${lane.taskId}\0${lane.configId}`;
}

function hostOf(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return "?";
  }
}

/** The fairness key of a webhook: its host name without the port (one machine, however many ports). */
function hostNameOf(url: string): string {
  try {
    return new URL(url).hostname;
  } catch {
    return "";
  }
}
