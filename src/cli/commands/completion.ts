import type { Command, CommandContext, Subcommand } from "../command";
import { commandGroup } from "../command-group";
import { ExitCode, UsageError } from "../errors";
import { parseFlags } from "../flags";
import type { CompletionSpec } from "../completion";

const SHELLS = {
  bash: `  # bash: this shell, then every shell
  source <(a2a-node completion bash)
  a2a-node completion bash | sudo tee /etc/bash_completion.d/a2a-node > /dev/null`,
  zsh: `  # zsh: this shell, then every shell (a folder on $fpath, before compinit runs)
  source <(a2a-node completion zsh)
  a2a-node completion zsh > "\${fpath[1]}/_a2a-node"`,
  fish: `  # fish: this shell, then every shell
  a2a-node completion fish | source
  a2a-node completion fish > ~/.config/fish/completions/a2a-node.fish`,
} as const;

/** The registry's commands as the script generators read them: each command's flags, and each subcommand's. */
async function specs(): Promise<CompletionSpec[]> {
  const { COMMANDS } = await import("../registry");
  return Promise.all(
    COMMANDS.map(async (entry) => {
      const c = await entry.load();
      const subcommands = c.subcommands && Object.fromEntries(c.subcommands.map((s) => [s.name, s.flags]));
      return { name: c.name, summary: c.summary, flags: c.flags, subcommands };
    }),
  );
}

function shell(name: keyof typeof SHELLS): Subcommand {
  return {
    name,
    usage: `completion ${name}`,
    summary: `print the ${name} completion script`,
    flags: {},
    flagHelp: "",
    examples: SHELLS[name],
    async run(argv: string[], ctx: CommandContext) {
      const { positionals } = parseFlags(argv, {});
      if (positionals.length) throw new UsageError(`unexpected argument '${positionals[0]}'`);
      const scripts = await import("../completion");
      const generate = { bash: scripts.bashCompletion, zsh: scripts.zshCompletion, fish: scripts.fishCompletion }[name];
      ctx.io.stdout.write(generate(await specs()));
      return ExitCode.Ok;
    },
  };
}

export const completionCommand: Command = commandGroup({
  name: "completion",
  summary: "print a shell completion script: completion bash|zsh|fish",
  intro: `The script completes every command, subcommand and flag, the values of flags that take a file, a folder
or one of a few choices, and peer names after --agent. It is generated from the binary's own command
list, so it matches the version that printed it: print it again after an upgrade.`,
  subcommands: [shell("bash"), shell("zsh"), shell("fish")],
  exitCodes: `  0  printed
  2  usage error (no shell, or one other than bash, zsh and fish)`,
});
