import type { Command, CommandContext } from "../command";
import { ExitCode, UsageError } from "../errors";
import { parseFlags } from "../flags";

const flags = {} as const;

const help = `USAGE
  a2a-node completion bash
  a2a-node completion zsh

  The script completes every command, subcommand and flag, the values of flags that take a file, a folder
  or one of a few choices, and peer names after --agent. It is generated from the binary's own command
  list, so it matches the version that printed it: print it again after an upgrade.

EXAMPLES
  # bash: this shell, then every shell
  source <(a2a-node completion bash)
  a2a-node completion bash | sudo tee /etc/bash_completion.d/a2a-node > /dev/null

  # zsh: this shell, then every shell (a folder on $fpath, before compinit runs)
  source <(a2a-node completion zsh)
  a2a-node completion zsh > "\${fpath[1]}/_a2a-node"

EXIT CODES
  0  printed
  2  usage error (no shell, or one other than bash and zsh)
`;

async function run(argv: string[], ctx: CommandContext): Promise<number> {
  const { positionals } = parseFlags(argv, flags);
  const [shell, ...extra] = positionals;
  if (shell === undefined) throw new UsageError("completion needs a shell: bash or zsh");
  if (extra.length) throw new UsageError(`unexpected argument '${extra[0]}'`);
  if (shell !== "bash" && shell !== "zsh") throw new UsageError(`no completion for '${shell}' (bash or zsh)`);
  const [{ COMMANDS }, { bashCompletion, zshCompletion }] = await Promise.all([import("../registry"), import("../completion")]);
  const specs = await Promise.all(
    COMMANDS.map(async (entry) => {
      const c = await entry.load();
      return { name: c.name, summary: c.summary, flags: c.flags, subcommands: c.subcommands };
    }),
  );
  ctx.io.stdout.write(shell === "bash" ? bashCompletion(specs) : zshCompletion(specs));
  return ExitCode.Ok;
}

export const completionCommand: Command = {
  name: "completion",
  summary: "print a shell completion script: completion bash|zsh",
  help,
  flags,
  subcommands: { bash: {}, zsh: {} },
  run,
};
