import { describe, expect, it } from "vitest";
import {
  extractContext,
  formatTraceparent,
  formatTracestate,
  injectContext,
  parseTraceparent,
  parseTracestate,
  TRACESTATE_MAX_MEMBERS,
} from "../../src/tracing/trace-context";

const TRACE = "4bf92f3577b34da6a3ce929d0e0e4736";
const SPAN = "00f067aa0ba902b7";
const VALID = `00-${TRACE}-${SPAN}-01`;

describe("traceparent", () => {
  it("reads the spec's example, sampled and not", () => {
    expect(parseTraceparent(VALID)).toEqual({ traceId: TRACE, spanId: SPAN, sampled: true, remote: true });
    expect(parseTraceparent(`00-${TRACE}-${SPAN}-00`)?.sampled).toBe(false);
    // Only bit 0 means anything to version 00; other flag bits are carried by no one but must not refuse it.
    expect(parseTraceparent(`00-${TRACE}-${SPAN}-03`)?.sampled).toBe(true);
    expect(parseTraceparent(`  ${VALID}  `)?.traceId).toBe(TRACE);
  });

  it("takes the first four fields of a higher version, and nothing glued to them", () => {
    expect(parseTraceparent(`cc-${TRACE}-${SPAN}-01-what-the-future-holds`)?.spanId).toBe(SPAN);
    expect(parseTraceparent(`cc-${TRACE}-${SPAN}-01`)?.spanId).toBe(SPAN);
    expect(parseTraceparent(`cc-${TRACE}-${SPAN}-01.what`)).toBeUndefined();
  });

  it.each([
    ["version ff", `ff-${TRACE}-${SPAN}-01`],
    ["a version that is not hex", `0g-${TRACE}-${SPAN}-01`],
    ["an upper-case version", `0A-${TRACE}-${SPAN}-01`],
    ["version 00 with more after it", `${VALID}-extra`],
    ["version 00 with one more character", `${VALID}0`],
    ["an all-zero trace id", `00-${"0".repeat(32)}-${SPAN}-01`],
    ["an all-zero span id", `00-${TRACE}-${"0".repeat(16)}-01`],
    ["an upper-case trace id", `00-${TRACE.toUpperCase()}-${SPAN}-01`],
    ["an upper-case span id", `00-${TRACE}-${SPAN.replace("f", "F")}-01`],
    ["upper-case flags", `00-${TRACE}-${SPAN}-0A`],
    ["a short trace id", `00-${TRACE.slice(1)}-${SPAN}-01`],
    ["a long trace id", `00-${TRACE}0-${SPAN}-01`],
    ["a short span id", `00-${TRACE}-${SPAN.slice(1)}-01`],
    ["a long span id", `00-${TRACE}-${SPAN}0-01`],
    ["one-digit flags", `00-${TRACE}-${SPAN}-1`],
    ["flags that are not hex", `00-${TRACE}-${SPAN}-0x`],
    ["a non-hex trace id", `00-${TRACE.slice(0, 31)}g-${SPAN}-01`],
    ["underscores for dashes", `00_${TRACE}_${SPAN}_01`],
    ["a missing field", `00-${TRACE}-01`],
    ["an empty header", ""],
    ["garbage", "hello"],
  ])("refuses %s", (_why, header) => {
    expect(parseTraceparent(header)).toBeUndefined();
  });

  it("refuses what is not a string", () => {
    expect(parseTraceparent(undefined)).toBeUndefined();
    expect(parseTraceparent(null)).toBeUndefined();
  });

  it("formats version 00 in lower case, and reads back what it wrote", () => {
    expect(formatTraceparent({ traceId: TRACE, spanId: SPAN, sampled: true })).toBe(VALID);
    expect(formatTraceparent({ traceId: TRACE, spanId: SPAN, sampled: false })).toBe(`00-${TRACE}-${SPAN}-00`);
    expect(parseTraceparent(formatTraceparent({ traceId: TRACE, spanId: SPAN, sampled: false }))?.sampled).toBe(false);
  });
});

describe("tracestate", () => {
  it("reads vendor entries in order, multi-tenant keys included, empty members skipped", () => {
    expect(parseTracestate("rojo=00f067aa0ba902b7,congo=t61rcWkgMzE")).toEqual([
      ["rojo", "00f067aa0ba902b7"],
      ["congo", "t61rcWkgMzE"],
    ]);
    expect(parseTracestate("t1@vendor=x , ,  a_b-c*d/e=1 2")).toEqual([
      ["t1@vendor", "x"],
      ["a_b-c*d/e", "1 2"],
    ]);
  });

  it.each([
    ["an upper-case key", "Rojo=1"],
    ["a key starting with a digit (without a tenant)", "1abc=1"],
    ["a repeated key", "a=1,b=2,a=3"],
    ["an empty value", "a="],
    ["a value with '='", "a=b=c"],
    ["a member without '='", "a=1,b"],
    ["a key that is too long", `${"a".repeat(257)}=1`],
    ["a system id that is too long", `t@${"v".repeat(15)}=1`],
    ["a value with a control character", "a=b\u0001c"],
    ["only commas", ",,"],
  ])("refuses the whole header for %s", (_why, header) => {
    expect(parseTracestate(header)).toBeUndefined();
  });

  it(`takes ${TRACESTATE_MAX_MEMBERS} members and refuses ${TRACESTATE_MAX_MEMBERS + 1}`, () => {
    const members = (n: number) => Array.from({ length: n }, (_, i) => `k${i}=v`).join(",");
    expect(parseTracestate(members(TRACESTATE_MAX_MEMBERS))).toHaveLength(TRACESTATE_MAX_MEMBERS);
    expect(parseTracestate(members(TRACESTATE_MAX_MEMBERS + 1))).toBeUndefined();
  });

  it("formats as it read", () => {
    expect(formatTracestate(parseTracestate("rojo=1,congo=2")!)).toBe("rojo=1,congo=2");
  });
});

describe("extract and inject", () => {
  it("carries both headers through, and drops tracestate without a valid traceparent", () => {
    const incoming = new Headers({ traceparent: VALID, tracestate: "rojo=1" });
    const ctx = extractContext((n) => incoming.get(n));
    expect(ctx).toMatchObject({ traceId: TRACE, spanId: SPAN, traceState: [["rojo", "1"]] });
    const out = new Headers();
    injectContext(ctx!, (n, v) => out.set(n, v));
    expect(out.get("traceparent")).toBe(VALID);
    expect(out.get("tracestate")).toBe("rojo=1");
    expect(extractContext((n) => (n === "tracestate" ? "rojo=1" : `ff-${TRACE}-${SPAN}-01`))).toBeUndefined();
  });

  it("keeps a valid traceparent when tracestate is malformed", () => {
    const ctx = extractContext((n) => (n === "traceparent" ? VALID : "BAD=1"));
    expect(ctx?.traceId).toBe(TRACE);
    expect(ctx?.traceState).toBeUndefined();
  });
});
