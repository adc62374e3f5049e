/**
 * The manual inside the binary: `a2a-node help TOPIC` prints each page of src/help/topics/, the generated pages
 * (commands, settings) are exactly what the registry and the settings declarations make, and the README, the
 * front door, points at every page.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { bufferIo } from "../../src/cli/io";
import { commandReference, settingsReference } from "../../src/cli/reference";
import { COMMANDS, runCli, TOP_HELP } from "../../src/cli/registry";
import { ExitCode } from "../../src/cli/errors";
import { topicPath, TOPICS } from "../../src/help/topics";

const root = join(import.meta.dirname, "..", "..");
const source = (name: string) => readFileSync(join(root, topicPath(name)), "utf8");

describe("help topics", () => {
  it("every file under src/help/topics/ is a topic, and every topic is its file's text", () => {
    const files = readdirSync(join(root, "src", "help", "topics")).filter((f) => f.endsWith(".md"));
    expect(files.map((f) => f.slice(0, -3)).sort()).toEqual(TOPICS.map((t) => t.name).sort());
    for (const t of TOPICS) {
      expect(t.text, t.name).toBe(source(t.name));
      expect(t.text, t.name).toMatch(/^# \S/);
    }
  });

  it("'help TOPIC' prints the page, and 'help' lists every topic and command", async () => {
    for (const t of TOPICS) {
      const io = bufferIo();
      expect(await runCli(["help", t.name], io)).toBe(0);
      expect(io.out()).toBe(t.text);
    }
    const io = bufferIo();
    expect(await runCli(["help"], io)).toBe(0);
    expect(io.out()).toBe(TOP_HELP);
    for (const t of TOPICS) expect(TOP_HELP).toContain(`  ${t.name} `);
    for (const c of COMMANDS) expect(TOP_HELP).toContain(`  ${c.name} `);
  });

  it("'help COMMAND' is 'COMMAND --help'", async () => {
    const a = bufferIo();
    const b = bufferIo();
    expect(await runCli(["help", "peers"], a)).toBe(0);
    await runCli(["peers", "--help"], b);
    expect(a.out()).toBe(b.out());
  });

  it("an unknown topic is a usage error that says what was meant", async () => {
    const io = bufferIo();
    expect(await runCli(["help", "trubleshooting"], io)).toBe(ExitCode.Usage);
    expect(io.out()).toBe("");
    expect(io.err()).toBe(
      "a2a-node: no help topic or command 'trubleshooting' (did you mean 'troubleshooting'?)\nsee 'a2a-node help' for the list\n",
    );
    const sub = bufferIo();
    expect(await runCli(["help", "pki", "tokn"], sub)).toBe(ExitCode.Usage);
    expect(sub.err()).toContain("'pki' has no subcommand 'tokn' (did you mean 'token'?)");
    const topicAsCommand = bufferIo();
    expect(await runCli(["postgres"], topicAsCommand)).toBe(ExitCode.Usage);
    expect(topicAsCommand.err()).toContain("'postgres' is a help topic: a2a-node help postgres");
  });

  it("the command reference is what the registry makes (bun scripts/help-reference.ts writes it)", async () => {
    const commands = await Promise.all(COMMANDS.map((c) => c.load()));
    expect(source("commands")).toBe(commandReference(commands));
    for (const c of commands) {
      expect(source("commands")).toContain(`## ${c.name}\n`);
      for (const sub of c.subcommands ?? []) expect(source("commands")).toContain(`### ${c.name} ${sub.name}\n`);
    }
    for (const code of Object.values(ExitCode))
      expect(source("commands")).toMatch(new RegExp(`^\\| ${code} \\| `, "m"));
  });

  it("the settings table is what the declarations make (bun scripts/help-reference.ts writes it)", () => {
    expect(source("settings")).toBe(settingsReference());
  });
});

describe("the README", () => {
  const readme = readFileSync(join(root, "README.md"), "utf8");

  it("is the front door: short, and it points at every page of the manual", () => {
    expect(readme.split("\n").length).toBeLessThan(300);
    for (const t of TOPICS) expect(readme, t.name).toContain(topicPath(t.name));
  });

  it("lists every command of the registry, and no other, in its command block", () => {
    const block = readme.slice(readme.indexOf("## The commands")).split("```")[1]!;
    const listed = block
      .split("\n")
      .map((l) => /^([a-z-]+) {2,}\S/.exec(l)?.[1])
      .filter((n): n is string => !!n);
    expect(listed.sort()).toEqual([...COMMANDS.map((c) => c.name), "help"].sort());
  });

  it("gives the test command CI runs", () => {
    const ci = readFileSync(join(root, ".ci", "run"), "utf8");
    expect(ci).toMatch(/^npm test$/m);
    expect(readme).toMatch(/^npm ci && npm test\b/m);
  });
});
