import { TOKEN_CALLER_PREFIX } from "../../../auth/caller-tokens";
import type { CommandContext, Subcommand } from "../../command";
import { ExitCode, UsageError } from "../../errors";
import { parseFlags } from "../../flags";
import { openTokens } from "./open";

const LIST_FLAGS = { json: { type: "boolean" } } as const;

/** `tokens list`: who holds a token, and since when (the tokens themselves are not kept, so never shown). */
async function listTokens(args: string[], { io, home }: CommandContext): Promise<number> {
  const { flags, positionals } = parseFlags(args, LIST_FLAGS);
  if (positionals.length) throw new UsageError(`tokens list takes no arguments (got '${positionals[0]}')`);
  const { tokens, close } = openTokens(home);
  try {
    const all = tokens.list().map((t) => ({ ...t, caller: `${TOKEN_CALLER_PREFIX}${t.name}` }));
    if (flags.json) io.stdout.write(`${JSON.stringify(all)}\n`);
    else if (all.length === 0) io.stdout.write("no caller tokens yet: make one with 'a2a-node tokens add NAME'\n");
    else {
      const w = Math.max(4, ...all.map((t) => t.name.length));
      io.stdout.write(`${"NAME".padEnd(w)}  CREATED\n`);
      for (const t of all) io.stdout.write(`${t.name.padEnd(w)}  ${t.createdAt}\n`);
    }
  } finally {
    close();
  }
  return ExitCode.Ok;
}

export const list: Subcommand = {
  name: "list",
  usage: "tokens list [--json]",
  summary: `the callers that hold a token, and when it was made (never the tokens)`,
  flags: LIST_FLAGS,
  flagHelp: ``,
  examples: `  a2a-node tokens list`,
  run: listTokens,
};
