export interface FairLimits {
  /** Items in flight at once, in all. */
  total: number;
  /** Items in flight at once for one owner. */
  perOwner: number;
  /** Items in flight at once for one host. */
  perHost: number;
}

/** What take() hands out; give owner and host back to release() when the work is done. */
export interface Taken<T> {
  item: T;
  owner: string;
  host: string;
}

/**
 * Decides which waiting item starts next so that no owner and no host can hold every slot.
 *
 * A webhook that black-holes its requests keeps each one in flight until the timeout. With one shared pool and
 * a FIFO, a caller who registers such webhooks on many tasks fills the pool and every other caller's
 * notifications wait behind those timeouts. Here each host has at most `perHost` in flight and each owner
 * `perOwner`, and free slots go round-robin: to the next owner, and within that owner to its next host, so
 * another owner's item is at most one turn away whatever one owner has queued. Items of one (owner, host) keep
 * their order.
 *
 * take() walks the owners in turn and, within one, its hosts, passing over those at their cap; at most
 * total/perHost hosts can be at their cap at once, so a walk costs about the number of owners waiting.
 *
 * @example
 *   const s = new FairScheduler<string>({ total: 8, perOwner: 4, perHost: 2 });
 *   s.add("job", "alice", "hooks.example.com");
 *   const next = s.take(); // { item: "job", owner: "alice", host: "hooks.example.com" }
 *   s.release(next!.owner, next!.host);
 */
export class FairScheduler<T> {
  /** Waiting items by owner, then by host; Map order is the round-robin order at both levels. */
  private readonly waiting = new Map<string, Map<string, T[]>>();
  private readonly byOwner = new Map<string, number>();
  private readonly byHost = new Map<string, number>();
  private running = 0;
  private readonly limits: FairLimits;

  constructor(limits: FairLimits) {
    this.limits = {
      total: Math.max(1, limits.total),
      perOwner: Math.max(1, limits.perOwner),
      perHost: Math.max(1, limits.perHost),
    };
  }

  /** Items taken and not yet released. */
  get inFlight(): number {
    return this.running;
  }

  /** Items in flight for one owner. */
  inFlightFor(owner: string): number {
    return this.byOwner.get(owner) ?? 0;
  }

  /** Items in flight to one host. */
  inFlightTo(host: string): number {
    return this.byHost.get(host) ?? 0;
  }

  add(item: T, owner: string, host: string): void {
    let hosts = this.waiting.get(owner);
    if (!hosts) this.waiting.set(owner, (hosts = new Map()));
    const items = hosts.get(host);
    if (items) items.push(item);
    else hosts.set(host, [item]);
  }

  /** The next item that may start now, counted as in flight; undefined when none may. */
  take(): Taken<T> | undefined {
    if (this.running >= this.limits.total) return undefined;
    for (const [owner, hosts] of this.waiting) {
      if (this.inFlightFor(owner) >= this.limits.perOwner) continue;
      for (const [host, items] of hosts) {
        if (this.inFlightTo(host) >= this.limits.perHost) continue;
        const item = items.shift()!;
        // Served: this host goes behind the owner's other hosts, this owner behind the other owners.
        hosts.delete(host);
        if (items.length > 0) hosts.set(host, items);
        this.waiting.delete(owner);
        if (hosts.size > 0) this.waiting.set(owner, hosts);
        this.running++;
        this.byOwner.set(owner, this.inFlightFor(owner) + 1);
        this.byHost.set(host, this.inFlightTo(host) + 1);
        return { item, owner, host };
      }
    }
    return undefined;
  }

  release(owner: string, host: string): void {
    this.running--;
    decrement(this.byOwner, owner);
    decrement(this.byHost, host);
  }

  /** Forgets every waiting item; items in flight stay counted until released. */
  clear(): void {
    this.waiting.clear();
  }
}

function decrement(counts: Map<string, number>, key: string): void {
  const n = (counts.get(key) ?? 0) - 1;
  if (n > 0) counts.set(key, n);
  else counts.delete(key);
}
