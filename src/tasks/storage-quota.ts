import { TaskRefusal } from "./refusal";
import type { CallerUsage, TaskStore } from "./task-store";

/** Refusals of the storage guard, by the limit that refused (a closed set, for the metrics). */
export type StorageLimit = "max_caller_bytes" | "max_caller_tasks" | "min_free_disk";
export const STORAGE_LIMITS: readonly StorageLimit[] = ["max_caller_bytes", "max_caller_tasks", "min_free_disk"];

/** What the request handler asks before it records a caller's new task or message. */
export interface StorageGuard {
  /**
   * Throws RESOURCE_EXHAUSTED, naming the limit, when `owner` may not store `bytes` more (and one more task,
   * when `newTask`); otherwise counts them towards the owner's usage.
   */
  check(owner: string, bytes: number, newTask: boolean): Promise<void>;
}

/** The free-space floor, as the quota asks it (see store/disk-floor.ts). */
export interface FloorCheck {
  refuses(owner: string): boolean;
  state(): { freeBytes: number; floorBytes: number; refusing: string; heaviest?: { owner: string; bytes: number } };
}

export interface StorageQuotaOptions {
  /** max_caller_bytes; 0: no quota. */
  maxCallerBytes: number;
  /** max_caller_tasks; 0: no quota. */
  maxCallerTasks: number;
  /** How long a caller's usage read from the store is used (with what this node took since added to it). */
  ttlMs?: number;
  floor?: FloorCheck;
  /** Told of each refusal, by limit (the metrics). */
  onRefused?(limit: StorageLimit): void;
}

/** A caller's usage is read from the store at most once a second; what the node takes meanwhile is added to it. */
const TTL_MS = 1000;

/**
 * The per-caller storage quotas (max_caller_bytes, max_caller_tasks) and the free-space floor, checked before a
 * caller's new task or message is recorded. A caller's usage comes from the store's own sums (caller_usage,
 * kept by triggers): while it is under half of a quota it is read at most every ttlMs and added to as this
 * node takes more, so the check costs a map look-up on most requests; past half, it is read at every check.
 * Usage counts what is committed: a caller can pass its quota by what is not yet (this turn's group commit, an
 * agent's answer still running), and on Postgres by what other replicas took meanwhile; retention is what
 * frees room again.
 */
export class StorageQuota implements StorageGuard {
  private readonly known = new Map<string, CallerUsage & { at: number }>();
  private readonly ttlMs: number;

  constructor(
    private readonly store: Pick<TaskStore, "usage">,
    private readonly o: StorageQuotaOptions,
  ) {
    this.ttlMs = o.ttlMs ?? TTL_MS;
  }

  async check(owner: string, bytes: number, newTask: boolean): Promise<void> {
    if (this.o.floor?.refuses(owner)) throw this.refuse("min_free_disk", this.floorMessage(owner));
    const { maxCallerBytes, maxCallerTasks } = this.o;
    if (!maxCallerBytes && !maxCallerTasks) return;
    const now = Date.now();
    let u = this.known.get(owner);
    // Far from its quotas a caller's usage may be a second old; near them (past half) it is read every time,
    // so what decides a refusal is what the store holds (the agents' answers included), not an estimate.
    const near = (x: CallerUsage) =>
      (maxCallerBytes > 0 && 2 * (x.bytes + bytes) > maxCallerBytes) ||
      (newTask && maxCallerTasks > 0 && 2 * (x.tasks + 1) > maxCallerTasks);
    if (!u || now - u.at > this.ttlMs || near(u)) {
      u = { ...(await this.store.usage(owner)), at: now };
      this.known.set(owner, u);
    }
    if (newTask && maxCallerTasks && u.tasks >= maxCallerTasks)
      throw this.refuse(
        "max_caller_tasks",
        `${owner} has ${u.tasks} tasks stored on this node, its quota (max_caller_tasks = ${maxCallerTasks}); new tasks are refused until retention deletes finished ones (retention_days), or this node's operator raises the quota`,
      );
    if (maxCallerBytes && u.bytes + bytes > maxCallerBytes)
      throw this.refuse(
        "max_caller_bytes",
        `${owner}'s stored tasks take ${u.bytes} bytes on this node; ${bytes} more would pass its quota of ${maxCallerBytes} bytes (max_caller_bytes); new tasks and messages are refused until retention deletes finished tasks (retention_days), or this node's operator raises the quota`,
      );
    u.bytes += bytes;
    if (newTask) u.tasks++;
  }

  private floorMessage(owner: string): string {
    const s = this.o.floor!.state();
    const free = `this node's disk has ${s.freeBytes} bytes free`;
    if (s.refusing === "all")
      return `${free}, less than half of its floor of ${s.floorBytes} (min_free_disk): it takes no new tasks or messages from any caller until space is freed; retry later`;
    return `${free}, less than its floor of ${s.floorBytes} (min_free_disk): it takes no new tasks or messages from the caller whose stored tasks take the most (${owner}, ${s.heaviest?.bytes ?? "?"} bytes) until space is freed; retry later`;
  }

  private refuse(limit: StorageLimit, message: string): TaskRefusal {
    this.o.onRefused?.(limit);
    return TaskRefusal.quota(message, limit);
  }
}
