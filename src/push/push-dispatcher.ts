import type { Database, Statement } from "bun:sqlite";
import type { Logger } from "../log";
import type { StreamResponse } from "../protocol/types";
import type { OpenDatabase } from "../store/database";
import { newId } from "../tasks/clock";
import type { PushConfigStore, StoredPushConfig } from "./push-config-store";
import { pushHeaders } from "./signature";

export type PushFetch = (url: string, init: RequestInit) => Promise<Response>;

export interface PushDispatcherOptions {
  /** Attempts per delivery before it is abandoned (default 10: about 8.5 minutes of retrying at the default base). */
  maxAttempts?: number;
  /** Delay after the first failure; doubles per attempt (default 1000 ms). */
  backoffBaseMs?: number;
  /** Ceiling of the delay (default 5 minutes). */
  backoffMaxMs?: number;
  /** Per-request timeout (default 10 s; the spec suggests 10-30 s). */
  timeoutMs?: number;
  /** Requests in flight at once across all webhooks (default 8). */
  concurrency?: number;
  /** The URL check before each attempt (a WebhookGuard); omitted = no check (tests only). */
  guard?: { check(url: string): Promise<void> };
  fetch?: PushFetch;
  /** Milliseconds since the epoch. */
  clock?: () => number;
  /** [0, 1), for the jitter. */
  random?: () => number;
  log?: Logger;
}

/** Delay before attempt `attempts + 1`, after `attempts` failures: base·2^(n-1), ±20 % jitter, capped. */
export function backoffDelay(attempts: number, baseMs: number, maxMs: number, random: () => number = Math.random): number {
  const exp = baseMs * 2 ** Math.min(Math.max(attempts - 1, 0), 30);
  // Jitter spreads the retries of many deliveries that failed together (a receiver restart) so they do not
  // come back as one burst.
  return Math.min(maxMs, Math.round(exp * (0.8 + 0.4 * random())));
}

/** The deliveries of one (task, config), in order; only its head is ever attempted. */
interface Lane {
  taskId: string;
  configId: string;
  /** push_deliveries ids, oldest first. */
  queue: string[];
  /** Epoch ms at which the head may be attempted. */
  dueAt: number;
  timer?: ReturnType<typeof setTimeout>;
  busy: boolean;
  ready: boolean;
}

interface DeliveryRow {
  id: string;
  task_id: string;
  config_id: string;
  body: string;
  attempts: number;
  next_attempt_at: string;
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
 * is not sent before 4 was acknowledged or abandoned; lanes proceed independently of each other, at most
 * `concurrency` requests at a time. Row ids are ULIDs, so ordering by id is ordering by notify() across restarts.
 *
 * Rows are written on the node's shared connection: if the task store's group transaction is open, they
 * commit with it, i.e. together with the event they describe.
 */
export class PushDispatcher {
  private readonly sqlite: Database;
  private readonly q: Record<"insert" | "byId" | "all" | "remove" | "retry" | "dropLane", Statement>;
  private readonly lanes = new Map<string, Lane>();
  private readonly readyLanes: Lane[] = [];
  private readonly idleWaiters: (() => void)[] = [];
  private inFlight = 0;
  private running = false;
  private readonly maxAttempts: number;
  private readonly baseMs: number;
  private readonly maxMs: number;
  private readonly timeoutMs: number;
  private readonly concurrency: number;
  private readonly fetchFn: PushFetch;
  private readonly clock: () => number;
  private readonly random: () => number;

  constructor(
    database: OpenDatabase,
    private readonly configs: PushConfigStore,
    private readonly options: PushDispatcherOptions = {},
  ) {
    this.sqlite = database.sqlite;
    this.maxAttempts = Math.max(1, options.maxAttempts ?? 10);
    this.baseMs = options.backoffBaseMs ?? 1000;
    this.maxMs = options.backoffMaxMs ?? 300_000;
    this.timeoutMs = options.timeoutMs ?? 10_000;
    this.concurrency = Math.max(1, options.concurrency ?? 8);
    this.fetchFn = options.fetch ?? ((url, init) => fetch(url, init));
    this.clock = options.clock ?? Date.now;
    this.random = options.random ?? Math.random;
    const prep = (s: string) => database.sqlite.prepare(s);
    this.q = {
      insert: prep("INSERT INTO push_deliveries (id, task_id, config_id, body, attempts, next_attempt_at) VALUES (?1, ?2, ?3, ?4, 0, ?5)"),
      byId: prep("SELECT * FROM push_deliveries WHERE id = ?1"),
      all: prep("SELECT id, task_id, config_id, attempts, next_attempt_at FROM push_deliveries ORDER BY id"),
      remove: prep("DELETE FROM push_deliveries WHERE id = ?1"),
      retry: prep("UPDATE push_deliveries SET attempts = ?2, next_attempt_at = ?3, last_error = ?4 WHERE id = ?1"),
      dropLane: prep("DELETE FROM push_deliveries WHERE task_id = ?1 AND config_id = ?2"),
    };
  }

