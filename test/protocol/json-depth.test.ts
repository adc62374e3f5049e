import { describe, expect, it } from "vitest";
import { MAX_JSON_DEPTH, nestsDeeperThan } from "../../src/protocol/json-depth";

const nested = (levels: number, open = "[", close = "]") => open.repeat(levels) + close.repeat(levels);

describe("nestsDeeperThan", () => {
  it("counts objects and arrays inside one another, up to the limit and one past it", () => {
    expect(nestsDeeperThan(nested(MAX_JSON_DEPTH))).toBe(false);
    expect(nestsDeeperThan(nested(MAX_JSON_DEPTH + 1))).toBe(true);
    const objects = (n: number) => '{"a":'.repeat(n - 1) + "{}" + "}".repeat(n - 1);
    expect(nestsDeeperThan(objects(MAX_JSON_DEPTH))).toBe(false);
    expect(nestsDeeperThan(objects(MAX_JSON_DEPTH + 1))).toBe(true);
    expect(nestsDeeperThan('{"a":[{"b":[1]}]}', 4)).toBe(false);
    expect(nestsDeeperThan('{"a":[{"b":[[1]]}]}', 4)).toBe(true);
  });

  it("does not count siblings: depth goes back down when a value closes", () => {
    expect(nestsDeeperThan(`[${Array.from({ length: 1000 }, () => nested(10)).join(",")}]`, 11)).toBe(false);
  });

  it("ignores brackets inside strings, honouring escaped quotes and backslashes", () => {
    expect(nestsDeeperThan(JSON.stringify({ s: "[".repeat(500) }), 2)).toBe(false);
    expect(nestsDeeperThan(JSON.stringify({ s: 'say \\"[[[[[[' }), 2)).toBe(false);
    expect(nestsDeeperThan(JSON.stringify({ s: "ends with a backslash \\", t: [[[1]]] }), 3)).toBe(true);
    expect(nestsDeeperThan(JSON.stringify({ s: "ends with a backslash \\", t: [[[1]]] }), 4)).toBe(false);
  });

  it("refuses the ~90 KB request nested 45,000 levels", () => {
    const body = `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"metadata":${nested(45_000)}}}`;
    expect(nestsDeeperThan(body)).toBe(true);
  });
});
