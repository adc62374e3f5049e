import { describe, expect, it } from "vitest";
import { longLines, literalWidths } from "../../scripts/check-line-width";
import { rewrap } from "../../scripts/rewrap-comments";

const words = (n: number, from = 0) => Array.from({ length: n }, (_, i) => `word${from + i}`).join(" ");

describe("rewrap-comments", () => {
  it("moves the words past the width into the next line of the same paragraph, keeping the prefix", () => {
    const source = ["/**", ` * ${words(30)}`, ` * ${words(2, 30)}`, " */", "const x = 1;"].join("\n");
    const out = rewrap(source, 60).split("\n");
    expect(out.every((l) => l.length <= 60)).toBe(true);
    expect(out.slice(1, -2).every((l) => l.startsWith(" * "))).toBe(true);
    expect(out.join(" ").replace(/\s*\*\s*/g, " ")).toContain(words(32));
    expect(out.at(-1)).toBe("const x = 1;");
  });

  it("starts a new line for a list item's overflow, aligned under its text, and leaves the next item alone", () => {
    const out = rewrap(`// - ${words(14)}\n// - next item`, 60).split("\n");
    expect(out.at(-1)).toBe("// - next item");
    expect(out[1]).toMatch(/^\/\/ {3}word/);
  });

  it("opens a one-line /** */ past the width into a block, and moves a trailing comment above its code", () => {
    expect(rewrap(`  /** ${words(12)} */`, 60).split("\n")[0]).toBe("  /**");
    expect(rewrap(`  const url = "http://a//b"; // ${words(10)}`, 60).split("\n")).toEqual([
      `  // ${words(10)}`,
      '  const url = "http://a//b";',
    ]);
  });

  it("leaves code and strings as they are", () => {
    const code = `const s = "${words(20)}";`;
    expect(rewrap(code, 60)).toBe(code);
  });
});

describe("check-line-width", () => {
  it("counts a literal's text, and a multi-line template's, line by line", () => {
    const widths = literalWidths('f("abc", 1);\nconst t = `one\ntwo two`;');
    expect(widths).toEqual([5, 4, 8]);
  });

  it("finds this repository's own check script within the width", () => {
    const root = `${import.meta.dirname}/../..`;
    expect(longLines(root, ["scripts/check-line-width.ts", "scripts/rewrap-comments.ts"])).toEqual([]);
  });
});
