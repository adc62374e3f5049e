import { describe, expect, it } from "vitest";
import { newTraceId } from "../../src/tracing/ids";
import { ParentBasedRatioSampler } from "../../src/tracing/sampler";
import type { SpanContext } from "../../src/tracing/trace-context";

const parent = (sampled: boolean): SpanContext => ({
  traceId: "4bf92f3577b34da6a3ce929d0e0e4736",
  spanId: "00f067aa0ba902b7",
  sampled,
  remote: true,
});

describe("head sampling by ratio, following the parent", () => {
  it("follows a parent's decision whatever the ratio", () => {
    expect(new ParentBasedRatioSampler(0).shouldSample(parent(true).traceId, parent(true))).toBe(true);
    expect(new ParentBasedRatioSampler(1).shouldSample(parent(false).traceId, parent(false))).toBe(false);
  });

  it("keeps all or none of new traces at 1 and 0", () => {
    expect(new ParentBasedRatioSampler(1).shouldSample(newTraceId(), undefined)).toBe(true);
    expect(new ParentBasedRatioSampler(0).shouldSample(newTraceId(), undefined)).toBe(false);
  });

  it("judges a new trace from the random part of its id, so every node agrees", () => {
    const half = new ParentBasedRatioSampler(0.5);
    const low = `${"f".repeat(18)}00000000000001`;
    const high = `${"0".repeat(18)}ffffffffffffff`;
    expect(half.shouldSample(low, undefined)).toBe(true);
    expect(half.shouldSample(high, undefined)).toBe(false);
    expect(new ParentBasedRatioSampler(0.5).shouldSample(low, undefined)).toBe(true);
  });

  it("keeps about the ratio of random trace ids", () => {
    const s = new ParentBasedRatioSampler(0.25);
    let kept = 0;
    for (let i = 0; i < 20_000; i++) if (s.shouldSample(newTraceId(), undefined)) kept++;
    // 20 000 draws: the standard deviation is 0.3 %; these bounds are over 15 of them away.
    expect(kept / 20_000).toBeGreaterThan(0.2);
    expect(kept / 20_000).toBeLessThan(0.3);
  });

  it.each([-0.1, 1.5, Number.NaN])("refuses the ratio %s", (r) => {
    expect(() => new ParentBasedRatioSampler(r)).toThrow(/between 0 and 1/);
  });
});
