import type { CommandContext, Subcommand } from "../../command";
import { openPeers } from "../../client-session";
import { CliError, ExitCode, UsageError } from "../../errors";
import { parseFlags } from "../../flags";

const FLAGS = { json: { type: "boolean" } } as const;

async function removePeer(args: string[], { io, home }: CommandContext): Promise<number> {
  const { flags, positionals } = parseFlags(args, FLAGS);
  if (positionals.length !== 1) throw new UsageError("peers remove needs exactly one NAME");
  const { peers, close } = openPeers(home);
  try {
    const typed = positionals[0];
    const name = peers.get(typed) ? typed : typed.toLowerCase();
    if (!peers.remove(name))
      throw new CliError(`no peer named '${typed}'`, ExitCode.NotFound, "see 'a2a-node peers list'");
    io.stdout.write(flags.json ? `${JSON.stringify({ removed: name })}\n` : `removed peer ${name}\n`);
  } finally {
    close();
  }
  return ExitCode.Ok;
}

export const remove: Subcommand = {
  name: "remove",
  usage: `peers remove NAME [--json]`,
  summary: `forget a peer`,
  flags: FLAGS,
  flagHelp: ``,
  examples: `  a2a-node peers remove beta`,
  run: removePeer,
};
