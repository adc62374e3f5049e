import type { FlagSpec } from "./flags";
import type { Io } from "./io";

/** What every command receives: its I/O and the resolved (not yet created) home folder. */
export interface CommandContext {
  io: Io;
  home: string;
}

/**
 * One CLI command. Each lives in its own file under commands/ and has the same parts: flags, help (with
 * EXAMPLES and EXIT CODES), and run. The registry lists them all in one place. A command with subcommands
 * is made by commandGroup() (command-group.ts) from one Subcommand per file.
 */
export interface Command {
  /** As typed, e.g. "init-pki" or "peers". */
  name: string;
  /** One line for the top-level help. */
  summary: string;
  /** Full help text, printed by `--help`. */
  help: string;
  /**
   * The flags run() parses, the very objects it hands to parseFlags: shell completion and the help test are
   * derived from them, so a flag cannot be added without being completed and checked for in the help.
   */
  flags: Record<string, FlagSpec>;
  /** For a command with subcommands (`pki issue`, `peers add`): each one, in the order of the help. */
  subcommands?: readonly Subcommand[];
  /** `COMMAND SUB --help`: that subcommand's own help, whole (undefined for a name that is none). */
  subcommandHelp?(name: string): string | undefined;
  run(argv: string[], ctx: CommandContext): Promise<number>;
}

/**
 * One subcommand (`pki token`, `peers add`), in its own file: its usage, a summary, its flags and their help,
 * examples, and run. commandGroup() builds the group's help and each subcommand's own help from these parts.
 */
export interface Subcommand {
  name: string;
  /** "pki issue NAME --out FILE [--san DNS_OR_IP]..." without the leading "a2a-node " (one line per form). */
  usage: string;
  /** What it does; may run over several lines (continuation lines may be indented: they are trimmed). */
  summary: string;
  /** The flags run() parses (the object it hands to parseFlags): completion and the help test read them. */
  flags: Record<string, FlagSpec>;
  /** Lines for the FLAGS section, each indented two spaces, or "" when it takes none beyond the shared ones. */
  flagHelp: string;
  /** Lines for the EXAMPLES section, each indented two spaces; comments (`# ...`) say what an example is for. */
  examples: string;
  run(argv: string[], ctx: CommandContext): Promise<number>;
}
