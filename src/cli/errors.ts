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
