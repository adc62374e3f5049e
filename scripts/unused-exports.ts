/**
 * Exported names of src/ that nothing else uses: for each `export` of a file under src/, whether its name appears
 * in any other file of src/, test/, scripts/ or pki/ (a word match, so a name used anywhere counts as used: the
 * list errs towards keeping). Prints two lists: names used by no other file (un-export them if the file uses them
 * itself, remove them if not) and names used only by tests (the product does not use them outside their file).
 * Usage: bun scripts/unused-exports.ts
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

const ROOT = join(import.meta.dirname, "..");
const files = (dir: string): string[] =>
  readdirSync(join(ROOT, dir), { recursive: true, encoding: "utf8" })
    .filter((f) => /\.tsx?$/.test(f) && !f.includes("node_modules"))
    .map((f) => join(dir, f));
const all = ["src", "test", "scripts", "pki"].flatMap(files);
const text = new Map(all.map((f) => [f, readFileSync(join(ROOT, f), "utf8")]));

const DECL =
  /^export\s+(?:declare\s+)?(?:default\s+)?(?:async\s+)?(?:abstract\s+)?(?:function\*?|const|let|class|interface|type|enum)\s+([A-Za-z_$][\w$]*)/gm;
const LIST = /^export\s+(?:type\s+)?\{([^}]*)\}(?!\s*from)/gm;
const unused: string[] = [];
const testsOnly: string[] = [];
for (const file of all.filter((f) => f.startsWith("src/"))) {
  const src = text.get(file)!;
  const names = [...src.matchAll(DECL)].map((m) => m[1]!);
  for (const m of src.matchAll(LIST))
    for (const part of m[1]!.split(",")) {
      const name = part
        .trim()
        .split(/\s+as\s+/)
        .pop()!
        .replace(/^type\s+/, "");
      if (name) names.push(name);
    }
  for (const name of names) {
    const word = new RegExp(`\\b${name.replace(/\$/g, "\\$")}\\b`);
    const users = all.filter((f) => f !== file && word.test(text.get(f)!));
    const ownUses = src.split(word).length - 2;
    const where = `${file}: ${name}${ownUses > 0 ? " (used in its file)" : ""}`;
    if (users.length === 0) unused.push(where);
    else if (users.every((f) => f.startsWith("test/"))) testsOnly.push(`${where} <- ${users.join(", ")}`);
  }
}
console.log(`Used by no other file (${unused.length}):\n  ${unused.join("\n  ")}`);
console.log(`Used only by tests (${testsOnly.length}):\n  ${testsOnly.join("\n  ")}`);
