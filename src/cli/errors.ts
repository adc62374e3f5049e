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

/**
 * What each exit code means, in the words of the top-level help. Keyed by ExitCode's names, so a new code
 * without a meaning here does not compile, and the help cannot leave one out.
 */
export const EXIT_CODE_MEANINGS: Record<keyof typeof ExitCode, string> = {
  Ok: "success",
  Failure: "failure",
  Usage: "usage error",
  NotFound: "not found",
  Unreachable: "peer unreachable or refused",
  Timeout: "timed out (the task goes on)",
  NeedsInput: "the task waits for input",
};

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
