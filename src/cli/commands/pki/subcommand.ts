import type { CommandContext } from "../../command";
import type { FlagSpec } from "../../flags";

/**
 * One `a2a-node pki SUB` subcommand, in its own file: its usage line, a summary, the help of its flags, and
 * run. src/cli/commands/pki.ts lists them and builds the help from these parts.
 */
export interface PkiSubcommand {
  name: string;
  /** "pki issue NAME --out FILE [--san DNS_OR_IP]..." without the leading "a2a-node ". */
  usage: string;
  /** Said under SUBCOMMANDS; may run over several lines, each already indented. */
  summary: string;
  /** The flags run() parses (the object it hands to parseFlags): completion and the help test read them. */
  flagSpec: Record<string, FlagSpec>;
  /** Lines for the FLAGS section, or "" when it takes none beyond --json/--home. */
  flagHelp: string;
  run(argv: string[], ctx: CommandContext): Promise<number>;
}
