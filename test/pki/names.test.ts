import { describe, expect, it } from "vitest";
import { PkiError, normalizeNodeName, normalizeSans, parseSan } from "../../pki";
import { checkDays, checkIssuedNodeName, nodeNameProblem, RESERVED_NODE_NAMES } from "../../pki/names";

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

describe("reserved node names", () => {
  it.each([
    ["local", "local", /plain-HTTP loopback listener/],
    ["LOCAL", "local", /plain-HTTP loopback listener/],
    ["localhost", "localhost", /localhost always means the dialling machine/],
    ["LocalHost", "localhost", /localhost always means the dialling machine/],
  ])("refuses %j with RESERVED_NAME, saying what the name means and what to do", (name, canonical, why) => {
    expect(codeOf(() => normalizeNodeName(name))).toBe("RESERVED_NAME");
    try {
      normalizeNodeName(name);
    } catch (err) {
      expect((err as PkiError).message).toMatch(new RegExp(`^the name "${canonical}" is reserved: `));
      expect((err as PkiError).message).toMatch(why);
      expect((err as PkiError).hint).toBe("choose another name for this node, such as the machine's host name");
    }
  });

  it("reserves only what the node uses, not names an object happens to inherit", () => {
    for (const name of ["constructor", "tostring", "local-1", "locals", "my-localhost", "ca"])
      expect(normalizeNodeName(name)).toBe(name);
    expect([...RESERVED_NODE_NAMES.keys()]).toEqual(["local", "localhost"]);
  });
});

describe("names read from a peer's certificate", () => {
  it("accepts a name exactly as issued", () => {
    for (const name of ["alice", "build-box-2", "7", "a".repeat(63)]) expect(nodeNameProblem(name)).toBeUndefined();
  });

  it.each([
    ["Alice", /^invalid name "Alice": a node name is issued in lower case$/],
    ["\u212Ailo", /^invalid name "\u212Ailo": a node name is issued in lower case$/],
    ["alice\u0000", /^invalid name "alice\\u0000": only letters/],
    ["alice\u007f", /^invalid name "alice\u007f": only letters/],
    ["alice\r", /^invalid name "alice\\r": only letters/],
    [" alice", /only letters/],
    ["alice, CN=bob", /only letters/],
    ["", /must be 1 to 63 characters/],
    ["local", /^the name "local" is reserved/],
    ["Local", /^the name "local" is reserved/],
  ])("refuses %j, saying why", (name, why) => {
    expect(nodeNameProblem(name)).toMatch(why);
    expect(codeOf(() => checkIssuedNodeName(name))).toMatch(/^(BAD_NAME|RESERVED_NAME)$/);
  });
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
    for (const bad of [0, -1, 1.5, 36501, Number.NaN])
      expect(codeOf(() => checkDays(bad, "certificate"))).toBe("BAD_DAYS");
  });
});