  /**
   * Queues `event` for every webhook of the task (durably, before returning) and schedules the sends. Cheap
   * when the task has no webhook (one index probe), so it can be called for every event. `owner`, if given,
   * restricts delivery to that owner's configs (defence in depth should a config ever be attached to a task
   * its owner does not own). Called while stopped, the rows wait for start().
   */
  notify(taskId: string, event: StreamResponse, owner?: string): void {
    let configs = this.configs.forTask(taskId);
    if (owner !== undefined) configs = configs.filter((c) => c.owner === owner);
    if (configs.length === 0) return;
    const body = JSON.stringify(event);
    const at = this.clock();
    const ids = configs.map(() => newId());
    this.sqlite.transaction(() => {
      configs.forEach((c, i) => this.q.insert.run(ids[i]!, taskId, c.id, body, new Date(at).toISOString()));
    })();
    if (!this.running) return;
    configs.forEach((c, i) => this.enqueue(taskId, c.id, ids[i]!, at));
    this.pump();
  }

  /** Picks up every delivery left in the table (a previous run's, or queued while stopped) and starts sending. */
  start(): void {
    if (this.running) return;
    this.running = true;
    this.lanes.clear();
    this.readyLanes.length = 0;
    for (const row of this.q.all.all() as Omit<DeliveryRow, "body">[]) {
      this.enqueue(row.task_id, row.config_id, row.id, Date.parse(row.next_attempt_at));
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
    for (const lane of this.lanes.values()) clearTimeout(lane.timer);
    this.lanes.clear();
    this.readyLanes.length = 0;
    return this.idle();
  }

  /** Resolves when nothing is queued in memory and nothing is in flight (everything delivered or abandoned). */
  idle(): Promise<void> {
    if (this.isIdle()) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  private isIdle(): boolean {
    return this.inFlight === 0 && this.lanes.size === 0;
  }

  private enqueue(taskId: string, configId: string, deliveryId: string, dueAt: number): void {
    const key = `${taskId}\0${configId}`;
    let lane = this.lanes.get(key);
    if (!lane) {
      lane = { taskId, configId, queue: [], dueAt, busy: false, ready: false };
      this.lanes.set(key, lane);
      lane.queue.push(deliveryId);
      this.schedule(lane);
      return;
    }
    // Behind the current head: it waits its turn, whatever its own due time.
    lane.queue.push(deliveryId);
  }

  /** Makes the lane's head ready now or arms its timer. */
  private schedule(lane: Lane): void {
    clearTimeout(lane.timer);
    lane.timer = undefined;
    const wait = lane.dueAt - this.clock();
    if (wait <= 0) {
      if (!lane.ready) {
        lane.ready = true;
        this.readyLanes.push(lane);
      }
      return;
    }
    lane.timer = setTimeout(() => {
      lane.timer = undefined;
      if (!this.running || this.lanes.get(laneKey(lane)) !== lane) return;
      lane.ready = true;
      this.readyLanes.push(lane);
      this.pump();
    }, wait);
    // A retry waiting minutes must not keep a process alive by itself; its row is durable anyway.
    (lane.timer as { unref?: () => void }).unref?.();
  }

  private pump(): void {
    while (this.running && this.inFlight < this.concurrency && this.readyLanes.length > 0) {
      const lane = this.readyLanes.shift()!;
      lane.ready = false;
      if (lane.busy || this.lanes.get(laneKey(lane)) !== lane) continue;
      lane.busy = true;
      this.inFlight++;
      void this.attempt(lane)
        .catch((err) => this.options.log?.error("push delivery failed unexpectedly", { task: lane.taskId, config: lane.configId, error: String(err) }))
        .finally(() => {
          lane.busy = false;
          this.inFlight--;
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
    const row = this.q.byId.get(id) as DeliveryRow | null;
    if (!row) {
      // Removed behind our back (its config was deleted, which drops its rows): nothing to send.
      lane.queue.shift();
      lane.dueAt = this.clock();
      return;
    }
    const config = this.configs.forDelivery(lane.taskId, lane.configId);
    if (!config) {
      const dropped = this.q.dropLane.run(lane.taskId, lane.configId).changes;
      lane.queue.length = 0;
      this.options.log?.info("push config gone; dropped its queued deliveries", { task: lane.taskId, config: lane.configId, dropped });
      return;
    }
    const error = await this.send(row, config);
    if (error === undefined) {
      this.q.remove.run(id);
      lane.queue.shift();
      lane.dueAt = this.clock();
      return;
    }
    const attempts = row.attempts + 1;
    if (attempts >= this.maxAttempts) {
      this.q.remove.run(id);
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
    this.q.retry.run(id, attempts, new Date(lane.dueAt).toISOString(), error.slice(0, 500));
  }

  /** POSTs one delivery; undefined on a 2xx answer, else why not. */
  private async send(row: DeliveryRow, config: StoredPushConfig): Promise<string | undefined> {
    try {
      // Again at delivery: the name may resolve elsewhere now than when the config was created.
      await this.options.guard?.check(config.url);
      const res = await this.fetchFn(config.url, {
        method: "POST",
        headers: pushHeaders(row.body, {
          token: config.token,
          authentication: config.authentication,
          timestamp: Math.floor(this.clock() / 1000),
          deliveryId: row.id,
        }),
        body: row.body,
        // A redirect would send the request to a target the guard never saw.
        redirect: "manual",
        signal: AbortSignal.timeout(this.timeoutMs),
      });
      // Read the answer out so the connection can be reused; its content does not matter.
      await res.arrayBuffer().catch(() => undefined);
      if (res.status >= 200 && res.status < 300) return undefined;
      return res.status >= 300 && res.status < 400 ? `HTTP ${res.status} (redirects are not followed)` : `HTTP ${res.status}`;
    } catch (err) {
      return err instanceof Error ? `${err.name}: ${err.message}` : String(err);
    }
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
