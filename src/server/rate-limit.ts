import type { Logger } from "../log";

/** The defaults of rate_limit_per_second and rate_limit_burst: far above what an agent does in normal use. */
export const RATE_LIMIT_DEFAULTS = { perSecond: 100, burst: 500 } as const;

/** Buckets kept before full ones (peers that went quiet) are dropped; a fleet has far fewer members. */
const MAX_BUCKETS = 10_000;

interface Bucket {
  tokens: number;
  /** performance.now() of the last refill. */
  at: number;
}

/**
 * A token bucket per peer: each A2A request takes a token; a peer's bucket holds at most `burst` tokens and
 * refills at `perSecond`. One peer (a loop gone wrong, a stolen certificate) then cannot take the node's time
 * from the others, while ordinary bursts (a fan-out of tasks) pass untouched. The peer is the verified
 * certificate name, so a client cannot spread itself over several buckets.
 *
 * @example
 *   const limiter = new PeerRateLimiter({ perSecond: 100, burst: 500 });
 *   const wait = limiter.take("alpha"); // 0: go ahead; otherwise seconds until a token is there
 */
export class PeerRateLimiter {
  private readonly buckets = new Map<string, Bucket>();
  private sweptAt = Number.NEGATIVE_INFINITY;
  /** The limits in force (configure() changes them). */
  perSecond: number;
  burst: number;

  constructor(
    limits: { perSecond: number; burst: number },
    private readonly now: () => number = () => performance.now(),
  ) {
    this.perSecond = limits.perSecond;
    this.burst = limits.burst;
  }

  /** New limits (SIGHUP); buckets keep their tokens, capped at the new burst. */
  configure(limits: { perSecond: number; burst: number }): void {
    this.perSecond = limits.perSecond;
    this.burst = limits.burst;
    for (const b of this.buckets.values()) b.tokens = Math.min(b.tokens, this.burst);
  }

  /** Takes a token for `peer`: 0 when it may go ahead, otherwise the whole seconds until it may try again. */
  take(peer: string): number {
    if (this.perSecond <= 0) return 0;
    const b = this.refilled(peer);
    if (b.tokens >= 1) {
      b.tokens -= 1;
      return 0;
    }
    return this.waitFor(b);
  }

  /** Like take(), without taking: 0 when `peer` has a token left, otherwise the whole seconds until it has. */
  available(peer: string): number {
    if (this.perSecond <= 0) return 0;
    const b = this.buckets.get(peer);
    if (b === undefined) return 0;
    return Math.min(this.burst, b.tokens + ((this.now() - b.at) / 1000) * this.perSecond) >= 1
      ? 0
      : this.waitFor(this.refilled(peer));
  }

  /** `peer`'s bucket, refilled up to now (a new one is full). */
  private refilled(peer: string): Bucket {
    const now = this.now();
    let b = this.buckets.get(peer);
    if (b === undefined) {
      if (this.buckets.size >= MAX_BUCKETS) {
        // Keys may come from strangers (source addresses): the map stays bounded whatever they send. Past the
        // bound the oldest bucket goes (its peer starts afresh), and full ones are swept at most once a second.
        if (now - this.sweptAt >= 1000) {
          this.sweep(now);
          this.sweptAt = now;
        }
        if (this.buckets.size >= MAX_BUCKETS) this.buckets.delete(this.buckets.keys().next().value as string);
      }
      b = { tokens: this.burst, at: now };
      this.buckets.set(peer, b);
    } else {
      b.tokens = Math.min(this.burst, b.tokens + ((now - b.at) / 1000) * this.perSecond);
      b.at = now;
    }
    return b;
  }

  private waitFor(b: Bucket): number {
    return Math.max(1, Math.ceil((1 - b.tokens) / this.perSecond));
  }

  /** Drops the buckets that have refilled: a full bucket and no bucket mean the same. */
  private sweep(now: number): void {
    for (const [peer, b] of this.buckets)
      if (b.tokens + ((now - b.at) / 1000) * this.perSecond >= this.burst) this.buckets.delete(peer);
  }
}

/**
 * One log line per limited peer per minute, with how many of its requests were refused since the last one: a
 * peer in a loop would otherwise write a line per request.
 */
export class RateLimitLog {
  private readonly last = new Map<string, { at: number; refused: number }>();

  constructor(
    private readonly log: Logger,
    private readonly windowMs = 60_000,
    private readonly now: () => number = () => performance.now(),
  ) {}

  limited(peer: string, retryAfterSeconds: number): void {
    const now = this.now();
    const seen = this.last.get(peer);
    if (seen && now - seen.at < this.windowMs) {
      seen.refused++;
      return;
    }
    if (this.last.size >= MAX_BUCKETS) this.last.clear();
    this.last.set(peer, { at: now, refused: 0 });
    this.log.warn("rate limit: refused requests of a peer over its limit", {
      peer,
      retry_after_s: retryAfterSeconds,
      refused_since_last_line: seen?.refused,
    });
  }
}
