/**
 * Errors a command reports to a person. The message is one line; `hint` is the next step to take.
 * Exit codes are part of the CLI contract (documented in every command's help):
 *   0 success, 1 failure (task failed, remote error), 2 usage error, 3 not found, 4 unreachable/refused,
 *   5 timed out waiting, 6 the task waits for input.
 */
export const ExitCode = {
  Ok: 0,
  Failure: 1,
  Usage: 2,
  NotFound: 3,
  Unreachable: 4,
  Timeout: 5,
  NeedsInput: 6,
} as const;

export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode: number = ExitCode.Failure,
    readonly hint?: string,
  ) {
    super(message);
    this.name = "CliError";
  }
}

/** A mistake in how the command was called; the runner adds "see 'a2a-node CMD --help'". */
export class UsageError extends CliError {
  constructor(message: string) {
    super(message, ExitCode.Usage);
    this.name = "UsageError";
  }
}
