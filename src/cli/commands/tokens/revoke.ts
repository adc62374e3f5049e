import type { CommandContext, Subcommand } from "../../command";
import { CliError, ExitCode, UsageError } from "../../errors";
import { parseFlags } from "../../flags";
import { callerName, openTokens } from "./open";
import { tellRunningServe, toldLine } from "../../tell-serve";

const REVOKE_FLAGS = { json: { type: "boolean" } } as const;

/**
 * `tokens revoke NAME`: the token stops working at its next request (the listener reads the table each time),
 * and the running serve, told with SIGHUP, closes the connections it was used on (its open streams end).
 */
async function revokeToken(args: string[], { io, home }: CommandContext): Promise<number> {
  const { flags, positionals } = parseFlags(args, REVOKE_FLAGS);
  if (positionals.length > 1) throw new UsageError(`tokens revoke takes one NAME (got '${positionals[1]}' too)`);
  const name = callerName(positionals[0]);
  const { tokens, close } = openTokens(home);
  try {
    if (!tokens.revoke(name))
      throw new CliError(`no token for '${name}'`, ExitCode.NotFound, "see 'a2a-node tokens list'");
    const told = tellRunningServe(home);
    io.stdout.write(
      flags.json
        ? `${JSON.stringify({ revoked: name, reloadedPid: told.told ? told.pid : null })}\n`
        : `revoked the token of '${name}': its next request is refused (401)\n${toldLine(told, "it closes the connections the token was used on, and their streams")}\n`,
    );
  } finally {
    close();
  }
  return ExitCode.Ok;
}

export const revoke: Subcommand = {
  name: "revoke",
  usage: "tokens revoke NAME [--json]",
  summary: `forget NAME's token: its next request is answered 401, and a running serve is told
           (SIGHUP) to close the connections it was used on, its open streams with them`,
  flags: REVOKE_FLAGS,
  flagHelp: ``,
  examples: `  a2a-node tokens revoke hermes`,
  run: revokeToken,
};
