import type { FlagSpec } from "./flags";
import type { Io } from "./io";

/** What every command receives: its I/O and the resolved (not yet created) home folder. */
export interface CommandContext {
  io: Io;
  home: string;
}

/**
 * One CLI command. Each lives in its own file under commands/ and has the same parts: flags, help (with
 * EXAMPLES and EXIT CODES), and run. The registry lists them all in one place.
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
  /** For a command with subcommands (`pki issue`, `peers add`): each one's flags, in the order of the help. */
  subcommands?: Record<string, Record<string, FlagSpec>>;
  run(argv: string[], ctx: CommandContext): Promise<number>;
}
