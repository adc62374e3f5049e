/** A queued push delivery: one event for one webhook (see PushDispatcher). */
export interface QueuedDelivery {
  /** A ULID: delivery order. */
  id: string;
  task_id: string;
  config_id: string;
  body: string;
  attempts: number;
  /** ISO 8601. */
  next_attempt_at: string;
}

/**
 * Where push deliveries wait until their receiver answered: the truth a restarted dispatcher starts again from.
 * On a store several processes share, each delivery is claimed by one process at a time: the one that queued
 * it, or, once that one is gone (its claims ran out), the one that picks it up with `load`.
 */
export interface DeliveryQueue {
  /** Queues deliveries (claimed by this process); resolves once they are durable. */
  add(rows: Omit<QueuedDelivery, "attempts">[]): Promise<void>;
  /** The deliveries this process is to send from now on, oldest first, without their bodies. */
  load(): Promise<Omit<QueuedDelivery, "body">[]>;
  get(id: string): Promise<QueuedDelivery | undefined>;
  /** Delivered or abandoned. */
  remove(id: string): Promise<void>;
  retry(id: string, attempts: number, nextAttemptAt: string, error: string): Promise<void>;
  /** Drops every delivery of one webhook of a task (its config is gone); returns how many. */
  dropLane(taskId: string, configId: string): Promise<number>;
  /**
   * Only on a shared store: how often to call `renew` (ms), which keeps this process's claims alive; `load`
   * then also returns the deliveries of processes that died.
   */
  readonly renewEveryMs?: number;
  renew?(): Promise<void>;
}
