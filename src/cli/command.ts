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
  run(argv: string[], ctx: CommandContext): Promise<number>;
}
