/**
 * Rewraps comment lines longer than 120 characters, which the formatter leaves as they are: the words past the
 * width move down into the next line of the same paragraph (or a new line under it, with the same prefix and the
 * indentation of a list item's text), so only the paragraphs that were too long change. A trailing `// comment`
 * that makes a code line too long moves to its own line above the code. Code, strings and generated files
 * (scripts/check-line-width.ts says which) are left alone; a single word longer than the width stays.
 *
 * Usage: bun scripts/rewrap-comments.ts [--check] [--width 120] [DIR or FILE...]   (default: src test scripts pki)
 */
import { readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";

const GENERATED = new Set([
  "src/store/migrations.gen.ts",
  "src/store/postgres/migrations.gen.ts",
  "src/grpc/a2a-schema.generated.ts",
]);

/** A comment line: its prefix (indentation and `//`, ` *` or `/**`, one space) and its text. */
const COMMENT = /^(\s*(?:\/\/|\*|\/\*\*)\s?)(.*)$/;
/** Text that starts a new paragraph item rather than continuing one. */
const ITEM = /^(?:[-*+]|\d+[.)]|@\w+)\s/;

export function rewrap(source: string, width = 120): string {
  const lines = source.split("\n");
  let inBlock = false;
  let inFence = false;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i]!;
    const trimmed = line.trimStart();
    const blockLine = inBlock || trimmed.startsWith("/*");
    if (trimmed.startsWith("/*")) inBlock = !trimmed.includes("*/", 2);
    else if (inBlock && trimmed.includes("*/")) inBlock = false;
    const isComment = trimmed.startsWith("//") || (blockLine && (trimmed.startsWith("*") || trimmed.startsWith("/*")));
    if (isComment && /^(\*|\/\/)\s*```/.test(trimmed)) inFence = !inFence;
    if (line.length <= width) continue;
    if (!isComment) {
      lines.splice(i, 1, ...moveTrailingComment(line, width));
      continue;
    }
    if (inFence) continue;
    const oneLine = /^(\s*)\/\*\*\s?(.*?)\s*\*\/$/.exec(line);
    if (oneLine) {
      // `/** text */` past the width becomes a block of its own, wrapped on the next turns of the loop.
      const [, indent, text] = oneLine;
      lines.splice(i, 1, `${indent}/**`, `${indent} * ${text}`, `${indent} */`);
      inBlock = true;
      continue;
    }
    if (trimmed.endsWith("*/")) continue;
    const m = COMMENT.exec(line)!;
    const prefix = m[1]!;
    const text = m[2]!;
    const cut = text.lastIndexOf(" ", width - prefix.length);
    if (cut <= 0) continue;
    const head = text.slice(0, cut).trimEnd();
    const rest = text.slice(cut + 1).trim();
    lines[i] = prefix + head;
    // The item's text indentation (a bullet's continuation lines align under its text).
    const item = /^((?:[-*+]|\d+[.)])\s+)/.exec(text);
    const hanging = /^\s*/.exec(text)![0] + (item ? " ".repeat(item[1]!.length) : "");
    const next = lines[i + 1];
    const nm = next === undefined ? undefined : COMMENT.exec(next);
    const continues =
      nm &&
      nm[1] === prefix &&
      nm[2]!.trim() !== "" &&
      !ITEM.test(nm[2]!.trim()) &&
      !nm[2]!.trim().startsWith("*/") &&
      !/^\s*```/.test(nm[2]!) &&
      /^\s*/.exec(nm[2]!)![0] === hanging;
    if (continues) lines[i + 1] = prefix + hanging + rest + " " + nm[2]!.trim();
    else lines.splice(i + 1, 0, prefix + hanging + rest);
  }
  return lines.join("\n");
}

/** `code; // why` past the width: the comment goes on its own line above, if the code then fits. */
function moveTrailingComment(line: string, width: number): string[] {
  const at = trailingCommentAt(line);
  if (at < 0) return [line];
  const code = line.slice(0, at).trimEnd();
  if (code.length > width || code.trim() === "") return [line];
  const indent = /^\s*/.exec(line)![0];
  return [indent + line.slice(at).trim(), code];
}

/** Where a `//` comment starts outside strings and regular expressions, or -1. */
function trailingCommentAt(line: string): number {
  let quote = "";
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!;
    if (quote) {
      if (c === "\\") i++;
      else if (c === quote) quote = "";
    } else if (c === '"' || c === "'" || c === "`") quote = c;
    else if (c === "/" && line[i + 1] === "/" && /\s/.test(line[i - 1] ?? "")) return i;
    else if (c === "/" && line[i + 1] !== "/" && line[i + 1] !== "*") return -1; // division or a regex: leave it
  }
  return -1;
}

if (import.meta.main) {
  const args = process.argv.slice(2);
  const check = args.includes("--check");
  const w = args.indexOf("--width");
  const width = w >= 0 ? Number(args.splice(w, 2)[1]) : 120;
  const root = join(import.meta.dirname, "..");
  const dirs = args.filter((a) => !a.startsWith("--"));
  let changed = 0;
  const roots =
    dirs.length > 0 ? dirs.map((d) => relative(root, join(process.cwd(), d))) : ["src", "test", "scripts", "pki"];
  const under = (path: string) =>
    statSync(path).isFile() ? [""] : readdirSync(path, { recursive: true, encoding: "utf8" });
  for (const dir of roots)
    for (const name of under(join(root, dir))) {
      const file = join(dir, name);
      if (!file.endsWith(".ts") || file.includes("node_modules") || GENERATED.has(file)) continue;
      const before = readFileSync(join(root, file), "utf8");
      const after = rewrap(before, width);
      if (after === before) continue;
      changed++;
      if (check) console.log(`${file}: comments past ${width} characters`);
      else writeFileSync(join(root, file), after);
    }
  console.log(`${changed} file(s) ${check ? "to rewrap" : "rewrapped"}`);
  process.exit(check && changed > 0 ? 1 : 0);
}
