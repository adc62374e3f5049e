import { TOKEN_CALLER_PREFIX } from "../../../auth/caller-tokens";
import { CallerTokenExistsError } from "../../../store/sqlite-caller-tokens";
import type { CommandContext, Subcommand } from "../../command";
import { CliError, ExitCode, UsageError } from "../../errors";
import { parseFlags } from "../../flags";
import { callerName, openTokens } from "./open";

const ADD_FLAGS = { replace: { type: "boolean" }, json: { type: "boolean" } } as const;

/** `tokens add NAME`: a new token for caller NAME, printed this once (only its hash is kept). */
async function addToken(args: string[], ctx: CommandContext): Promise<number> {
  const { flags, positionals } = parseFlags(args, ADD_FLAGS);
  if (positionals.length > 1) throw new UsageError(`tokens add takes one NAME (got '${positionals[1]}' too)`);
  const name = callerName(positionals[0]);
  const { tokens, close } = openTokens(ctx.home);
  try {
    const { token, created } = tokens.add(name, { replace: flags.replace });
    const caller = `${TOKEN_CALLER_PREFIX}${name}`;
    if (flags.json) ctx.io.stdout.write(`${JSON.stringify({ name, caller, token, createdAt: created.createdAt })}\n`);
    else {
      ctx.io.stdout.write(`${token}\n`);
      ctx.io.stderr.write(
        `token for caller '${caller}' made; it is shown this once (the node keeps only its SHA-256): give it to ${name} to send as 'Authorization: Bearer TOKEN' to the token listener (token_port)\n`,
      );
    }
  } catch (err) {
    if (err instanceof CallerTokenExistsError)
      throw new CliError(
        err.message,
        ExitCode.Failure,
        `pass --replace to make a new one (the old one stops working), or 'a2a-node tokens revoke ${name}'`,
      );
    throw err;
  } finally {
    close();
  }
  return ExitCode.Ok;
}

export const add: Subcommand = {
  name: "add",
  usage: "tokens add NAME [--replace] [--json]",
  summary: `make a token for caller NAME and print it (on stdout, alone, for a pipe or a file)`,
  flags: ADD_FLAGS,
  flagHelp: `  --replace   make a new token for a NAME that has one (the old one stops working)`,
  examples: `  a2a-node tokens add hermes > hermes.token && chmod 600 hermes.token`,
  run: addToken,
};
