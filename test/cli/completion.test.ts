/**
 * `a2a-node completion bash|zsh|fish`: generated from the registry and the commands' flag specs, so every
 * command, subcommand and flag must appear; each script is run in its real shell to see what it completes (zsh
 * and fish where installed: the CI machine has both).
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { bufferIo } from "../../src/cli/io";
import { COMMANDS, runCli } from "../../src/cli/registry";
import type { Command } from "../../src/cli/command";
import { tempDir } from "../helpers/temp-dir";

let tmp: string;
let bash: string;
let zsh: string;
let fish: string;
let commands: Command[];

async function script(shell: string): Promise<string> {
  const io = bufferIo();
  expect(await runCli(["completion", shell], io)).toBe(0);
  expect(io.err()).toBe("");
  return io.out();
}

beforeAll(async () => {
  tmp = tempDir("a2a-completion-");
  bash = await script("bash");
  zsh = await script("zsh");
  fish = await script("fish");
  writeFileSync(join(tmp, "a2a-node.bash"), bash);
  writeFileSync(join(tmp, "_a2a-node"), zsh);
  writeFileSync(join(tmp, "a2a-node.fish"), fish);
  commands = await Promise.all(COMMANDS.map((c) => c.load()));
});

describe("completion scripts", () => {
  it("name every command, subcommand and flag of the registry, in both shells", () => {
    expect(commands.length).toBe(COMMANDS.length);
    for (const text of [bash, zsh])
      for (const c of commands) {
        expect(text).toContain(c.name);
        for (const flag of Object.keys(c.flags))
          expect(text, `${c.name} --${flag}`).toMatch(new RegExp(`'${c.name}'\\) .*--${flag}\\b`));
        for (const { name: sub, flags } of c.subcommands ?? []) {
          expect(text, `${c.name} ${sub}`).toMatch(new RegExp(`'${c.name}'\\) .*\\b${sub}\\b`));
          for (const flag of Object.keys(flags))
            expect(text, `${c.name} ${sub} --${flag}`).toMatch(new RegExp(`'${c.name} ${sub}'\\) .*--${flag}\\b`));
        }
      }
    // fish: one `complete` line per flag, under the condition of its command line.
    for (const c of commands) {
      expect(fish).toContain(`-a '${c.name}' -d `);
      for (const flag of Object.keys(c.flags))
        expect(fish, `${c.name} --${flag}`).toContain(`-n '__a2a_node_at \\'${c.name}\\'' -l ${flag}`);
      for (const { name: sub, flags } of c.subcommands ?? [])
        for (const flag of Object.keys(flags))
          expect(fish, `${c.name} ${sub} --${flag}`).toContain(`-n '__a2a_node_at \\'${c.name} ${sub}\\'' -l ${flag}`);
    }
  });

  it("the bash script is valid bash (bash -n)", () => {
    const p = Bun.spawnSync(["bash", "-n", join(tmp, "a2a-node.bash")], { stderr: "pipe" });
    expect(p.stderr.toString()).toBe("");
    expect(p.exitCode).toBe(0);
  });

  it("refuses other shells and a missing one", async () => {
    for (const args of [["completion"], ["completion", "tcsh"], ["completion", "bash", "zsh"]]) {
      const io = bufferIo();
      expect(await runCli(args, io)).toBe(2);
      expect(io.err()).toMatch(/see 'a2a-node completion( bash)? --help'/);
    }
  });
});

describe("what bash completes", () => {
  /** Runs the completion function for a command line (the cursor at its end) and returns COMPREPLY. */
  function complete(line: string, fakeBin?: string): string[] {
    const words = line.split(" ");
    const program = [
      `source ${JSON.stringify(join(tmp, "a2a-node.bash"))}`,
      `COMP_WORDS=(${words.map((w) => `'${w}'`).join(" ")})`,
      `COMP_CWORD=${words.length - 1}`,
      "_a2a_node",
      `printf '%s\\n' "\${COMPREPLY[@]}"`,
    ].join("\n");
    const p = Bun.spawnSync(["bash", "-c", program], {
      cwd: tmp,
      env: { PATH: fakeBin ? `${fakeBin}:/usr/bin:/bin` : "/usr/bin:/bin" },
      stdout: "pipe",
      stderr: "pipe",
    });
    expect(p.stderr.toString()).toBe("");
    return p.stdout.toString().split("\n").filter(Boolean).sort();
  }

  it("commands, subcommands and flags", () => {
    expect(complete("a2a-node se")).toEqual(["send", "serve", "service"]);
    expect(complete("a2a-node --home /tmp/h do")).toEqual(["doctor"]);
    expect(complete("a2a-node pki ")).toEqual([
      "--help",
      "export-crl",
      "import",
      "import-crl",
      "inspect",
      "issue",
      "list",
      "needs-renewal",
      "protect-ca-key",
      "renew",
      "revoke",
      "show",
      "sign",
      "spiffe-domain",
      "token",
    ]);
    expect(complete("a2a-node pki issue --")).toEqual([
      "--days",
      "--force",
      "--help",
      "--json",
      "--out",
      "--replace",
      "--san",
    ]);
    expect(complete("a2a-node service install --no")).toEqual(["--no-start"]);
    expect(complete("a2a-node completion ")).toEqual(["--help", "bash", "fish", "zsh"]);
  });

  it("skips flag values when finding the command and subcommand", () => {
    // "beta" is --agent's value, not a subcommand; send has none, so flags are offered.
    expect(complete("a2a-node send --agent beta --ta")).toEqual(["--task", "--task-id"]);
    expect(complete("a2a-node pki issue bob --san x --o")).toEqual(["--out"]);
  });

  it("values: a flag's fixed choices, files for FILE, folders for DIR", () => {
    expect(complete("a2a-node serve --executor ")).toEqual(["conformance", "echo", "hermes", "openai"]);
    expect(complete("a2a-node serve --log-level w")).toEqual(["warn"]);
    expect(complete("a2a-node init-pki --bundle a2a-node.ba")).toEqual(["a2a-node.bash"]);
    expect(complete("a2a-node --home _")).toEqual([]);
    expect(complete("a2a-node send --task ")).toEqual([]);
  });

  it("peer names after --agent, from 'a2a-node peers list --json'", () => {
    const bin = join(tmp, "bin");
    Bun.spawnSync(["mkdir", "-p", bin]);
    writeFileSync(
      join(bin, "a2a-node"),
      `#!/bin/bash\n[[ "$*" == "--home /h peers list --json" ]] && echo '[{"name":"beta","url":"https://b:9443"},{"name":"build-box","url":"https://c:9443"}]'\n`,
      { mode: 0o755 },
    );
    expect(complete("a2a-node --home /h send --agent b", bin)).toEqual(["beta", "build-box"]);
  });
});

