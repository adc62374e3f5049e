import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { COMMANDS, runCli, TOP_HELP } from "../../src/cli/registry";
import { bufferIo } from "../../src/cli/io";
import { EXIT_CODE_MEANINGS, ExitCode } from "../../src/cli/errors";

/** The lines under a heading such as USAGE, up to the next heading. */
function section(help: string, heading: string): string {
  const m = new RegExp(`^${heading}\\n((?:.*\\n)*?)(?=^[A-Z][A-Z ()a-z]*\\n|$(?![\\s\\S]))`, "m").exec(help);
  expect(m, `no ${heading} section`).not.toBeNull();
  return m![1];
}

const subcommands = (await Promise.all(COMMANDS.map(async (c) => ({ name: c.name, command: await c.load() })))).flatMap(({ name, command }) =>
  Object.keys(command.subcommands ?? {}).map((sub) => [name, sub]),
);

describe("help", () => {
  it("lists every command in the top-level help", () => {
    for (const c of COMMANDS) expect(TOP_HELP).toContain(`  ${c.name}`);
  });

  it.each(COMMANDS.map((c) => [c.name]))("'%s --help' has a summary, usage, examples, exit codes, and every flag it parses", async (name) => {
    const entry = COMMANDS.find((c) => c.name === name)!;
    const command = await entry.load();
    const io = bufferIo();
    expect(await runCli([name, "--help"], io)).toBe(0);
    expect(io.err()).toBe("");
    const help = io.out();
    // The summary heads the help, and is the one the overview lists.
    expect(command.summary).toBe(entry.summary);
    expect(command.summary.length).toBeGreaterThan(10);
    expect(help.split("\n")[0]).toBe(`a2a-node ${name}: ${entry.summary}`);
    expect(section(help, "USAGE")).toMatch(new RegExp(`^ +(sudo )?a2a-node ${name}\\b`, "m"));
    expect(section(help, "EXAMPLES")).toMatch(new RegExp(`^ +(sudo )?a2a-node ${name}\\b`, "m"));
    expect(section(help, "EXIT CODES")).toMatch(/\b0\b/);
    const flags = [...Object.keys(command.flags), ...Object.values(command.subcommands ?? {}).flatMap((f) => Object.keys(f))];
    for (const flag of flags) expect(help, `--${flag} is not in '${name} --help'`).toMatch(new RegExp(`--${flag}\\b`));
  });

  it("the walk sees the subcommands", () => {
    expect(subcommands).toEqual(expect.arrayContaining([["pki", "issue"], ["peers", "add"], ["service", "install"], ["completion", "bash"]]));
  });

  it.each(subcommands)("'%s %s --help' shows usage and an example of that subcommand", async (name, sub) => {
    const io = bufferIo();
    expect(await runCli([name, sub, "--help"], io)).toBe(0);
    expect(io.err()).toBe("");
    expect(io.out().split("\n")[0]).toMatch(new RegExp(`^a2a-node ${name}: .{10,}`));
    expect(section(io.out(), "USAGE")).toMatch(new RegExp(`^ +(sudo )?a2a-node ${name} ([a-z-]+ )*${sub}\\b`, "m"));
    expect(section(io.out(), "EXAMPLES")).toMatch(new RegExp(`a2a-node ${name} ([a-z-]+ )*${sub}\\b`));
  });

  it("the README's command table names every command, and its exit codes every ExitCode", () => {
    const readme = readFileSync(join(import.meta.dirname, "..", "..", "README.md"), "utf8");
    const table = readme.slice(readme.indexOf("## Commands"), readme.indexOf("## Configuration"));
    for (const c of COMMANDS) expect(table, c.name).toMatch(new RegExp(`^\\| \`${c.name}\\b`, "m"));
    const codes = /^Exit codes: (.*(?:\n.+)*)/m.exec(table)?.[1] ?? "";
    for (const code of Object.values(ExitCode)) expect(codes).toMatch(new RegExp(`\\b${code} `));
  });

  it("the overview's exit codes are every ExitCode, each with its meaning", () => {
    const codes = section(TOP_HELP, "EXIT CODES");
    for (const [key, code] of Object.entries(ExitCode)) expect(codes).toContain(`${code} ${EXIT_CODE_MEANINGS[key as keyof typeof ExitCode]}`);
    expect(codes).toContain("6 the task waits for input");
  });

  it("'help CMD' is the same as 'CMD --help'", async () => {
    const a = bufferIo();
    const b = bufferIo();
    await runCli(["help", "send"], a);
    await runCli(["send", "--help"], b);
    expect(a.out()).toBe(b.out());
  });

  it("no command prints the overview and exits 2", async () => {
    const io = bufferIo();
    expect(await runCli([], io)).toBe(2);
    expect(io.out()).toBe(TOP_HELP);
  });

  it("an unknown command or flag is a usage error pointing at help", async () => {
    const io = bufferIo();
    expect(await runCli(["sned"], io)).toBe(2);
    expect(io.err()).toBe("a2a-node: unknown command 'sned'\nsee 'a2a-node --help'\n");
    const io2 = bufferIo();
    expect(await runCli(["version", "--jsn"], io2)).toBe(2);
    expect(io2.err()).toBe("a2a-node: unknown flag '--jsn'\nsee 'a2a-node version --help'\n");
    const io3 = bufferIo();
    expect(await runCli(["--home"], io3)).toBe(2);
    expect(io3.err()).toContain("--home needs a value");
  });

  it("version prints the version, also as JSON", async () => {
    const io = bufferIo();
    expect(await runCli(["version", "--json"], io)).toBe(0);
    const v = JSON.parse(io.out());
    expect(v.version).toMatch(/^\d+\.\d+\.\d+/);
    expect(typeof v.bun).toBe("string");
  });
});
