import { describe, expect, it } from "vitest";
import { COMMANDS, runCli, TOP_HELP } from "../../src/cli/registry";
import { bufferIo } from "../../src/cli/io";

describe("help", () => {
  it("lists every command in the top-level help", () => {
    for (const c of COMMANDS) expect(TOP_HELP).toContain(`  ${c.name}`);
  });

  it.each(COMMANDS.map((c) => [c.name]))("'%s --help' prints usage, examples and exit codes", async (name) => {
    const io = bufferIo();
    expect(await runCli([name, "--help"], io)).toBe(0);
    expect(io.out()).toContain("USAGE");
    expect(io.out()).toContain("EXAMPLES");
    expect(io.out()).toContain("EXIT CODES");
    expect(io.out()).toContain(`a2a-node ${name}`);
    expect(io.err()).toBe("");
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
