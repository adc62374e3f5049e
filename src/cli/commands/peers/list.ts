import type { CommandContext, Subcommand } from "../../command";
import { openPeers } from "../../client-session";
import { ExitCode, UsageError } from "../../errors";
import { parseFlags } from "../../flags";
import { describeReach } from "./outside";

const FLAGS = { json: { type: "boolean" } } as const;

async function listPeers(args: string[], { io, home }: CommandContext): Promise<number> {
  const { flags, positionals } = parseFlags(args, FLAGS);
  if (positionals.length) throw new UsageError(`peers list takes no arguments (got '${positionals[0]}')`);
  const { peers, close } = openPeers(home);
  try {
    const all = peers.list();
    if (flags.json) io.stdout.write(`${JSON.stringify(all)}\n`);
    else if (all.length === 0) io.stdout.write("no peers yet: add one with 'a2a-node peers add NAME URL'\n");
    else {
      const w = Math.max(4, ...all.map((p) => p.name.length));
      const u = Math.max(3, ...all.map((p) => p.url.length));
      io.stdout.write(`${"NAME".padEnd(w)}  ${"URL".padEnd(u)}  REACHED\n`);
      for (const p of all) io.stdout.write(`${p.name.padEnd(w)}  ${p.url.padEnd(u)}  ${describeReach(p)}\n`);
    }
  } finally {
    close();
  }
  return ExitCode.Ok;
}

export const list: Subcommand = {
  name: "list",
  usage: `peers list [--json]`,
  summary: `the known peers, and how each is reached (never a secret)`,
  flags: FLAGS,
  flagHelp: ``,
  examples: `  a2a-node peers list --json`,
  run: listPeers,
};
