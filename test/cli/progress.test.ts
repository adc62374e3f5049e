import { describe, expect, it } from "vitest";
import { bufferIo } from "../../src/cli/io";
import { elapsedText, ProgressLine } from "../../src/cli/progress";

const TERMINAL = { stdin: true, stdout: true, stderr: true, columns: 80 };
const CLEAR = "\r\x1b[2K";

describe("the progress line", () => {
  it("draws label, state, time waited and the last status message on one line of stderr, in place", () => {
    const io = bufferIo({}, { tty: TERMINAL });
    const line = ProgressLine.start(io, "peer 'beta'", false);
    line.update("working", "reading   the\nfiles");
    expect(io.err().endsWith(`${CLEAR}⠙ peer 'beta' · working · 0s · reading the files`)).toBe(true);
    expect(io.out()).toBe("");
    line.stop();
    expect(io.err().endsWith(CLEAR)).toBe(true);
  });

  it("is cut to the terminal's width, never wrapped", () => {
    const io = bufferIo({}, { tty: { ...TERMINAL, columns: 40 } });
    const line = ProgressLine.start(io, "peer 'beta'", false);
    line.update("working", "x".repeat(200));
    const drawn = io.err().split(CLEAR).at(-1)!;
    expect([...drawn]).toHaveLength(39);
    expect(drawn.endsWith("…")).toBe(true);
    line.stop();
  });

  it("prints a line above itself, and can be hidden while other output shares the terminal", () => {
    const io = bufferIo({}, { tty: TERMINAL });
    const line = ProgressLine.start(io, "b", false);
    line.print("task X accepted");
    expect(io.err()).toContain(`${CLEAR}task X accepted\n`);
    line.hide();
    const before = io.err();
    line.update("completed", "done");
    expect(io.err()).toBe(before); // hidden: nothing drawn
    line.show();
    expect(io.err().endsWith("completed · 0s · done")).toBe(true);
    line.stop();
  });

  it.each([
    ["stderr is not a terminal", { ...TERMINAL, stderr: false }, {}, false],
    ["--json", TERMINAL, {}, true],
    ["TERM=dumb", TERMINAL, { TERM: "dumb" }, false],
  ])("writes nothing when %s", (_label, tty, env, json) => {
    const io = bufferIo(env, { tty });
    const line = ProgressLine.start(io, "b", json);
    line.update("working", "busy");
    line.print("a permanent line");
    line.stop();
    expect(line.enabled).toBe(false);
    expect(io.err()).toBe("a permanent line\n");
  });

  it.each([
    [0, "0s"],
    [59_999, "59s"],
    [65_000, "1m05s"],
    [3_600_000 + 180_000, "1h03m"],
  ])("elapsedText(%i) is %s", (ms, text) => {
    expect(elapsedText(ms)).toBe(text);
  });
});
