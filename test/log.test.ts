import { describe, expect, it } from "vitest";
import { createLogger, resolveLogFormat } from "../src/log";

function capture(format: "json" | "text", level: "info" | "warn" | "error" = "info") {
  const lines: string[] = [];
  return { log: createLogger((l) => lines.push(l), level, format), lines };
}

describe("the JSON log", () => {
  it("writes one JSON object per line: time, level, msg first, then the fields", () => {
    const { log, lines } = capture("json");
    log.info("task finished", { task_id: "t1", context_id: "c1", peer: "alpha", duration_ms: 12, skipped: undefined });
    expect(lines).toHaveLength(1);
    expect(lines[0].endsWith("}\n")).toBe(true);
    expect(lines[0]).toMatch(/^\{"time":"\d{4}-\d\d-\d\dT[\d:.]+Z","level":"info","msg":"task finished",/);
    expect(JSON.parse(lines[0])).toEqual({
      time: expect.any(String),
      level: "info",
      msg: "task finished",
      task_id: "t1",
      context_id: "c1",
      peer: "alpha",
      duration_ms: 12,
    });
  });

  it("keeps every line parseable: quotes and newlines escaped, errors as their message, cycles as text", () => {
    const { log, lines } = capture("json");
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    log.error('a "quoted"\nmessage', { err: new Error("disk full"), cyclic, n: 10n as unknown, nested: { a: [1, 2] } });
    expect(lines[0].split("\n")).toHaveLength(2); // one line, then the terminating newline
    const parsed = JSON.parse(lines[0]);
    expect(parsed).toMatchObject({
      level: "error",
      msg: 'a "quoted"\nmessage',
      err: "disk full",
      cyclic: "[object Object]",
      n: "10",
      nested: { a: [1, 2] },
    });
  });

  it("a field cannot overwrite time, level or msg", () => {
    const { log, lines } = capture("json");
    log.warn("real", { msg: "forged", level: "info", time: "x" });
    expect(JSON.parse(lines[0])).toMatchObject({ msg: "real", level: "warn" });
    expect(JSON.parse(lines[0]).time).not.toBe("x");
  });

  it("levels below the threshold are not written, and the threshold can change", () => {
    const { log, lines } = capture("json", "warn");
    log.info("hidden");
    log.warn("shown");
    log.setLevel("info");
    log.info("now shown");
    expect(lines.map((l) => JSON.parse(l).msg)).toEqual(["shown", "now shown"]);
  });
});

describe("the text log", () => {
  it("writes TIME LEVEL MESSAGE key=value, quoting values with spaces", () => {
    const { log, lines } = capture("text");
    log.info("task accepted", { task_id: "t1", reason: "two words" });
    expect(lines[0]).toMatch(/^\S+Z info task accepted task_id=t1 reason="two words"\n$/);
  });
});

describe("log_format auto", () => {
  it("is text on a terminal and JSON anywhere else (journald, a container, a pipe, a file)", () => {
    expect(resolveLogFormat("auto", true)).toBe("text");
    expect(resolveLogFormat("auto", false)).toBe("json");
    expect(resolveLogFormat("json", true)).toBe("json");
    expect(resolveLogFormat("text", false)).toBe("text");
  });
});
