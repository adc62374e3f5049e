/**
 * Errors a command reports to a person. The message is one line; `hint` is the next step to take.
 * Exit codes are part of the CLI contract (documented in every command's help and the README):
 *   0 success (a waited-for task completed), 1 failure (the task failed or was rejected, a remote error),
 *   2 usage error, 3 not found, 4 cannot connect (nothing answers, not TLS, unknown host), 5 timed out
 *   waiting, 6 the task waits for input, 7 the task was canceled, 8 refused (the TLS handshake, a
 *   certificate, a name or a pin), 130 interrupted (Ctrl-C) while waiting; the task goes on.
 */
export const ExitCode = {
  Ok: 0,
  Failure: 1,
  Usage: 2,
  NotFound: 3,
  Unreachable: 4,
  Timeout: 5,
  NeedsInput: 6,
  Canceled: 7,
  Refused: 8,
  Interrupted: 130,
} as const;

/**
 * What each exit code means, in the words of the top-level help. Keyed by ExitCode's names, so a new code
 * without a meaning here does not compile, and the help cannot leave one out.
 */
export const EXIT_CODE_MEANINGS: Record<keyof typeof ExitCode, string> = {
  Ok: "success (a waited-for task completed)",
  Failure: "failure (the task failed or was rejected)",
  Usage: "usage error",
  NotFound: "not found",
  Unreachable: "cannot connect",
  Timeout: "timed out waiting (the task goes on)",
  NeedsInput: "the task waits for input (or for an authorization)",
  Canceled: "the task was canceled",
  Refused: "refused (TLS handshake, certificate, name or pin)",
  Interrupted: "interrupted (Ctrl-C) while waiting",
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