const hasZsh = Bun.which("zsh");
describe.skipIf(!hasZsh)(`the zsh script${hasZsh ? "" : " (skipped: zsh is not installed on this machine)"}`, () => {
  it("is valid zsh (zsh -n) and registers itself with compinit", () => {
    const n = Bun.spawnSync(["zsh", "-n", join(tmp, "_a2a-node")], { stderr: "pipe" });
    expect(n.stderr.toString()).toBe("");
    expect(n.exitCode).toBe(0);
    const p = Bun.spawnSync(
      [
        "zsh",
        "-f",
        "-c",
        `autoload -U compinit && compinit -u -D && source ${JSON.stringify(join(tmp, "_a2a-node"))} && print -r -- $_comps[a2a-node]`,
      ],
      {
        stdout: "pipe",
        stderr: "pipe",
        env: { HOME: tmp, PATH: "/usr/bin:/bin" },
      },
    );
    expect(p.stderr.toString()).toBe("");
    expect(p.stdout.toString().trim()).toBe("_a2a_node");
  });

  /**
   * Runs the zsh function for a command line with compsys's builtins replaced by ones that print what they
   * were given (zsh itself filters the candidates by the typed prefix, so all of them are offered).
   */
  function offered(line: string): string[] {
    const program = [
      "compdef() { : }",
      `source ${JSON.stringify(join(tmp, "_a2a-node"))}`,
      'compadd() { [[ $1 == -- ]] && shift; print -l -- "$@" }',
      '_describe() { local -a described; described=("${(@P)4}"); print -l -- "${described[@]%%:*}" }',
      '_files() { print -- "(files$*)" }',
      'words=(${=LINE}); [[ $LINE == *" " ]] && words+=(""); CURRENT=${#words}',
      "_a2a_node",
    ].join("\n");
    const p = Bun.spawnSync(["zsh", "-f", "-c", program], {
      env: { LINE: line, PATH: "/usr/bin:/bin" },
      stdout: "pipe",
      stderr: "pipe",
    });
    expect(p.stderr.toString()).toBe("");
    return p.stdout.toString().split("\n").filter(Boolean).sort();
  }

  it("offers commands, subcommands, flags and values as the bash script does", () => {
    expect(offered("a2a-node ")).toEqual([...COMMANDS.map((c) => c.name), "--help", "--home", "--version"].sort());
    expect(offered("a2a-node pki ")).toEqual([
      "--help",
      "export-crl",
      "import",
      "import-crl",
      "inspect",
      "issue",
      "list",
      "needs-renewal",
      "protect-ca-key",
      "renew",
      "revoke",
      "show",
      "sign",
      "spiffe-domain",
      "token",
    ]);
    expect(offered("a2a-node pki issue --")).toEqual([
      "--days",
      "--force",
      "--help",
      "--json",
      "--out",
      "--replace",
      "--san",
    ]);
    // zsh offers every flag of `send` (it filters by the typed prefix itself): the registry's, and --help.
    const send = commands.find((c) => c.name === "send")!;
    const sendFlags = [...Object.keys(send.flags ?? {}).map((f) => `--${f}`), "--help"].sort();
    expect(sendFlags).toEqual(
      expect.arrayContaining(["--agent", "--task", "--task-id", "--wait", "--peer-answer-timeout"]),
    );
    expect(offered("a2a-node --home /h send --agent beta --ta")).toEqual(sendFlags);
    expect(offered("a2a-node serve --executor ")).toEqual(["conformance", "echo", "hermes", "openai"]);
    expect(offered("a2a-node init-pki --bundle ")).toEqual(["(files)"]);
    expect(offered("a2a-node service install --root ")).toEqual(["(files-/)"]);
  });
});

