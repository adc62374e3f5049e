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

const subcommands = (await Promise.all(COMMANDS.map(async (c) => ({ name: c.name, command: await c.load() })))).flatMap(
  ({ name, command }) => (command.subcommands ?? []).map((sub) => [name, sub.name]),
);

describe("help", () => {
  it("lists every command in the top-level help", () => {
    for (const c of COMMANDS) expect(TOP_HELP).toContain(`  ${c.name}`);
  });

  it.each(COMMANDS.map((c) => [c.name]))(
    "'%s --help' has a summary, usage, examples, exit codes, and every flag it parses",
    async (name) => {
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
      const flags = [
        ...Object.keys(command.flags),
        ...(command.subcommands ?? []).flatMap((s) => Object.keys(s.flags)),
      ];
      for (const flag of flags)
        expect(help, `--${flag} is not in '${name} --help'`).toMatch(new RegExp(`--${flag}\\b`));
    },
  );

  it("the walk sees the subcommands", () => {
    expect(subcommands).toEqual(
      expect.arrayContaining([
        ["pki", "issue"],
        ["peers", "add"],
        ["service", "install"],
        ["completion", "bash"],
      ]),
    );
  });

  it.each(subcommands)(
    "'%s %s --help' shows that subcommand alone: usage, every flag it parses, an example",
    async (name, sub) => {
      const command = await COMMANDS.find((c) => c.name === name)!.load();
      const io = bufferIo();
      expect(await runCli([name, sub, "--help"], io)).toBe(0);
      expect(io.err()).toBe("");
      const help = io.out();
      expect(help.split("\n")[0]).toBe(`a2a-node ${name} ${sub}`);
      expect(section(help, "USAGE")).toMatch(new RegExp(`^ +(sudo )?a2a-node ${name} ${sub}\\b`, "m"));
      expect(section(help, "EXAMPLES")).toMatch(new RegExp(`a2a-node ${name} ${sub}\\b`));
      expect(section(help, "EXIT CODES")).toMatch(/\b0\b/);
      for (const flag of Object.keys(command.subcommands!.find((s) => s.name === sub)!.flags))
        expect(help, `--${flag}`).toMatch(new RegExp(`--${flag}\\b`));
      // No other subcommand's usage: 'pki token --help' is about pki token (it once printed the group's 149 lines).
      for (const other of command.subcommands!.filter((s) => s.name !== sub))
        expect(section(help, "USAGE"), other.name).not.toMatch(new RegExp(`a2a-node ${name} ${other.name}(?![\\w-])`));
      // 'help CMD SUB' is the same page.
      const viaHelp = bufferIo();
      expect(await runCli(["help", name, sub], viaHelp)).toBe(0);
      expect(viaHelp.out()).toBe(help);
    },
  );

  it("pki token --help, peers add --help and service install --help are a page, not the group's", async () => {
    for (const [name, sub] of [
      ["pki", "token"],
      ["peers", "add"],
      ["service", "install"],
    ]) {
      const group = bufferIo();
      const one = bufferIo();
      await runCli([name, "--help"], group);
      await runCli([name, sub, "--help"], one);
      expect(one.out().split("\n").length, `${name} ${sub}`).toBeLessThan(group.out().split("\n").length);
    }
  });

  it("the overview's exit codes are every ExitCode, each with its meaning", () => {
    const codes = section(TOP_HELP, "EXIT CODES");
    for (const [key, code] of Object.entries(ExitCode))
      expect(codes).toContain(`${code}  ${EXIT_CODE_MEANINGS[key as keyof typeof ExitCode]}`);
    expect(codes).toContain("6  the task waits for input");
    // One code a line (they once ran together: "...task completed)1 failure").
    expect(codes.trimEnd().split("\n")).toHaveLength(Object.keys(ExitCode).length);
    for (const line of codes.trimEnd().split("\n")) expect(line).toMatch(/^ +\d+  \S/);
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

  it("an unknown command, subcommand or flag is a usage error pointing at help, with what was meant", async () => {
    const io = bufferIo();
    expect(await runCli(["sned"], io)).toBe(2);
    expect(io.err()).toBe("a2a-node: unknown command 'sned' (did you mean 'send'?)\nsee 'a2a-node --help'\n");
    const io2 = bufferIo();
    expect(await runCli(["version", "--jsn"], io2)).toBe(2);
    expect(io2.err()).toBe("a2a-node: unknown flag '--jsn' (did you mean '--json'?)\nsee 'a2a-node version --help'\n");
    const sub = bufferIo();
    expect(await runCli(["pki", "revok", "bob"], sub)).toBe(2);
    expect(sub.err()).toContain("unknown pki subcommand 'revok' (did you mean 'revoke'?)");
    const subFlag = bufferIo();
    expect(await runCli(["peers", "add", "beta", "https://h:9443", "--pinn"], subFlag)).toBe(2);
    expect(subFlag.err()).toBe(
      "a2a-node: unknown flag '--pinn' (did you mean '--pin'?)\nsee 'a2a-node peers add --help'\n",
    );
    const far = bufferIo();
    expect(await runCli(["xyzzy"], far)).toBe(2);
    expect(far.err()).toBe("a2a-node: unknown command 'xyzzy'\nsee 'a2a-node --help'\n");
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
