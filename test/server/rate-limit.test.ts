import { describe, expect, it } from "vitest";
import { PeerRateLimiter, RATE_LIMIT_DEFAULTS } from "../../src/server/rate-limit";

function clock() {
  let t = 0;
  return { now: () => t, advance: (ms: number) => void (t += ms) };
}

describe("the per-peer token bucket", () => {
  it("lets a burst through, then refuses with the seconds until the next token", () => {
    const c = clock();
    const l = new PeerRateLimiter({ perSecond: 2, burst: 3 }, c.now);
    expect([l.take("alpha"), l.take("alpha"), l.take("alpha")]).toEqual([0, 0, 0]);
    expect(l.take("alpha")).toBe(1); // half a second to a token: retry after 1 s (whole seconds, rounded up)
    c.advance(500);
    expect(l.take("alpha")).toBe(0);
    expect(l.take("alpha")).toBe(1);
  });

  it("keeps one bucket per peer: one peer's flood leaves the others theirs", () => {
    const c = clock();
    const l = new PeerRateLimiter({ perSecond: 1, burst: 1 }, c.now);
    expect(l.take("alpha")).toBe(0);
    expect(l.take("alpha")).toBe(1);
    expect(l.take("gamma")).toBe(0);
  });

  it("refills at the rate, never past the burst", () => {
    const c = clock();
    const l = new PeerRateLimiter({ perSecond: 10, burst: 5 }, c.now);
    for (let i = 0; i < 5; i++) expect(l.take("a")).toBe(0);
    c.advance(60_000); // a quiet minute refills 5, not 600
    for (let i = 0; i < 5; i++) expect(l.take("a")).toBe(0);
    expect(l.take("a")).toBeGreaterThan(0);
  });

  it("a slow rate says a longer wait", () => {
    const c = clock();
    const l = new PeerRateLimiter({ perSecond: 0.1, burst: 1 }, c.now);
    expect(l.take("a")).toBe(0);
    expect(l.take("a")).toBe(10);
  });

  it("0 per second means no limit", () => {
    const l = new PeerRateLimiter({ perSecond: 0, burst: 1 });
    for (let i = 0; i < 1000; i++) expect(l.take("a")).toBe(0);
  });

  it("new limits apply at once (SIGHUP), and a lower burst caps the tokens held", () => {
    const c = clock();
    const l = new PeerRateLimiter({ perSecond: 100, burst: 100 }, c.now);
    expect(l.take("a")).toBe(0);
    l.configure({ perSecond: 1, burst: 2 });
    expect([l.take("a"), l.take("a"), l.take("a")]).toEqual([0, 0, 1]);
  });

  it("the defaults leave room for a fan-out of hundreds of tasks", () => {
    const l = new PeerRateLimiter(RATE_LIMIT_DEFAULTS, () => 0);
    for (let i = 0; i < 500; i++) expect(l.take("a")).toBe(0);
    expect(l.take("a")).toBe(1);
  });

  it("available() says whether a token is there without taking it", () => {
    const c = clock();
    const l = new PeerRateLimiter({ perSecond: 1 / 60, burst: 2 }, c.now);
    expect(l.available("10.0.0.7")).toBe(0); // never seen: a full bucket
    expect([l.available("10.0.0.7"), l.available("10.0.0.7"), l.available("10.0.0.7")]).toEqual([0, 0, 0]);
    expect([l.take("10.0.0.7"), l.take("10.0.0.7")]).toEqual([0, 0]);
    expect(l.available("10.0.0.7")).toBe(60);
    c.advance(30_000);
    expect(l.available("10.0.0.7")).toBe(30);
    c.advance(30_000);
    expect(l.available("10.0.0.7")).toBe(0);
    expect(l.take("10.0.0.7")).toBe(0);
  });

  it("stays bounded whatever keys strangers bring: past 10,000 buckets the oldest goes", () => {
    const c = clock();
    const l = new PeerRateLimiter({ perSecond: 1 / 60, burst: 1 }, c.now);
    expect(l.take("first")).toBe(0);
    expect(l.take("first")).toBe(60);
    for (let i = 0; i < 10_000; i++) l.take(`source-${i}`); // none full again: nothing to sweep
    expect((l as unknown as { buckets: Map<string, unknown> }).buckets.size).toBe(10_000);
    // "first" was the oldest: it was dropped, and starts afresh.
    expect(l.take("first")).toBe(0);
  });
});