const hasFish = Bun.which("fish");
describe.skipIf(!hasFish)(
  `the fish script${hasFish ? "" : " (skipped: fish is not installed on this machine)"}`,
  () => {
    /** What fish offers for a command line (the cursor at its end), by `complete -C` with the script loaded. */
    function offered(line: string, fakeBin?: string): string[] {
      const p = Bun.spawnSync(
        [
          "fish",
          "--no-config",
          "-c",
          `source ${JSON.stringify(join(tmp, "a2a-node.fish"))}; complete -C ${JSON.stringify(line)}`,
        ],
        {
          cwd: tmp,
          env: { HOME: tmp, PATH: fakeBin ? `${fakeBin}:/usr/bin:/bin` : "/usr/bin:/bin" },
          stdout: "pipe",
          stderr: "pipe",
        },
      );
      expect(p.stderr.toString()).toBe("");
      expect(p.exitCode).toBe(0);
      // Each candidate is printed as "word<TAB>description": the words are what matter here.
      return p.stdout
        .toString()
        .split("\n")
        .filter(Boolean)
        .map((l) => l.split("\t")[0])
        .sort();
    }

    it("is valid fish (fish --no-execute)", () => {
      const p = Bun.spawnSync(["fish", "--no-execute", join(tmp, "a2a-node.fish")], { stderr: "pipe" });
      expect(p.stderr.toString()).toBe("");
      expect(p.exitCode).toBe(0);
    });

    it("offers commands, subcommands, flags and values as the bash script does", () => {
      expect(offered("a2a-node se")).toEqual(["send", "serve", "service"]);
      expect(offered("a2a-node --home /tmp/h do")).toEqual(["doctor"]);
      expect(offered("a2a-node pki ")).toEqual([
        "export-crl",
        "import",
        "import-crl",
        "inspect",
        "issue",
        "list",
        "needs-renewal",
        "protect-ca-key",
        "renew",
        "revoke",
        "show",
        "sign",
        "spiffe-domain",
        "token",
      ]);
      expect(offered("a2a-node pki issue --")).toEqual([
        "--days",
        "--force",
        "--help",
        "--home",
        "--json",
        "--out",
        "--replace",
        "--san",
      ]);
      expect(offered("a2a-node send --agent beta --ta")).toEqual(["--task", "--task-id"]);
      expect(offered("a2a-node pki issue bob --san x --o")).toEqual(["--out"]);
      expect(offered("a2a-node serve --executor ")).toEqual(["conformance", "echo", "hermes", "openai"]);
      expect(offered("a2a-node init-pki --bundle a2a-node.ba")).toEqual(["a2a-node.bash"]);
      expect(offered("a2a-node completion ")).toEqual(["bash", "fish", "zsh"]);
    });

    it("peer names after --agent, from 'a2a-node peers list --json'", () => {
      const bin = join(tmp, "fish-bin");
      Bun.spawnSync(["mkdir", "-p", bin]);
      writeFileSync(
        join(bin, "a2a-node"),
        `#!/bin/bash\n[[ "$*" == "--home /h peers list --json" ]] && echo '[{"name":"beta","url":"https://b:9443"},{"name":"build-box","url":"https://c:9443"}]'\n`,
        { mode: 0o755 },
      );
      expect(offered("a2a-node --home /h send --agent b", bin)).toEqual(["beta", "build-box"]);
    });
  },
);
