import { describe, expect, it } from "vitest";
import { PkiError, normalizeNodeName, normalizeSans, parseSan } from "../../pki";
import { checkDays } from "../../pki/names";

function codeOf(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (err) {
    return err instanceof PkiError ? err.code : "not a PkiError";
  }
  return undefined;
}

describe("node names", () => {
  it("accepts DNS-label names and lowercases them", () => {
    expect(normalizeNodeName("alice")).toBe("alice");
    expect(normalizeNodeName("Build-Box-2")).toBe("build-box-2");
    expect(normalizeNodeName("7")).toBe("7");
    expect(normalizeNodeName("a".repeat(63))).toBe("a".repeat(63));
  });

  it.each(["", "a".repeat(64), "-alice", "alice-", "al_ice", "alice.lan", "al ice", "élise", "alice\n"])(
    "refuses %j with BAD_NAME and a hint",
    (name) => {
      expect(codeOf(() => normalizeNodeName(name))).toBe("BAD_NAME");
      try {
        normalizeNodeName(name);
      } catch (err) {
        expect((err as PkiError).hint).toMatch(/letters, digits/);
      }
    },
  );
});

describe("SANs", () => {
  it("accepts DNS names, wildcards, IPv4 and IPv6, in canonical form", () => {
    expect(parseSan("Host.Example.COM")).toEqual({ type: "dns", value: "host.example.com" });
    expect(parseSan("*.svc.lan")).toEqual({ type: "dns", value: "*.svc.lan" });
    expect(parseSan("localhost")).toEqual({ type: "dns", value: "localhost" });
    expect(parseSan("10.0.0.5")).toEqual({ type: "ip", value: "10.0.0.5" });
    expect(parseSan("::1")).toEqual({ type: "ip", value: "::1" });
    expect(parseSan("FD00:0:0::0005")).toEqual({ type: "ip", value: "fd00::5" });
  });

  it.each([
    "",
    "a..b",
    "-a.example",
    "a-.example",
    "under_score.example",
    "*.",
    "a.*.example",
    "*",
    "[::1]",
    "fe80::1%eth0",
    "256.0.0.1",
    "10.1",
    "999.1.1.1",
    "x".repeat(64) + ".example",
    "a.".repeat(127) + "a",
    "http://alice",
  ])("refuses %j with BAD_SAN", (san) => {
    expect(codeOf(() => parseSan(san))).toBe("BAD_SAN");
  });

  it("de-duplicates by canonical form, keeping the first position", () => {
    expect(normalizeSans(["a.example", "::1", "A.Example", "0:0::1", "10.0.0.1"])).toEqual([
      { type: "dns", value: "a.example" },
      { type: "ip", value: "::1" },
      { type: "ip", value: "10.0.0.1" },
    ]);
  });

  it("bounds validity days", () => {
    expect(checkDays(1, "certificate")).toBe(1);
    for (const bad of [0, -1, 1.5, 36501, Number.NaN]) expect(codeOf(() => checkDays(bad, "certificate"))).toBe("BAD_DAYS");
  });
});
