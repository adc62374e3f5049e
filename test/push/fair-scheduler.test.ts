import { describe, expect, it } from "vitest";
import { FairScheduler, type FairLimits } from "../../src/push/fair-scheduler";

const WIDE: FairLimits = { total: 100, perOwner: 100, perHost: 100 };

/** Takes until nothing may start, releasing each item right away: the order a free-flowing pool serves them. */
function drain(s: FairScheduler<string>): string[] {
  const order: string[] = [];
  for (let t = s.take(); t; t = s.take()) {
    order.push(t.item);
    s.release(t.owner, t.host);
  }
  return order;
}

/** Takes until nothing may start, keeping everything in flight. */
function takeAll(s: FairScheduler<string>): string[] {
  const out: string[] = [];
  for (let t = s.take(); t; t = s.take()) out.push(t.item);
  return out;
}

describe("FairScheduler", () => {
  it("serves owners round-robin, whatever one of them has queued", () => {
    const s = new FairScheduler<string>(WIDE);
    for (let i = 1; i <= 5; i++) s.add(`a${i}`, "alpha", "a.example");
    s.add("b1", "bravo", "b.example");
    s.add("b2", "bravo", "b.example");
    s.add("c1", "charlie", "c.example");
    expect(drain(s)).toEqual(["a1", "b1", "c1", "a2", "b2", "a3", "a4", "a5"]);
  });

  it("within one owner serves its hosts round-robin, and each host's items in the order they came", () => {
    const s = new FairScheduler<string>(WIDE);
    for (const [item, host] of [
      ["x1", "x"],
      ["x2", "x"],
      ["x3", "x"],
      ["y1", "y"],
      ["z1", "z"],
      ["y2", "y"],
    ])
      s.add(item!, "alpha", host!);
    expect(drain(s)).toEqual(["x1", "y1", "z1", "x2", "y2", "x3"]);
  });

  it("starts at most `total` at once, and one more after each release", () => {
    const s = new FairScheduler<string>({ total: 3, perOwner: 100, perHost: 100 });
    for (let i = 1; i <= 5; i++) s.add(`i${i}`, `owner${i}`, `host${i}`);
    expect(takeAll(s)).toEqual(["i1", "i2", "i3"]);
    expect(s.inFlight).toBe(3);
    s.release("owner2", "host2");
    expect(takeAll(s)).toEqual(["i4"]);
    expect(s.take()).toBeUndefined();
  });

  it("starts at most `perHost` to one host, whoever owns the items, and serves other hosts meanwhile", () => {
    const s = new FairScheduler<string>({ total: 100, perOwner: 100, perHost: 2 });
    for (let i = 1; i <= 4; i++) s.add(`a${i}`, "alpha", "slow.example");
    s.add("b1", "bravo", "slow.example");
    s.add("b2", "bravo", "fast.example");
    expect(takeAll(s)).toEqual(["a1", "b1", "b2"]); // slow.example full after a1, b1
    expect(s.inFlightTo("slow.example")).toBe(2);
    expect(s.inFlightTo("fast.example")).toBe(1);
    s.release("alpha", "slow.example");
    expect(takeAll(s)).toEqual(["a2"]);
  });

  it("starts at most `perOwner` for one owner, spread over however many hosts it uses", () => {
    const s = new FairScheduler<string>({ total: 100, perOwner: 2, perHost: 100 });
    for (let h = 1; h <= 4; h++) s.add(`a${h}`, "alpha", `hole${h}.example`);
    s.add("b1", "bravo", "b.example");
    expect(takeAll(s)).toEqual(["a1", "b1", "a2"]);
    expect(s.inFlightFor("alpha")).toBe(2);
    expect(s.inFlightFor("bravo")).toBe(1);
    s.release("bravo", "b.example");
    expect(s.take()).toBeUndefined(); // alpha is still at its share
    s.release("alpha", "hole1.example");
    expect(takeAll(s)).toEqual(["a3"]);
  });

  it("keeps an owner's turn while it waits at its cap", () => {
    const s = new FairScheduler<string>({ total: 100, perOwner: 1, perHost: 100 });
    s.add("a1", "alpha", "a");
    s.add("a2", "alpha", "a");
    s.add("b1", "bravo", "b");
    s.add("b2", "bravo", "b");
    expect(takeAll(s)).toEqual(["a1", "b1"]);
    s.release("alpha", "a");
    s.release("bravo", "b");
    expect(takeAll(s)).toEqual(["a2", "b2"]);
  });

  it("clear() forgets what waits but keeps counting what is in flight until released", () => {
    const s = new FairScheduler<string>({ total: 2, perOwner: 100, perHost: 100 });
    for (let i = 1; i <= 4; i++) s.add(`i${i}`, "alpha", "h");
    expect(takeAll(s)).toEqual(["i1", "i2"]);
    s.clear();
    expect(s.inFlight).toBe(2);
    s.release("alpha", "h");
    s.release("alpha", "h");
    expect(s.inFlight).toBe(0);
    expect(s.inFlightFor("alpha")).toBe(0);
    expect(s.inFlightTo("h")).toBe(0);
    expect(s.take()).toBeUndefined();
  });

  it("treats limits below 1 as 1 (a zero would stop every delivery)", () => {
    const s = new FairScheduler<string>({ total: 0, perOwner: -3, perHost: 0 });
    s.add("x", "o", "h");
    s.add("y", "o", "h");
    expect(takeAll(s)).toEqual(["x"]);
  });
});
