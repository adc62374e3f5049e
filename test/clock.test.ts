import { describe, expect, it } from "vitest";
import { decodeTime, isValid, monotonicFactory } from "ulid";
import { newId, now, ulidFactory } from "../src/clock";

describe("ulidFactory", () => {
  it("makes valid ULIDs whose time is the clock's millisecond", () => {
    const times = [1_700_000_000_000, 1_700_000_000_000, 1_700_000_000_007];
    let i = 0;
    const next = ulidFactory(() => times[i++]);
    const ids = times.map(() => next());
    for (const [k, id] of ids.entries()) {
      expect(id).toMatch(/^[0-9A-HJKMNP-TV-Z]{26}$/);
      expect(isValid(id)).toBe(true);
      expect(decodeTime(id)).toBe(times[k]);
    }
  });

  it("increments the random part by one within a millisecond, and draws it afresh in the next", () => {
    let ms = 5;
    const draws = [0, 41, 7, 9];
    const next = ulidFactory(
      () => ms,
      () => draws.shift() as number,
    );
    expect(next()).toBe("0000000005" + "00000000" + "00000019"); // time 5; high half 0; low half 41 = 1·32 + 9
    expect(next().slice(10)).toBe("000000000000001A");
    ms = 6;
    expect(next().slice(10)).toBe("0000000700000009");
  });

  it("carries into the high half when the low 40 bits overflow", () => {
    const draws = [3, 2 ** 40 - 1];
    const next = ulidFactory(
      () => 1,
      () => draws.shift() as number,
    );
    expect(next().slice(10)).toBe("00000003ZZZZZZZZ");
    expect(next().slice(10)).toBe("0000000400000000");
  });

  it("keeps ids in the order they were made when the clock steps back", () => {
    const times = [2000, 2000, 1500, 1999, 2001];
    let i = 0;
    const next = ulidFactory(() => times[i++]);
    const ids = times.map(() => next());
    expect([...ids].sort()).toEqual(ids);
    expect(new Set(ids).size).toBe(ids.length);
    expect(decodeTime(ids[2])).toBe(2000);
    expect(decodeTime(ids[4])).toBe(2001);
  });

  it("sorts like the ulid package's own monotonic factory: by time, then by order made", () => {
    const theirs = monotonicFactory();
    const ours: string[] = [];
    const reference: string[] = [];
    for (let i = 0; i < 2000; i++) {
      ours.push(newId());
      reference.push(theirs());
    }
    expect([...ours].sort()).toEqual(ours);
    expect(new Set(ours).size).toBe(ours.length);
    // Same length, alphabet and time encoding as the package's ids.
    expect(Math.abs(decodeTime(ours[0]) - decodeTime(reference[0]))).toBeLessThan(1000);
  });
});

describe("now", () => {
  it("is the current time as ISO-8601 UTC with milliseconds", () => {
    const before = Date.now();
    const t = now();
    const after = Date.now();
    expect(t).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
    expect(Date.parse(t)).toBeGreaterThanOrEqual(before);
    expect(Date.parse(t)).toBeLessThanOrEqual(after);
  });
});
